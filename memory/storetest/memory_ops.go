package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// remember stores contents for ctx's principal and returns the memories.
func remember(t *testing.T, st Backend, ctx context.Context, ins ...memory.RememberInput) []memory.Memory {
	t.Helper()
	out := make([]memory.Memory, len(ins))
	for i, in := range ins {
		m, err := st.Remember(ctx, in)
		if err != nil {
			t.Fatalf("remember %q: %v", in.Content, err)
		}
		out[i] = m
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func testUpdate(t *testing.T, open Opener) {
	st, _ := open(t)
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	m := remember(t, st, alice, memory.RememberInput{Content: "The staging cluster runs on spot instances", Tags: []string{"infra"},
		Metadata: json.RawMessage(`{"team": "ops", "cost": 1}`)})[0]
	got, err := st.Update(alice, memory.UpdateInput{ID: m.ID, AddTags: []string{"Staging"}, DropTags: []string{"infra"},
		MergeMetadata: json.RawMessage(`{"cost": null, "owner": "dana"}`), Importance: ptr(0.9), AddEntities: []string{"staging"}})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Tags) != "[staging]" || string(got.Metadata) != `{"owner":"dana","team":"ops"}` || got.Importance != 0.9 ||
		fmt.Sprint(got.Entities) != "[staging]" || !got.UpdatedAt.After(m.UpdatedAt) || !got.CreatedAt.Equal(m.CreatedAt) {
		t.Fatalf("updated %+v", got)
	}
	// A new content is re-indexed for both retrievers.
	if _, err := st.Update(alice, memory.UpdateInput{ID: m.ID, Content: ptr("The staging cluster moved to reserved hardware")}); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{memory.ModeKeyword, memory.ModeVector} {
		res, err := st.Recall(alice, memory.RecallInput{Query: "reserved hardware", Mode: mode, Limit: 1})
		if err != nil || len(res.Results) != 1 || res.Results[0].ID != m.ID {
			t.Fatalf("%s recall after update: %+v %v", mode, res.Results, err)
		}
	}
	if res, err := st.Recall(alice, memory.RecallInput{Query: "spot", Mode: memory.ModeKeyword}); err != nil || len(res.Results) != 0 {
		t.Fatalf("the old content is still indexed: %+v %v", res.Results, err)
	}
	// A layer change moves the memory between layer filters.
	if _, err := st.Update(alice, memory.UpdateInput{ID: m.ID, Layer: ptr(memory.Procedural)}); err != nil {
		t.Fatal(err)
	}
	res, err := st.Recall(alice, memory.RecallInput{Query: "reserved hardware", Mode: memory.ModeVector, Filter: memory.Filter{Layers: []memory.Layer{memory.Procedural}}})
	if err != nil || len(res.Results) != 1 || res.Results[0].Layer != memory.Procedural {
		t.Fatalf("recall by the new layer: %+v %v", res.Results, err)
	}
	_, err = st.Update(alice, memory.UpdateInput{ID: m.ID, Status: ptr(memory.StatusDone)})
	wantCode(t, err, memory.ErrInvalid)
	_, err = st.Update(bob, memory.UpdateInput{ID: m.ID, Importance: ptr(0.1)})
	wantCode(t, err, memory.ErrNotFound)
	_, err = st.Update(alice, memory.UpdateInput{ID: 0})
	wantCode(t, err, memory.ErrInvalid)
}

func testForgetByFilter(t *testing.T, open Opener) {
	st, _ := open(t)
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	ms := remember(t, st, alice,
		memory.RememberInput{Content: "Standup moved to 10am", Layer: memory.Episodic, Tags: []string{"meeting"}},
		memory.RememberInput{Content: "Retro is on Fridays", Layer: memory.Episodic, Tags: []string{"meeting", "retro"}},
		memory.RememberInput{Content: "Go 1.26 has the new GC", Tags: []string{"go"}},
		memory.RememberInput{Content: "Postgres 15 is our baseline", Tags: []string{"db"}, Entities: []string{"postgres"}},
	)
	remember(t, st, bob, memory.RememberInput{Content: "Bob's meeting notes", Layer: memory.Episodic, Tags: []string{"meeting"}})
	_, err := st.Forget(alice, memory.ForgetInput{})
	wantCode(t, err, memory.ErrInvalid)
	_, err = st.Forget(alice, memory.ForgetInput{IDs: []int64{ms[0].ID}, Filter: memory.Filter{Tags: []string{"go"}}})
	wantCode(t, err, memory.ErrInvalid)
	dry, err := st.Forget(alice, memory.ForgetInput{Filter: memory.Filter{Layers: []memory.Layer{memory.Episodic}, Tags: []string{"Meeting"}}, DryRun: true})
	if err != nil || dry.Deleted != 2 || !dry.DryRun || !slices.Equal(dry.IDs, []int64{ms[0].ID, ms[1].ID}) {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	res, err := st.Forget(alice, memory.ForgetInput{Filter: memory.Filter{Tags: []string{"retro"}}})
	if err != nil || res.Deleted != 1 || res.IDs[0] != ms[1].ID {
		t.Fatalf("by tag: %+v %v", res, err)
	}
	if res, err = st.Forget(alice, memory.ForgetInput{Filter: memory.Filter{Entity: "POSTGRES"}}); err != nil || res.Deleted != 1 || res.IDs[0] != ms[3].ID {
		t.Fatalf("by entity: %+v %v", res, err)
	}
	future := time.Now().Add(time.Hour)
	if res, err = st.Forget(alice, memory.ForgetInput{Before: &future}); err != nil || res.Deleted != 2 {
		t.Fatalf("before: %+v %v", res, err)
	}
	if res, err = st.Forget(alice, memory.ForgetInput{All: true}); err != nil || res.Deleted != 0 {
		t.Fatalf("all of nothing: %+v %v", res, err)
	}
	if res, err = st.Forget(alice, memory.ForgetInput{IDs: []int64{ms[0].ID, ms[0].ID}}); err != nil || res.Deleted != 0 || !slices.Equal(res.NotFound, []int64{ms[0].ID}) {
		t.Fatalf("forgotten id again: %+v %v", res, err)
	}
	stats, err := st.MemoryStats(bob)
	if err != nil || stats.Memories != 1 {
		t.Fatalf("bob's memory after alice forgot hers: %+v %v", stats, err)
	}
	// Recall's vector pass no longer finds the forgotten.
	got, err := st.Recall(alice, memory.RecallInput{Query: "standup meeting", Mode: memory.ModeVector})
	if err != nil || len(got.Results) != 0 {
		t.Fatalf("recall after forgetting all: %+v %v", got.Results, err)
	}
}

func testMemoryStats(t *testing.T, open Opener) {
	st, _ := open(t)
	alice := as(t.Context(), "alice")
	past := time.Now().Add(-time.Hour)
	remember(t, st, alice,
		memory.RememberInput{Content: "a", Tags: []string{"x", "y"}},
		memory.RememberInput{Content: "b", Tags: []string{"x"}, Layer: memory.Procedural},
		memory.RememberInput{Content: "renew the cert", Layer: memory.Prospective, DueAt: &past},
		memory.RememberInput{Content: "ship it", Layer: memory.Prospective, Status: memory.StatusDone},
	)
	if _, err := st.Relate(alice, memory.RelateInput{From: "alice", To: "billing", Type: "works_on"}); err != nil {
		t.Fatal(err)
	}
	got, err := st.MemoryStats(alice)
	if err != nil {
		t.Fatal(err)
	}
	want := memory.MemoryStats{Memories: 4, Entities: 2, Relations: 1,
		Layers:  map[memory.Layer]int{memory.Episodic: 0, memory.Semantic: 1, memory.Procedural: 1, memory.Prospective: 2},
		Tasks:   map[string]int{"open": 1, "in_progress": 0, "done": 1, "cancelled": 0, "overdue": 1},
		TopTags: []memory.TagCount{{Tag: "x", Count: 2}, {Tag: "y", Count: 1}}}
	if got.Memories != want.Memories || got.Entities != want.Entities || got.Relations != want.Relations ||
		fmt.Sprint(got.Layers) != fmt.Sprint(want.Layers) || fmt.Sprint(got.Tasks) != fmt.Sprint(want.Tasks) ||
		fmt.Sprint(got.TopTags) != fmt.Sprint(want.TopTags) || got.Oldest == nil || got.Newest == nil || got.Embedder["name"] == nil {
		t.Fatalf("stats = %+v\nwant    %+v", got, want)
	}
	empty, err := st.MemoryStats(as(t.Context(), "nobody"))
	if err != nil || empty.Memories != 0 || empty.Oldest != nil || len(empty.TopTags) != 0 {
		t.Fatalf("empty stats = %+v %v", empty, err)
	}
}

func testGraph(t *testing.T, open Opener) {
	st, _ := open(t)
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	e, created, err := st.UpsertEntity(alice, memory.EntityInput{Name: " Billing ", Type: "service", Properties: json.RawMessage(`{"lang": "go", "tier": 1}`)})
	if err != nil || !created || e.Name != "Billing" || e.Type != "service" || string(e.Properties) != `{"lang":"go","tier":1}` {
		t.Fatalf("create: %+v %v %v", e, created, err)
	}
	e, created, err = st.UpsertEntity(alice, memory.EntityInput{Name: "billing", Description: "Invoices", Properties: json.RawMessage(`{"tier": null, "owner": "payments"}`)})
	if err != nil || created || e.Type != "service" || e.Description != "Invoices" || string(e.Properties) != `{"lang":"go","owner":"payments"}` {
		t.Fatalf("update: %+v %v %v", e, created, err)
	}
	_, _, err = st.UpsertEntity(alice, memory.EntityInput{Name: ""})
	wantCode(t, err, memory.ErrInvalid)
	rel, err := st.Relate(alice, memory.RelateInput{From: "alice", To: "Billing", Type: "works_on"})
	if err != nil || !rel.Created || fmt.Sprint(rel.CreatedEntities) != "[alice]" || rel.Relation.To != "Billing" || rel.Relation.Weight != 1 {
		t.Fatalf("relate: %+v %v", rel, err)
	}
	again, err := st.Relate(alice, memory.RelateInput{From: "alice", To: "billing", Type: "works_on", Weight: ptr(2.5)})
	if err != nil || again.Created || again.Relation.ID != rel.Relation.ID || again.Relation.Weight != 2.5 {
		t.Fatalf("relate again: %+v %v", again, err)
	}
	for _, r := range []memory.RelateInput{
		{From: "Billing", To: "postgres", Type: "depends_on"},
		{From: "postgres", To: "disk", Type: "depends_on"},
		{From: "bob", To: "alice", Type: "manages"},
	} {
		if _, err := st.Relate(alice, r); err != nil {
			t.Fatal(err)
		}
	}
	_, err = st.Relate(alice, memory.RelateInput{From: "a", To: "b", Type: " "})
	wantCode(t, err, memory.ErrInvalid)
	remember(t, st, alice, memory.RememberInput{Content: "Billing pages on-call when invoices fail", Entities: []string{"billing"}})

	nb, err := st.Neighbors(alice, memory.NeighborsInput{Entity: "billing", Depth: 2, Memories: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nb.Neighbors {
		names = append(names, fmt.Sprintf("%s@%d", n.Entity.Name, n.Depth))
	}
	if fmt.Sprint(names) != "[alice@1 postgres@1 bob@2 disk@2]" || len(nb.Relations) != 4 || len(nb.Memories) != 1 {
		t.Fatalf("neighbors = %v, %d relations, memories %+v", names, len(nb.Relations), nb.Memories)
	}
	out, err := st.Neighbors(alice, memory.NeighborsInput{Entity: "billing", Direction: memory.Out, Types: []string{"depends_on"}, Depth: 5})
	if err != nil || len(out.Neighbors) != 2 || out.Neighbors[1].Entity.Name != "disk" {
		t.Fatalf("out along depends_on: %+v %v", out.Neighbors, err)
	}
	if lim, err := st.Neighbors(alice, memory.NeighborsInput{Entity: "billing", Depth: 2, Limit: 1}); err != nil || len(lim.Neighbors) != 1 || !lim.Truncated {
		t.Fatalf("limited: %+v %v", lim, err)
	}
	_, err = st.Neighbors(alice, memory.NeighborsInput{Entity: "billing", Depth: 9})
	wantCode(t, err, memory.ErrInvalid)
	_, err = st.Neighbors(bob, memory.NeighborsInput{Entity: "billing"})
	wantCode(t, err, memory.ErrNotFound)

	p, err := st.Path(alice, memory.PathInput{From: "bob", To: "disk"})
	if err != nil || !p.Found || p.Length != 4 || fmt.Sprint(p.Entities) != "[bob alice Billing postgres disk]" || p.Steps[0].Type != "manages" {
		t.Fatalf("path: %+v %v", p, err)
	}
	if p, err = st.Path(alice, memory.PathInput{From: "bob", To: "disk", MaxDepth: 3}); err != nil || p.Found {
		t.Fatalf("path beyond max_depth: %+v %v", p, err)
	}
	if p, err = st.Path(alice, memory.PathInput{From: "disk", To: "bob", Direction: memory.Out}); err != nil || p.Found {
		t.Fatalf("path against the edges: %+v %v", p, err)
	}
	_, err = st.Path(alice, memory.PathInput{From: "bob", To: "nowhere"})
	wantCode(t, err, memory.ErrNotFound)
}

func testTasks(t *testing.T, open Opener) {
	st, _ := open(t)
	alice := as(t.Context(), "alice")
	now := time.Now().UTC()
	soon, later, past := now.Add(2*time.Hour), now.Add(72*time.Hour), now.Add(-time.Hour)
	var ids []int64
	for _, in := range []memory.TaskInput{
		{Content: "renew the TLS certificate", DueAt: &later, Tags: []string{"ops"}},
		{Content: "answer the audit", DueAt: &past},
		{Content: "rotate keys", DueAt: &soon, Status: memory.StatusInProgress, Tags: []string{"ops"}},
		{Content: "someday: rewrite the CLI"},
		{Content: "old chore", Status: memory.StatusDone},
	} {
		tk, err := st.AddTask(alice, in)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID)
	}
	list := func(q memory.TaskQuery) string {
		t.Helper()
		ts, err := st.ListTasks(alice, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tk := range ts {
			s := tk.Content
			if tk.Overdue {
				s += "!"
			}
			out = append(out, s)
		}
		return fmt.Sprint(out)
	}
	for _, tt := range []struct {
		name string
		q    memory.TaskQuery
		want string
	}{
		{"open by due time", memory.TaskQuery{}, "[answer the audit! rotate keys renew the TLS certificate someday: rewrite the CLI]"},
		{"overdue", memory.TaskQuery{Overdue: true}, "[answer the audit!]"},
		{"due within a day", memory.TaskQuery{DueWithinHours: 24}, "[answer the audit! rotate keys]"},
		{"by tag", memory.TaskQuery{Tags: []string{"OPS"}}, "[rotate keys renew the TLS certificate]"},
		{"done", memory.TaskQuery{Statuses: []memory.TaskStatus{memory.StatusDone}}, "[old chore]"},
		{"limit", memory.TaskQuery{Limit: 1}, "[answer the audit!]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := list(tt.q); got != tt.want {
				t.Fatalf("tasks = %s, want %s", got, tt.want)
			}
		})
	}
	_, err := st.ListTasks(alice, memory.TaskQuery{Statuses: []memory.TaskStatus{"later"}})
	wantCode(t, err, memory.ErrInvalid)
	done, err := st.UpdateTask(alice, memory.TaskUpdate{ID: ids[1], Status: ptr(memory.StatusDone), Note: "sent"})
	if err != nil || done.Status != memory.StatusDone || done.Overdue {
		t.Fatalf("update task: %+v %v", done, err)
	}
	var meta struct {
		Notes []struct{ Note string } `json:"notes"`
	}
	if err := json.Unmarshal(done.Metadata, &meta); err != nil || len(meta.Notes) != 1 || meta.Notes[0].Note != "sent" {
		t.Fatalf("task notes = %s", done.Metadata)
	}
	if got := list(memory.TaskQuery{Overdue: true}); got != "[]" {
		t.Fatalf("overdue after done = %s", got)
	}
	fact := remember(t, st, alice, memory.RememberInput{Content: "not a task"})[0]
	_, err = st.UpdateTask(alice, memory.TaskUpdate{ID: fact.ID, Status: ptr(memory.StatusDone)})
	wantCode(t, err, memory.ErrInvalid)
}

func testConsolidate(t *testing.T, open Opener) {
	st, _ := open(t)
	alice := as(t.Context(), "alice")
	ms := remember(t, st, alice,
		memory.RememberInput{Content: "The deploy script lives in ops/deploy.sh", Tags: []string{"deploy"}, Importance: ptr(0.8)},
		memory.RememberInput{Content: "The deploy script lives in ops/deploy.sh", Tags: []string{"tooling"}, Entities: []string{"ops"},
			Metadata: json.RawMessage(`{"seen": 2}`)},
		memory.RememberInput{Content: "Lunch is at noon on Tuesdays"},
		memory.RememberInput{Content: "The deploy script lives in ops/deploy.sh", Layer: memory.Procedural},
	)
	dry, err := st.Consolidate(alice, memory.ConsolidateInput{DryRun: true})
	if err != nil || dry.Examined != 4 || dry.Merged != 1 || len(dry.Groups) != 1 || dry.Groups[0].Survivor.ID != ms[0].ID ||
		dry.Groups[0].Merged[0].ID != ms[1].ID || dry.Groups[0].Merged[0].Similarity < 0.9 {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	if _, err := st.Get(alice, ms[1].ID); err != nil {
		t.Fatalf("a dry run merged: %v", err)
	}
	res, err := st.Consolidate(alice, memory.ConsolidateInput{})
	if err != nil || res.Merged != 1 || res.DryRun {
		t.Fatalf("consolidate: %+v %v", res, err)
	}
	sv, err := st.Get(alice, ms[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sv.Tags) != "[deploy tooling]" || string(sv.Metadata) != `{"seen":2}` || fmt.Sprint(sv.Entities) != "[ops]" ||
		sv.AccessCount != 2 || len(sv.MergedFrom) != 1 || sv.MergedFrom[0].ID != ms[1].ID || sv.MergedFrom[0].Content != ms[1].Content {
		t.Fatalf("survivor = %+v", sv)
	}
	_, err = st.Get(alice, ms[1].ID)
	wantCode(t, err, memory.ErrNotFound)
	if res, err := st.Recall(alice, memory.RecallInput{Query: "tooling", Mode: memory.ModeKeyword}); err != nil || len(res.Results) != 1 || res.Results[0].ID != ms[0].ID {
		t.Fatalf("the survivor's merged tags are not indexed: %+v %v", res.Results, err)
	}
	stats, err := st.MemoryStats(alice)
	if err != nil || stats.Memories != 3 || stats.Merged != 1 {
		t.Fatalf("stats after consolidation: %+v %v", stats, err)
	}
	_, err = st.Consolidate(alice, memory.ConsolidateInput{Threshold: 0.2})
	wantCode(t, err, memory.ErrInvalid)
}

// testTools: memory's tools registered over the backend's ToolSet work
// end to end through a registry, every group present.
func testTools(t *testing.T, open Opener) {
	st, _ := open(t)
	r := tools.NewRegistry()
	if err := memory.RegisterTools(r, st.ToolSet()); err != nil {
		t.Fatal(err)
	}
	if n := len(r.ListCategory(memory.MemoryCategory)); n != 14 {
		t.Fatalf("%d memory tools, want 14", n)
	}
	alice := as(t.Context(), "alice")
	steps := []struct{ tool, args, want string }{
		{"memory.remember", `{"content": "Grafana dashboards live in the obs repo", "tags": ["obs"]}`, `"id":`},
		{"memory.update", `{"id": 1, "add_tags": ["dashboards"]}`, `"dashboards"`},
		{"memory.recall", `{"query": "where are the dashboards"}`, `Grafana`},
		{"memory.relate", `{"from": "obs", "to": "grafana", "type": "hosts"}`, `"created":true`},
		{"memory.path", `{"from": "grafana", "to": "obs"}`, `"found":true`},
		{"memory.task_add", `{"content": "archive old dashboards"}`, `"overdue":false`},
		{"memory.task_list", `{}`, `archive old dashboards`},
		{"memory.stats", `{}`, `"memories":2`},
		{"memory.consolidate", `{"dry_run": true}`, `"merged":0`},
		{"memory.forget", `{"all": true}`, `"deleted":2`},
	}
	for _, s := range steps {
		out, err := r.Call(alice, s.tool, json.RawMessage(s.args))
		if err != nil {
			t.Fatalf("%s: %v", s.tool, err)
		}
		if !strings.Contains(string(out), s.want) {
			t.Fatalf("%s = %s, want it to hold %s", s.tool, out, s.want)
		}
	}
}

// testConcurrentUpdates: four writers, on two instances where the
// backend has them, each add a tag to the same memory at once; none is
// lost (each update applies to what the others committed).
func testConcurrentUpdates(t *testing.T, open Opener) {
	a, second := open(t)
	b := a
	if second != nil {
		b = second()
	}
	alice := as(t.Context(), "alice")
	m := remember(t, a, alice, memory.RememberInput{Content: "Shared runbook for the payments outage"})[0]
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		st := a
		if i%2 == 1 {
			st = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = st.Update(alice, memory.UpdateInput{ID: m.ID, AddTags: []string{fmt.Sprintf("w%d", i)}})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	got, err := a.Get(alice, m.ID)
	if err != nil || fmt.Sprint(got.Tags) != "[w0 w1 w2 w3]" {
		t.Fatalf("after concurrent updates: tags %v, %v", got.Tags, err)
	}
	res, err := b.Recall(alice, memory.RecallInput{Query: "w3", Mode: memory.ModeKeyword})
	if err != nil || len(res.Results) != 1 {
		t.Fatalf("the last tag is not indexed: %+v %v", res.Results, err)
	}
}
