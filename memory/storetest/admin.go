package storetest

import (
	"errors"
	"fmt"
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
		{"session", memory.ExecutionQuery{Session: "s2"}, "[r2]"},
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
