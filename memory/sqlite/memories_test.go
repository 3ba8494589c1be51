package sqlite

import (
	"github.com/codecell/codecell/memory"

	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
)

func TestRememberGet(t *testing.T) {
	s := openTest(t, Config{})
	ctx := as(t.Context(), "alice")
	m := mustRemember(t, s, ctx, memory.RememberInput{
		Layer: memory.Episodic, Content: "Deployed v2.3 of the billing service to production",
		Tags: []string{"Deploy", "billing", "deploy"}, Metadata: json.RawMessage(`{"version": "2.3"}`),
		Importance: ptr(0.8), Source: "ci", Entities: []string{"billing-service"},
	})
	if m.Layer != memory.Episodic || !slices.Equal(m.Tags, []string{"billing", "deploy"}) || m.Session != "s-alice" || m.OccurredAt == nil {
		t.Fatalf("remembered: %+v", m)
	}
	got, err := s.Get(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Content != m.Content || string(got.Metadata) != `{"version":"2.3"}` || got.Importance != 0.8 || got.AccessCount != 1 ||
		!slices.Equal(got.Entities, []string{"billing-service"}) || got.Source != "ci" {
		t.Fatalf("get: %+v", got)
	}
	got, _ = s.Get(ctx, m.ID)
	if got.AccessCount != 2 || got.AccessedAt == nil {
		t.Fatalf("second get: access count %d", got.AccessCount)
	}
	// Another principal sees nothing.
	_, err = s.Get(as(t.Context(), "bob"), m.ID)
	wantCode(t, err, tools.CodeNotFound)
}

func TestRememberDefaults(t *testing.T) {
	s := openTest(t, Config{})
	m := mustRemember(t, s, t.Context(), memory.RememberInput{Content: "tabs are 4 spaces in this repo"})
	if m.Layer != memory.Semantic || m.Importance != 0.5 || string(m.Metadata) != "{}" || m.OccurredAt != nil || len(m.Tags) != 0 {
		t.Fatalf("defaults: %+v", m)
	}
	task := mustRemember(t, s, t.Context(), memory.RememberInput{Layer: memory.Prospective, Content: "renew the TLS certificate"})
	if task.Status != memory.StatusOpen {
		t.Fatalf("task status %q, want open", task.Status)
	}
}

func TestRememberBadInput(t *testing.T) {
	s := openTest(t, Config{Limits: memory.Limits{MaxContentBytes: 100, MaxTags: 3}})
	ctx := t.Context()
	cases := []struct {
		name string
		in   memory.RememberInput
		code string
		msg  string
	}{
		{"empty content", memory.RememberInput{Content: "  "}, tools.CodeInvalidArguments, "content is empty"},
		{"unknown layer", memory.RememberInput{Layer: "dreams", Content: "x"}, tools.CodeInvalidArguments, "use one of episodic, semantic, procedural, prospective"},
		{"oversized", memory.RememberInput{Content: strings.Repeat("a", 101)}, memory.CodeTooLarge, "101 bytes; the limit is 100"},
		{"too many tags", memory.RememberInput{Content: "x", Tags: []string{"a", "b", "c", "d"}}, tools.CodeInvalidArguments, "4 tags; the limit is 3"},
		{"empty tag", memory.RememberInput{Content: "x", Tags: []string{""}}, tools.CodeInvalidArguments, "tags[0] is empty"},
		{"metadata not object", memory.RememberInput{Content: "x", Metadata: json.RawMessage(`[1]`)}, tools.CodeInvalidArguments, "metadata must be a JSON object"},
		{"importance", memory.RememberInput{Content: "x", Importance: ptr(2.0)}, tools.CodeInvalidArguments, "between 0 and 1"},
		{"status on fact", memory.RememberInput{Content: "x", Status: memory.StatusDone}, tools.CodeInvalidArguments, "prospective layer only"},
		{"bad status", memory.RememberInput{Layer: memory.Prospective, Content: "x", Status: "someday"}, tools.CodeInvalidArguments, "not a task status"},
		{"bad utf8", memory.RememberInput{Content: "\xff\xfe"}, tools.CodeInvalidArguments, "UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Remember(ctx, c.in)
			te := wantCode(t, err, c.code)
			if !strings.Contains(te.Message, c.msg) {
				t.Fatalf("message %q lacks %q", te.Message, c.msg)
			}
		})
	}
	st, err := s.MemoryStats(ctx)
	if err != nil || st.Memories != 0 {
		t.Fatalf("store changed by bad input: %d memories, %v", st.Memories, err)
	}
}

func TestUpdate(t *testing.T) {
	s := openTest(t, Config{})
	ctx := t.Context()
	m := mustRemember(t, s, ctx, memory.RememberInput{Content: "the staging database is on port 5432", Tags: []string{"db"}, Metadata: json.RawMessage(`{"a":1,"b":2}`)})
	up, err := s.Update(ctx, memory.UpdateInput{ID: m.ID, Content: ptr("the staging database moved to port 6543"), AddTags: []string{"staging"},
		MergeMetadata: json.RawMessage(`{"b":null,"c":3}`), Importance: ptr(0.9), AddEntities: []string{"staging-db"}})
	if err != nil {
		t.Fatal(err)
	}
	if up.Content != "the staging database moved to port 6543" || !slices.Equal(up.Tags, []string{"db", "staging"}) ||
		string(up.Metadata) != `{"a":1,"c":3}` || up.Importance != 0.9 || !slices.Equal(up.Entities, []string{"staging-db"}) {
		t.Fatalf("updated: %+v", up)
	}
	// The new content is searchable, the old is not.
	r, err := s.Recall(ctx, memory.RecallInput{Query: "6543", Mode: memory.ModeKeyword})
	if err != nil || len(r.Results) != 1 {
		t.Fatalf("keyword recall of new content: %+v %v", r, err)
	}
	r, _ = s.Recall(ctx, memory.RecallInput{Query: "5432", Mode: memory.ModeKeyword})
	if len(r.Results) != 0 {
		t.Fatalf("old content still indexed: %+v", r.Results)
	}
	// Layer change keeps vectors consistent.
	up, err = s.Update(ctx, memory.UpdateInput{ID: m.ID, Layer: ptr(memory.Procedural)})
	if err != nil || up.Layer != memory.Procedural {
		t.Fatalf("layer change: %+v %v", up, err)
	}
	r, _ = s.Recall(ctx, memory.RecallInput{Query: "staging database port", Layer: memory.Procedural, Exact: true})
	if len(r.Results) != 1 {
		t.Fatalf("recall by new layer: %+v", r.Results)
	}
	_, err = s.Update(ctx, memory.UpdateInput{ID: 999})
	wantCode(t, err, tools.CodeNotFound)
	_, err = s.Update(ctx, memory.UpdateInput{ID: m.ID, Status: ptr(memory.StatusDone)})
	wantCode(t, err, tools.CodeInvalidArguments)
	_, err = s.Update(ctx, memory.UpdateInput{ID: m.ID, Layer: ptr(memory.Layer("x"))})
	wantCode(t, err, tools.CodeInvalidArguments)
}

func TestForget(t *testing.T) {
	s := openTest(t, Config{})
	ctx := t.Context()
	a := mustRemember(t, s, ctx, memory.RememberInput{Content: "alpha fact", Tags: []string{"x"}})
	b := mustRemember(t, s, ctx, memory.RememberInput{Layer: memory.Episodic, Content: "beta event", Tags: []string{"x", "y"}})
	c := mustRemember(t, s, ctx, memory.RememberInput{Layer: memory.Episodic, Content: "gamma event", Session: "other"})
	other := mustRemember(t, s, as(ctx, "bob"), memory.RememberInput{Content: "bob's alpha"})

	_, err := s.Forget(ctx, memory.ForgetInput{})
	wantCode(t, err, tools.CodeInvalidArguments)

	res, err := s.Forget(ctx, memory.ForgetInput{Filter: memory.Filter{Tags: []string{"x"}}, DryRun: true})
	if err != nil || res.Deleted != 2 || !res.DryRun {
		t.Fatalf("dry run: %+v %v", res, err)
	}
	res, err = s.Forget(ctx, memory.ForgetInput{Filter: memory.Filter{Layers: []memory.Layer{memory.Episodic}, Tags: []string{"y"}}})
	if err != nil || res.Deleted != 1 || res.IDs[0] != b.ID {
		t.Fatalf("forget by filter: %+v %v", res, err)
	}
	res, err = s.Forget(ctx, memory.ForgetInput{IDs: []int64{a.ID, other.ID, 12345}})
	if err != nil || res.Deleted != 1 || !slices.Equal(res.NotFound, []int64{other.ID, 12345}) {
		t.Fatalf("forget by ids: %+v %v", res, err)
	}
	res, err = s.Forget(ctx, memory.ForgetInput{Filter: memory.Filter{Session: "other"}})
	if err != nil || res.Deleted != 1 || res.IDs[0] != c.ID {
		t.Fatalf("forget by session: %+v %v", res, err)
	}
	// Gone from every index.
	for _, q := range []string{"alpha", "beta", "gamma"} {
		r, err := s.Recall(ctx, memory.RecallInput{Query: q})
		if err != nil || len(r.Results) != 0 {
			t.Fatalf("recall %q after forget: %+v %v", q, r.Results, err)
		}
	}
	var n int
	s.r.QueryRow(`SELECT (SELECT count(*) FROM memory_vectors) + (SELECT count(*) FROM memory_codes) + (SELECT count(*) FROM memory_tags)`).Scan(&n)
	if n != 1+1 { // bob's vector and code
		t.Fatalf("%d index rows left, want 2 (bob's)", n)
	}
	if _, err := s.Get(as(ctx, "bob"), other.ID); err != nil {
		t.Fatalf("bob's memory gone: %v", err)
	}
	res, err = s.Forget(as(ctx, "bob"), memory.ForgetInput{All: true})
	if err != nil || res.Deleted != 1 {
		t.Fatalf("forget all: %+v %v", res, err)
	}
}

func TestRecallFilters(t *testing.T) {
	clock := &testClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := openTest(t, Config{Now: clock.now})
	ctx := t.Context()
	day := 24 * time.Hour
	old := mustRemember(t, s, ctx, memory.RememberInput{Layer: memory.Episodic, Content: "the deploy of the payments service failed", OccurredAt: ptr(clock.t.Add(-40 * day)), Tags: []string{"deploy"}, Session: "s1"})
	recent := mustRemember(t, s, ctx, memory.RememberInput{Layer: memory.Episodic, Content: "the deploy of the payments service succeeded", OccurredAt: ptr(clock.t.Add(-1 * day)), Tags: []string{"deploy", "ok"}, Session: "s2"})
	fact := mustRemember(t, s, ctx, memory.RememberInput{Layer: memory.Semantic, Content: "the payments service is written in Go", Entities: []string{"payments"}})
	how := mustRemember(t, s, ctx, memory.RememberInput{Layer: memory.Procedural, Content: "to deploy the payments service run make deploy"})

	cases := []struct {
		name string
		in   memory.RecallInput
		want []int64
	}{
		{"layer", memory.RecallInput{Query: "payments service", Layer: memory.Semantic}, []int64{fact.ID}},
		{"layers", memory.RecallInput{Query: "payments deploy", Filter: memory.Filter{Layers: []memory.Layer{memory.Procedural, memory.Semantic}}}, []int64{how.ID, fact.ID}},
		{"tags", memory.RecallInput{Query: "deploy", Filter: memory.Filter{Tags: []string{"ok"}}}, []int64{recent.ID}},
		{"session", memory.RecallInput{Query: "deploy", Filter: memory.Filter{Session: "s1"}}, []int64{old.ID}},
		{"since", memory.RecallInput{Query: "deploy payments", Layer: memory.Episodic, Filter: memory.Filter{Since: ptr(clock.t.Add(-7 * day))}}, []int64{recent.ID}},
		{"until", memory.RecallInput{Query: "deploy payments", Layer: memory.Episodic, Filter: memory.Filter{Until: ptr(clock.t.Add(-7 * day))}}, []int64{old.ID}},
		{"entity", memory.RecallInput{Query: "service", Filter: memory.Filter{Entity: "Payments"}}, []int64{fact.ID}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := s.Recall(ctx, c.in)
			if err != nil {
				t.Fatal(err)
			}
			got := hitIDs(r)
			slices.Sort(got)
			want := slices.Clone(c.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
	// Recency weight puts the recent event first.
	r, err := s.Recall(ctx, memory.RecallInput{Query: "deploy payments service", Layer: memory.Episodic, RecencyWeight: 0.9})
	if err != nil || len(r.Results) != 2 || r.Results[0].ID != recent.ID || r.Results[0].Recency == nil {
		t.Fatalf("recency: %+v %v", r.Results, err)
	}
	// Scores are reported per retriever.
	r, _ = s.Recall(ctx, memory.RecallInput{Query: "payments service written in Go"})
	top := r.Results[0]
	if top.ID != fact.ID || top.VectorScore == nil || top.KeywordScore == nil || top.VectorRank != 1 || top.KeywordRank != 1 || top.Score != 1 {
		t.Fatalf("top hit scores: %+v", top)
	}
	// Reproducible.
	r2, _ := s.Recall(ctx, memory.RecallInput{Query: "payments service written in Go"})
	if !slices.Equal(hitIDs(r), hitIDs(r2)) {
		t.Fatalf("same query, different answers: %v vs %v", hitIDs(r), hitIDs(r2))
	}
	// Bad input.
	for _, in := range []memory.RecallInput{{Query: ""}, {Query: "x", Limit: 1000}, {Query: "x", Mode: "fuzzy"}, {Query: "x", RecencyWeight: 2}, {Query: "x", Layer: "nope"}} {
		_, err := s.Recall(ctx, in)
		wantCode(t, err, tools.CodeInvalidArguments)
	}
}
