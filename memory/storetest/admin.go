package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
)

func testAuditListings(t *testing.T, open Opener) {
	st, _ := open(t)
	ctx := t.Context()
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i, e := range []memory.Execution{
		{ID: "r1", Principal: "alice", Session: "s1", Status: "ok", Code: "1"},
		{ID: "r2", Principal: "bob", Session: "s2", Status: "error", Code: "2"},
		{ID: "r3", Principal: "alice", Session: "s1", Status: "error", Code: "3"},
	} {
		e.Language, e.StartedAt = "javascript", base.Add(time.Duration(i)*time.Minute)
		if err := st.RecordExecution(ctx, e); err != nil {
			t.Fatal(err)
		}
		if err := st.RecordToolCalls(ctx, memory.ToolCall{ExecutionID: e.ID, Tool: "util.echo", Status: e.Status, StartedAt: e.StartedAt}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(es []memory.Execution) string {
		var out []string
		for _, e := range es {
			out = append(out, e.ID)
		}
		return fmt.Sprint(out)
	}
	alice := "alice"
	for _, tt := range []struct {
		name string
		q    memory.ExecutionQuery
		want string
	}{
		{"all, newest first", memory.ExecutionQuery{}, "[r3 r2 r1]"},
		{"principal", memory.ExecutionQuery{Principal: &alice}, "[r3 r1]"},
		{"status", memory.ExecutionQuery{Status: "error"}, "[r3 r2]"},
		{"session", memory.ExecutionQuery{Session: memory.SessionHash("s2")}, "[r2]"},
		{"code hash", memory.ExecutionQuery{CodeHash: memory.Hash([]byte("2"))}, "[r2]"},
		{"since", memory.ExecutionQuery{Since: base.Add(time.Minute)}, "[r3 r2]"},
		{"until", memory.ExecutionQuery{Until: base.Add(time.Minute)}, "[r1]"},
		{"page", memory.ExecutionQuery{Before: &memory.Execution{ID: "r3", StartedAt: base.Add(2 * time.Minute)}, Limit: 1}, "[r2]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := st.ListExecutions(ctx, tt.q)
			if err != nil || ids(got) != tt.want {
				t.Fatalf("executions = %s %v, want %s", ids(got), err, tt.want)
			}
		})
	}
	withCode, err := st.ListExecutions(ctx, memory.ExecutionQuery{WithCode: true, Limit: 1})
	if err != nil || withCode[0].Code != "3" {
		t.Fatalf("with code: %+v %v", withCode, err)
	}
	if noCode, _ := st.ListExecutions(ctx, memory.ExecutionQuery{Limit: 1}); noCode[0].Code != "" {
		t.Fatalf("a listing carries code by default: %+v", noCode)
	}
	calls, err := st.ListToolCalls(ctx, memory.ToolCallQuery{Status: "error"})
	if err != nil || len(calls) != 2 || calls[0].ExecutionID != "r3" || calls[1].ExecutionID != "r2" {
		t.Fatalf("tool calls: %+v %v", calls, err)
	}
	if calls, err = st.ListToolCalls(ctx, memory.ToolCallQuery{Tool: "nope"}); err != nil || len(calls) != 0 || calls == nil {
		t.Fatalf("no tool calls: %#v %v", calls, err)
	}
}

func testResultListings(t *testing.T, open Opener) {
	st, _ := open(t)
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	var ids []string
	for i, sess := range []string{"s1", "s2", "s1"} {
		info, err := st.PutResult(alice, memory.PutResultInput{Session: sess, Data: []byte(fmt.Sprintf(`{"n": %d, "pad": "0123456789"}`, i))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	info, err := st.StatResult(alice, ids[0])
	if err != nil || info.Size != 29 || info.Session != "s1" {
		t.Fatalf("stat: %+v %v", info, err)
	}
	_, err = st.StatResult(bob, ids[0])
	wantCode(t, err, memory.ErrNotFound)
	for _, tt := range []struct {
		off, n int64
		want   string
	}{{0, 5, `{"n":`}, {24, -1, `789"}`}, {27, 10, `"}`}, {100, 5, ``}} {
		_, part, err := st.ReadResult(alice, ids[0], tt.off, tt.n)
		if err != nil || string(part) != tt.want {
			t.Fatalf("read [%d, +%d) = %q %v, want %q", tt.off, tt.n, part, err, tt.want)
		}
	}
	_, _, err = st.ReadResult(alice, ids[0], -1, 1)
	wantCode(t, err, memory.ErrInvalid)
	all, err := st.ListResults(alice, "", 0)
	if err != nil || len(all) != 3 {
		t.Fatalf("list: %+v %v", all, err)
	}
	s1, err := st.ListResults(alice, "s1", 1)
	if err != nil || len(s1) != 1 || s1[0].Session != "s1" {
		t.Fatalf("list s1: %+v %v", s1, err)
	}
	if none, err := st.ListResults(bob, "", 10); err != nil || len(none) != 0 || none == nil {
		t.Fatalf("bob lists alice's results: %#v %v", none, err)
	}
	wantCode(t, st.DeleteResult(bob, ids[1]), memory.ErrNotFound)
	if err := st.DeleteResult(alice, ids[1]); err != nil {
		t.Fatal(err)
	}
	_, _, err = st.GetResult(alice, ids[1])
	wantCode(t, err, memory.ErrNotFound)
}

// testPrune: with the default retention, audit records older than 30 days
// go (with their tool calls), recent ones, results and memories stay.
func testPrune(t *testing.T, open Opener) {
	st, _ := open(t)
	ctx := t.Context()
	old := time.Now().Add(-40 * 24 * time.Hour)
	for _, e := range []memory.Execution{
		{ID: "old", Principal: "alice", Status: "ok", Language: "javascript", StartedAt: old},
		{ID: "new", Principal: "alice", Status: "ok", Language: "javascript"},
	} {
		if err := st.RecordExecution(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.RecordToolCalls(ctx, memory.ToolCall{ExecutionID: "old", Tool: "t", Status: "ok", StartedAt: old}); err != nil {
		t.Fatal(err)
	}
	alice := as(ctx, "alice")
	if _, err := st.PutResult(alice, memory.PutResultInput{Data: []byte(`1`)}); err != nil {
		t.Fatal(err)
	}
	remember(t, st, alice, memory.RememberInput{Content: "an old event", Layer: memory.Episodic, OccurredAt: &old})
	rep, err := st.Prune(ctx)
	if err != nil || rep != (memory.PruneReport{Executions: 1}) {
		t.Fatalf("prune = %+v %v", rep, err)
	}
	_, _, err = st.GetExecution(ctx, "old")
	wantCode(t, err, memory.ErrNotFound)
	if calls, _ := st.ListToolCalls(ctx, memory.ToolCallQuery{}); len(calls) != 0 {
		t.Fatalf("the pruned run's tool calls stay: %+v", calls)
	}
	if rep, err = st.Prune(ctx); err != nil || rep != (memory.PruneReport{}) {
		t.Fatalf("second prune = %+v %v", rep, err)
	}
}

func testStats(t *testing.T, open Opener) {
	st, _ := open(t)
	ctx := t.Context()
	alice, bob := as(ctx, "alice"), as(ctx, "bob")
	remember(t, st, alice, memory.RememberInput{Content: "a"}, memory.RememberInput{Content: "b", Layer: memory.Episodic})
	remember(t, st, bob, memory.RememberInput{Content: "c"})
	if _, err := st.Relate(alice, memory.RelateInput{From: "x", To: "y", Type: "z"}); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordExecution(ctx, memory.Execution{ID: "r", Principal: "carol", Status: "ok", Language: "javascript"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutResult(alice, memory.PutResultInput{Data: []byte(`[1, 2, 3]`)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.WriteFile(bob, "a.txt", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SaveSkill(alice, memory.Skill{Name: "s", Description: "d", Code: "1"}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Principals != 3 || got.Memories != 3 || got.Layers[memory.Semantic] != 2 || got.Layers[memory.Episodic] != 1 ||
		got.Entities != 2 || got.Relations != 1 || got.Executions != 1 || got.Results != 1 || got.ResultBytes == 0 ||
		got.Files != 1 || got.FileBytesRaw != 5 || got.Skills != 1 || got.PublishedSkills != 0 || got.SchemaVersion == 0 ||
		got.Path == "" || got.FileBytes == 0 || got.Embedder.Name == "" || got.Embedder.Error != "" {
		t.Fatalf("stats = %+v", got)
	}
}

// testReindex: a reindex with an embedder of other dimensions rebuilds
// every vector; recall works on; an instance still configured with the
// old embedder refuses memory operations, saying why.
func testReindex(t *testing.T, open Opener) {
	st, second := open(t)
	alice := as(t.Context(), "alice")
	remember(t, st, alice,
		memory.RememberInput{Content: "The backup job runs nightly at 2am"},
		memory.RememberInput{Content: "Coffee beans are in the left cupboard"})
	_, err := st.Reindex(t.Context(), nil)
	wantCode(t, err, memory.ErrInvalid)
	e := memory.NewHashEmbedder(128)
	rep, err := st.Reindex(t.Context(), e)
	if err != nil || rep.Memories != 2 || rep.Dimensions != 128 || rep.Previous == "" {
		t.Fatalf("reindex = %+v %v", rep, err)
	}
	status, err := st.EmbedderStatus(t.Context())
	if err != nil || status.Dimensions != 128 || status.StoredDimensions != 128 {
		t.Fatalf("status after reindex = %+v %v", status, err)
	}
	res, err := st.Recall(alice, memory.RecallInput{Query: "when does the backup run", Mode: memory.ModeVector, Limit: 1})
	if err != nil || len(res.Results) != 1 || res.Results[0].Content != "The backup job runs nightly at 2am" {
		t.Fatalf("recall after reindex = %+v %v", res.Results, err)
	}
	if second == nil {
		return
	}
	other := second() // configured with the default embedder
	if _, err := other.EmbedderStatus(t.Context()); !errors.Is(err, memory.ErrEmbedderMismatch) {
		t.Fatalf("status of a mismatched instance: %v", err)
	}
	_, err = other.Recall(alice, memory.RecallInput{Query: "backup"})
	wantCode(t, err, memory.ErrEmbedderMismatch)
}

// testUpgradeOffline: a store whose vectors the previous offline
// default made (HashEmbedder at 384 dimensions) is re-embedded when an
// instance with the default embedder opens it, and recalls in other
// words at once.
func testUpgradeOffline(t *testing.T, open Opener) {
	st, second := open(t)
	if second == nil {
		t.Skip("no second instance")
	}
	alice := as(t.Context(), "alice")
	remember(t, st, alice,
		memory.RememberInput{Content: "Dogs are allowed in the office on Fridays"},
		memory.RememberInput{Content: "The backup job runs nightly at 2am"})
	if _, err := st.Reindex(t.Context(), memory.NewHashEmbedder(memory.DefaultDimensions)); err != nil {
		t.Fatal(err)
	}
	other := second() // configured with the default embedder
	status, err := other.EmbedderStatus(t.Context())
	want := memory.NewWordsEmbedder()
	if err != nil || status.Stored != want.Name() || status.StoredDimensions != want.Dimensions() {
		t.Fatalf("status after opening with the default embedder = %+v %v, want the vectors re-embedded by %s", status, err, want.Name())
	}
	res, err := other.Recall(alice, memory.RecallInput{Query: "can I bring my puppy to work", Mode: memory.ModeVector, Limit: 1})
	if err != nil || len(res.Results) != 1 || res.Results[0].Content != "Dogs are allowed in the office on Fridays" {
		t.Fatalf("recall after the upgrade = %+v %v", res.Results, err)
	}
}

// Fill stores a little of everything an export carries, for alice and
// bob, and returns the id of the memory that consolidation kept.
func Fill(t *testing.T, st Backend) int64 {
	t.Helper()
	ctx := t.Context()
	alice, bob := as(ctx, "alice"), as(ctx, "bob")
	ms := remember(t, st, alice,
		memory.RememberInput{Content: "The on-call rota is in the ops wiki", Tags: []string{"oncall"}, Entities: []string{"ops"}, Importance: ptr(0.9)},
		memory.RememberInput{Content: "The on-call rota is in the ops wiki", Tags: []string{"wiki"}},
		memory.RememberInput{Content: "Quarterly planning starts in March", Layer: memory.Episodic},
	)
	remember(t, st, bob, memory.RememberInput{Content: "Bob keeps his notes in notes.md"})
	if res, err := st.Consolidate(alice, memory.ConsolidateInput{Threshold: 0.7}); err != nil || res.Merged != 1 {
		t.Fatalf("consolidate: %+v %v", res, err)
	}
	if _, err := st.Relate(alice, memory.RelateInput{From: "ops", To: "pagerduty", Type: "uses"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SaveSkill(alice, memory.Skill{Name: "rota", Description: "Who is on call", Code: "return 'dana'"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PublishSkill(alice, "rota"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.WriteFile(bob, "notes.md", []byte("# notes\n")); err != nil {
		t.Fatal(err)
	}
	return ms[0].ID
}

// testExportImport: an export imports into an empty store with every
// record, recall and the merge provenance working there; importing it
// again changes nothing; the copy exports the same records.
func testExportImport(t *testing.T, open Opener) {
	src, _ := open(t)
	dst, _ := open(t)
	ctx := t.Context()
	Fill(t, src)
	var buf bytes.Buffer
	exp, err := src.Export(ctx, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if want := (memory.ExportReport{Memories: 3, Entities: 2, Relations: 1, Skills: 1, PublishedSkills: 1, Files: 1}); exp != want {
		t.Fatalf("exported %+v, want %+v", exp, want)
	}
	data := buf.Bytes()
	rep, err := dst.Import(ctx, bytes.NewReader(data))
	if err != nil || rep.Imported != exp || rep.Skipped != 0 {
		t.Fatalf("import = %+v %v", rep, err)
	}
	alice, bob := as(ctx, "alice"), as(ctx, "bob")
	res, err := dst.Recall(alice, memory.RecallInput{Query: "who is on call, the rota", Limit: 1})
	if err != nil || len(res.Results) != 1 || res.Results[0].Content != "The on-call rota is in the ops wiki" {
		t.Fatalf("recall in the copy: %+v %v", res.Results, err)
	}
	got, err := dst.Get(alice, res.Results[0].ID)
	if err != nil || len(got.MergedFrom) != 1 || fmt.Sprint(got.Tags) != "[oncall wiki]" || fmt.Sprint(got.Entities) != "[ops]" {
		t.Fatalf("survivor in the copy: %+v %v", got, err)
	}
	if page, err := dst.ListCallableSkills(bob, memory.SkillQuery{}); err != nil || len(page.Skills) != 1 || page.Skills[0].Owner != "alice" {
		t.Fatalf("bob's callable skills in the copy: %+v %v", page, err)
	}
	if _, data, err := dst.ReadFile(bob, "notes.md"); err != nil || string(data) != "# notes\n" {
		t.Fatalf("bob's file in the copy: %q %v", data, err)
	}
	if p, err := dst.Path(alice, memory.PathInput{From: "ops", To: "pagerduty"}); err != nil || !p.Found {
		t.Fatalf("graph in the copy: %+v %v", p, err)
	}
	again, err := dst.Import(ctx, bytes.NewReader(data))
	if err != nil || again.Imported != (memory.ExportReport{}) || again.Updated != (memory.ExportReport{}) || again.Skipped != 9 {
		t.Fatalf("second import = %+v %v", again, err)
	}
	if back, err := dst.Export(ctx, io.Discard); err != nil || back != exp {
		t.Fatalf("the copy exports %+v %v, want %+v", back, err, exp)
	}
	_, err = dst.Import(ctx, bytes.NewReader([]byte(`{"kind": "memory"}`)))
	wantCode(t, err, memory.ErrInvalid)
}
