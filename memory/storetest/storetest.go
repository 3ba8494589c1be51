// Package storetest is the contract that every backend of codecell's
// store passes: the SQLite store (memory/sqlite) and the PostgreSQL one
// (memory/postgres) run the same Run. It checks behaviour through the
// interfaces their consumers declare, with real stores, no fakes.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Backend is what the contract covers: the server's state (audit,
// results, workspace, skills, tool shapes, plans, cache), the state
// instances share (vault tokens, rate windows, filter key) and memories
// with recall.
type Backend interface {
	memory.WorkspaceOps
	memory.MemoryOps
	memory.GraphOps
	memory.TaskOps
	memory.ConsolidateOps
	StateBackend
	RecordExecution(ctx context.Context, e memory.Execution) error
	RecordToolCalls(ctx context.Context, calls ...memory.ToolCall) error
	RecordHTTPRequests(ctx context.Context, reqs ...memory.HTTPRequest) error
	RecordAudit(ctx context.Context, recs ...memory.AuditRecord) error
	HTTPRequests(ctx context.Context, executionID string) ([]memory.HTTPRequest, error)
	GetExecution(ctx context.Context, id string) (memory.Execution, []memory.ToolCall, error)
	PutResult(ctx context.Context, in memory.PutResultInput) (memory.ResultInfo, error)
	GetResult(ctx context.Context, id string) (memory.ResultInfo, []byte, error)
	SaveSkill(ctx context.Context, sk memory.Skill) (memory.Skill, error)
	GetSkill(ctx context.Context, name string) (memory.Skill, error)
	DeleteSkill(ctx context.Context, name string) error
	PublishSkill(ctx context.Context, name string) (memory.Skill, error)
	UnpublishSkill(ctx context.Context, name string) error
	ListCallableSkills(ctx context.Context, q memory.SkillQuery) (memory.SkillPage, error)
	PublishedSkill(ctx context.Context, name string) (memory.Skill, error)
	PublishedSkills(ctx context.Context) ([]memory.Skill, error)
	OnSkillChange(fn func(memory.SkillChange)) (cancel func())
	SkillPin(ctx context.Context, name string) (memory.SkillPin, error)
	PinSkill(ctx context.Context, p memory.SkillPin) (memory.SkillPin, error)
	ToolSet() memory.ToolSet
	ListExecutions(ctx context.Context, q memory.ExecutionQuery) ([]memory.Execution, error)
	ListToolCalls(ctx context.Context, q memory.ToolCallQuery) ([]memory.ToolCall, error)
	StatResult(ctx context.Context, id string) (memory.ResultInfo, error)
	StatFile(ctx context.Context, path string) (memory.FileInfo, error)
	ReadResult(ctx context.Context, id string, offset, length int64) (memory.ResultInfo, []byte, error)
	ListResults(ctx context.Context, session string, limit int) ([]memory.ResultInfo, error)
	DeleteResult(ctx context.Context, id string) error
	Prune(ctx context.Context) (memory.PruneReport, error)
	Stats(ctx context.Context) (memory.StoreStats, error)
	EmbedderStatus(ctx context.Context) (memory.EmbedderStatus, error)
	Reindex(ctx context.Context, e memory.Embedder) (memory.ReindexReport, error)
	Export(ctx context.Context, w io.Writer) (memory.ExportReport, error)
	Import(ctx context.Context, r io.Reader) (memory.ImportReport, error)
	PutToolShape(ctx context.Context, source, tool string, shape json.RawMessage) error
	ToolShapes(ctx context.Context, source string) (map[string]json.RawMessage, error)
	LearnSearch(ctx context.Context, terms, toolNames []string) error
	SearchLinks(ctx context.Context) ([]memory.SearchLink, error)
	ResetSearchLinks(ctx context.Context) (int64, error)
}

// Opener opens a fresh, empty store for one test, closed by the test's
// cleanup. A second call within the same test opens a second instance on
// the same database (for cross-instance behaviour); a backend without
// such sharing returns nil.
type Opener func(t *testing.T) (first Backend, second func() Backend)

// as returns ctx acting for principal.
func as(ctx context.Context, principal string) context.Context {
	return tools.WithCaller(ctx, tools.Caller{Principal: principal, Session: "s-" + principal})
}

// Run runs the contract against the backend open makes.
func Run(t *testing.T, open Opener, opts ...Option) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	t.Run("audit", func(t *testing.T) { testAudit(t, open) })
	t.Run("audit_batch", func(t *testing.T) { testAuditBatch(t, open) })
	t.Run("audit_modes", func(t *testing.T) { testAuditModes(t, open) })
	t.Run("audit_aggregates", func(t *testing.T) { testAuditAggregates(t, open) })
	t.Run("program_text", func(t *testing.T) { testProgramText(t, open) })
	t.Run("plans", func(t *testing.T) { testPlans(t, open, o) })
	t.Run("cache", func(t *testing.T) { testCache(t, open) })
	t.Run("vault_tokens", func(t *testing.T) { testVaultTokens(t, open) })
	t.Run("reserve_quota", func(t *testing.T) { testReserveQuota(t, open) })
	t.Run("filter_key", func(t *testing.T) { testFilterKey(t, open) })
	t.Run("ready_and_pool", func(t *testing.T) { testReadyAndPool(t, open) })
	t.Run("results", func(t *testing.T) { testResults(t, open) })
	t.Run("workspace", func(t *testing.T) { testWorkspace(t, open) })
	t.Run("skills", func(t *testing.T) { testSkills(t, open) })
	t.Run("skill_changes_across_instances", func(t *testing.T) { testSkillChanges(t, open) })
	t.Run("skill_pins", func(t *testing.T) { testSkillPins(t, open) })
	t.Run("skill_listing", func(t *testing.T) { testSkillListing(t, open) })
	t.Run("tool_shapes", func(t *testing.T) { testToolShapes(t, open) })
	t.Run("search_links", func(t *testing.T) { testSearchLinks(t, open) })
	t.Run("memories", func(t *testing.T) { testMemories(t, open) })
	t.Run("recall", func(t *testing.T) { testRecall(t, open) })
	t.Run("update", func(t *testing.T) { testUpdate(t, open) })
	t.Run("concurrent_updates", func(t *testing.T) { testConcurrentUpdates(t, open) })
	t.Run("forget_by_filter", func(t *testing.T) { testForgetByFilter(t, open) })
	t.Run("memory_stats", func(t *testing.T) { testMemoryStats(t, open) })
	t.Run("graph", func(t *testing.T) { testGraph(t, open) })
	t.Run("graph_provenance", func(t *testing.T) { testGraphProvenance(t, open) })
	t.Run("read_provenance", func(t *testing.T) { testReadProvenance(t, open) })
	t.Run("tasks", func(t *testing.T) { testTasks(t, open) })
	t.Run("consolidate", func(t *testing.T) { testConsolidate(t, open) })
	t.Run("entity_links", func(t *testing.T) { testEntityLinks(t, open) })
	t.Run("tools", func(t *testing.T) { testTools(t, open) })
	t.Run("audit_listings", func(t *testing.T) { testAuditListings(t, open) })
	t.Run("result_listings", func(t *testing.T) { testResultListings(t, open) })
	t.Run("prune", func(t *testing.T) { testPrune(t, open) })
	t.Run("stats", func(t *testing.T) { testStats(t, open) })
	t.Run("reindex", func(t *testing.T) { testReindex(t, open) })
	t.Run("upgrade_offline", func(t *testing.T) { testUpgradeOffline(t, open) })
	t.Run("export_import", func(t *testing.T) { testExportImport(t, open) })
}

func wantCode(t *testing.T, err error, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("error = %v, want %v", err, sentinel)
	}
}

func testAudit(t *testing.T, open Opener) {
	st, _ := open(t)
	ctx := t.Context()
	e := memory.Execution{ID: "run-1", Principal: "alice", Session: "s1", Language: "javascript", Code: "return 1", Status: "running"}
	if err := st.RecordExecution(ctx, e); err != nil {
		t.Fatal(err)
	}
	e.Status, e.Duration, e.ToolCalls = "ok", 1500*time.Microsecond, 1
	if err := st.RecordExecution(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordToolCalls(ctx, memory.ToolCall{ExecutionID: "run-1", Tool: "http.get", Args: []byte(`{}`), Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, st.RecordToolCalls(ctx, memory.ToolCall{ExecutionID: "nope", Tool: "x", Status: "ok"}), memory.ErrNotFound)
	reqs := []memory.HTTPRequest{
		{ExecutionID: "run-1", Tool: "api.get", Method: "GET", Host: "example.com", Status: 503, Attempt: 1},
		{ExecutionID: "run-1", Tool: "api.get", Method: "GET", Host: "example.com", Status: 200, Attempt: 2},
	}
	if err := st.RecordHTTPRequests(ctx, reqs...); err != nil {
		t.Fatal(err)
	}
	wantCode(t, st.RecordHTTPRequests(ctx, memory.HTTPRequest{ExecutionID: "nope", Method: "GET", Host: "h"}), memory.ErrNotFound)
	got, err := st.HTTPRequests(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Status != 503 || got[1].Attempt != 2 {
		t.Fatalf("http requests = %+v", got)
	}
	rec, calls, err := st.GetExecution(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != "ok" || rec.Duration != 1500*time.Microsecond || rec.CodeHash != memory.Hash([]byte("return 1")) {
		t.Fatalf("execution = %+v", rec)
	}
	if len(calls) != 1 || calls[0].Tool != "http.get" || calls[0].ArgsHash != memory.Hash([]byte(`{}`)) {
		t.Fatalf("tool calls = %+v", calls)
	}
}

// testAuditBatch writes several runs' audits in one RecordAudit: each
// run's execution, calls and requests are kept; a batch with a call of a
// run that is not recorded keeps nothing of any run in it.
func testAuditBatch(t *testing.T, open Opener) {
	st, _ := open(t)
	ctx := t.Context()
	recs := []memory.AuditRecord{
		{Execution: memory.Execution{ID: "b-1", Principal: "alice", Language: "javascript", Code: "1", Status: "ok", ToolCalls: 2},
			ToolCalls:    []memory.ToolCall{{ExecutionID: "b-1", Tool: "util.echo", ArgsHash: "h1", Status: "ok"}, {ExecutionID: "b-1", Tool: "util.echo", ArgsHash: "h2", Status: "error", ErrorCode: "invalid_arguments"}},
			HTTPRequests: []memory.HTTPRequest{{ExecutionID: "b-1", Tool: "api.get", Method: "GET", Host: "example.com", Status: 200, Attempt: 1}}},
		{Execution: memory.Execution{ID: "b-2", Principal: "bob", Language: "javascript", Code: "2", Status: "error", ErrorKind: "timeout"}},
	}
	many := memory.AuditRecord{Execution: memory.Execution{ID: "b-many", Principal: "alice", Language: "javascript", Status: "ok", ToolCalls: 37}}
	for i := range 37 { // 32 + 4 + 1: statements of every size a store may use
		many.ToolCalls = append(many.ToolCalls, memory.ToolCall{ExecutionID: "b-many", Tool: "util.echo", ArgsHash: fmt.Sprint(i), Status: "ok"})
	}
	recs = append(recs, many)
	if err := st.RecordAudit(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	if _, calls, err := st.GetExecution(ctx, "b-many"); err != nil || len(calls) != 37 || calls[0].ArgsHash != "0" || calls[36].ArgsHash != "36" {
		t.Fatalf("b-many: %d calls, %v", len(calls), err)
	}
	e, calls, err := st.GetExecution(ctx, "b-1")
	if err != nil || e.Principal != "alice" || e.ToolCalls != 2 || len(calls) != 2 || calls[0].ArgsHash != "h1" || calls[1].ErrorCode != "invalid_arguments" {
		t.Fatalf("b-1 = %+v, %+v, %v", e, calls, err)
	}
	if reqs, err := st.HTTPRequests(ctx, "b-1"); err != nil || len(reqs) != 1 || reqs[0].Status != 200 {
		t.Fatalf("b-1 requests = %+v, %v", reqs, err)
	}
	if e, calls, err := st.GetExecution(ctx, "b-2"); err != nil || e.ErrorKind != "timeout" || len(calls) != 0 {
		t.Fatalf("b-2 = %+v, %+v, %v", e, calls, err)
	}
	bad := []memory.AuditRecord{
		{Execution: memory.Execution{ID: "b-3", Principal: "alice", Language: "javascript", Status: "ok"}},
		{Execution: memory.Execution{ID: "b-4", Principal: "alice", Language: "javascript", Status: "ok"},
			ToolCalls: []memory.ToolCall{{ExecutionID: "nope", Tool: "x", Status: "ok"}}},
	}
	wantCode(t, st.RecordAudit(ctx, bad...), memory.ErrNotFound)
	if _, _, err := st.GetExecution(ctx, "b-3"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("b-3 of a failed batch: %v, want not found", err)
	}
	wantCode(t, st.RecordAudit(ctx, memory.AuditRecord{}), memory.ErrInvalid)
}

func testResults(t *testing.T, open Opener) {
	st, _ := open(t)
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	data := []byte(`{"rows": [1, 2, 3]}`)
	info, err := st.PutResult(memory.WithProvenance(alice, json.RawMessage(`{"sources": ["crm"]}`)), memory.PutResultInput{Data: data})
	if err != nil {
		t.Fatal(err)
	}
	if info.Principal != "alice" || info.Size != int64(len(data)) || info.ContentType != "application/json" || info.Session != "s-alice" {
		t.Fatalf("info = %+v", info)
	}
	got, back, err := st.GetResult(alice, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(back) != string(data) || got.SHA256 != memory.Hash(data) || string(got.Provenance) != `{"sources":["crm"]}` {
		t.Fatalf("got %+v %s", got, back)
	}
	_, _, err = st.GetResult(bob, info.ID)
	wantCode(t, err, memory.ErrNotFound)
}

func testWorkspace(t *testing.T, open Opener) {
	st, _ := open(t)
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	fi, created, err := st.WriteFile(alice, "notes/todo.md", []byte("- ship\n"))
	if err != nil || !created || fi.Size != 7 {
		t.Fatalf("write: %+v %v %v", fi, created, err)
	}
	if _, created, err = st.WriteFile(alice, "notes/todo.md", []byte("- shipped\n")); err != nil || created {
		t.Fatalf("rewrite: created=%v err=%v", created, err)
	}
	if _, _, err := st.WriteFile(alice, "a.txt", []byte("a")); err != nil {
		t.Fatal(err)
	}
	_, data, err := st.ReadFile(alice, "notes/todo.md")
	if err != nil || string(data) != "- shipped\n" {
		t.Fatalf("read: %q %v", data, err)
	}
	_, _, err = st.ReadFile(bob, "notes/todo.md")
	wantCode(t, err, memory.ErrNotFound)
	if fi, err := st.StatFile(alice, "notes/todo.md"); err != nil || fi.Path != "notes/todo.md" || fi.Size != 10 || fi.SHA256 != memory.Hash([]byte("- shipped\n")) {
		t.Fatalf("stat: %+v %v", fi, err)
	}
	_, err = st.StatFile(bob, "notes/todo.md")
	wantCode(t, err, memory.ErrNotFound)
	_, err = st.StatFile(alice, "notes")
	wantCode(t, err, memory.ErrNotFound)
	_, err = st.StatFile(alice, "../etc/passwd")
	wantCode(t, err, memory.ErrInvalidPath)
	_, _, err = st.WriteFile(alice, "../etc/passwd", []byte("x"))
	wantCode(t, err, memory.ErrInvalidPath)
	ls, err := st.ListFiles(alice, "notes/")
	if err != nil || ls.Count != 1 || ls.Files[0].Path != "notes/todo.md" || ls.TotalBytes != 11 {
		t.Fatalf("list: %+v %v", ls, err)
	}
	all, err := st.ListFiles(alice, "")
	if err != nil || all.Count != 2 || all.Files[0].Path != "a.txt" {
		t.Fatalf("list all: %+v %v", all, err)
	}
	removed, err := st.RemoveFile(alice, "a.txt")
	if err != nil || !removed {
		t.Fatalf("remove: %v %v", removed, err)
	}
	if removed, _ = st.RemoveFile(alice, "a.txt"); removed {
		t.Fatal("removed twice")
	}
}

func testSkills(t *testing.T, open Opener) {
	st, _ := open(t)
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	var mu sync.Mutex
	var changes []memory.SkillChange
	cancel := st.OnSkillChange(func(c memory.SkillChange) {
		mu.Lock()
		changes = append(changes, c)
		mu.Unlock()
	})
	defer cancel()
	sk, err := st.SaveSkill(alice, memory.Skill{Name: "greet", Description: "Say hello", Code: "return 'hi'",
		InputSchema: json.RawMessage(`{"type": "object"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if sk.Owner != "alice" || sk.Version != 1 || sk.Language != "javascript" || string(sk.InputSchema) != `{"type":"object"}` {
		t.Fatalf("saved %+v", sk)
	}
	if sk, err = st.SaveSkill(alice, memory.Skill{Name: "greet", Description: "Say hello", Code: "return 'hello'"}); err != nil || sk.Version != 2 {
		t.Fatalf("resave: %+v %v", sk, err)
	}
	_, err = st.SaveSkill(alice, memory.Skill{Name: "Bad-Name", Description: "x", Code: "1"})
	wantCode(t, err, memory.ErrInvalid)
	_, err = st.GetSkill(bob, "greet")
	wantCode(t, err, memory.ErrNotFound)
	callable, err := st.ListCallableSkills(bob, memory.SkillQuery{})
	if err != nil || len(callable.Skills) != 0 {
		t.Fatalf("bob callable before publish: %+v %v", callable, err)
	}
	snap, err := st.PublishSkill(alice, "greet")
	if err != nil || !snap.Snapshot || snap.PublishedVersion != 2 {
		t.Fatalf("publish: %+v %v", snap, err)
	}
	if _, err := st.SaveSkill(bob, memory.Skill{Name: "greet", Description: "Bob's", Code: "return 'yo'"}); err != nil {
		t.Fatal(err)
	}
	_, err = st.PublishSkill(bob, "greet")
	wantCode(t, err, memory.ErrConflict)
	err = st.UnpublishSkill(bob, "greet")
	wantCode(t, err, memory.ErrConflict)
	callable, err = st.ListCallableSkills(bob, memory.SkillQuery{})
	if err != nil || len(callable.Skills) != 1 || callable.Skills[0].Owner != "bob" {
		t.Fatalf("bob's own skill shadows the published one: %+v %v", callable, err)
	}
	if err := st.DeleteSkill(bob, "greet"); err != nil {
		t.Fatal(err)
	}
	callable, err = st.ListCallableSkills(bob, memory.SkillQuery{})
	if err != nil || len(callable.Skills) != 1 || callable.Skills[0].Owner != "alice" || !callable.Skills[0].Snapshot || callable.Skills[0].CodeSHA256 != memory.Hash([]byte("return 'hello'")) {
		t.Fatalf("bob callable after publish: %+v %v", callable, err)
	}
	if err := st.UnpublishSkill(alice, "greet"); err != nil {
		t.Fatal(err)
	}
	pub, err := st.PublishedSkills(alice)
	if err != nil || len(pub) != 0 {
		t.Fatalf("published after unpublish: %+v %v", pub, err)
	}
	mu.Lock()
	defer mu.Unlock()
	kinds := ""
	for _, c := range changes {
		kinds += string(c.Kind) + " "
	}
	if want := "saved saved published saved deleted unpublished "; kinds != want {
		t.Fatalf("changes = %q, want %q", kinds, want)
	}
	for i := 1; i < len(changes); i++ {
		if changes[i].Version <= changes[i-1].Version {
			t.Fatalf("versions not increasing: %+v", changes)
		}
	}
	if last := changes[len(changes)-1]; !last.Everyone || !last.Deleted || last.Principal != "alice" {
		t.Fatalf("unpublish change = %+v", last)
	}
}

// testSkillChanges: a skill saved through one instance is heard of by
// another on the same database within a second (issue 14).
func testSkillChanges(t *testing.T, open Opener) {
	a, second := open(t)
	if second == nil {
		t.Skip("this backend has no second instance")
	}
	b := second()
	heard := make(chan memory.SkillChange, 8)
	defer b.OnSkillChange(func(c memory.SkillChange) { heard <- c })()
	if _, err := a.SaveSkill(as(t.Context(), "alice"), memory.Skill{Name: "shared", Description: "d", Code: "1"}); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-heard:
		if c.Name != "shared" || c.Kind != memory.SkillSaved || c.Principal != "alice" {
			t.Fatalf("heard %+v", c)
		}
	case <-time.After(time.Second):
		t.Fatal("the other instance did not hear of the saved skill within a second")
	}
	sk, err := b.GetSkill(as(t.Context(), "alice"), "shared")
	if err != nil || sk.Code != "1" {
		t.Fatalf("other instance reads %+v %v", sk, err)
	}
}

func testToolShapes(t *testing.T, open Opener) {
	st, _ := open(t)
	ctx := t.Context()
	if err := st.PutToolShape(ctx, "github", "search", json.RawMessage(`{ "type": "object" }`)); err != nil {
		t.Fatal(err)
	}
	if err := st.PutToolShape(ctx, "github", "search", json.RawMessage(`{"type": "array"}`)); err != nil {
		t.Fatal(err)
	}
	wantCode(t, st.PutToolShape(ctx, "github", "bad", json.RawMessage(`{`)), memory.ErrInvalid)
	got, err := st.ToolShapes(ctx, "github")
	if err != nil || len(got) != 1 || string(got["search"]) != `{"type":"array"}` {
		t.Fatalf("shapes = %v %v", got, err)
	}
}

func testMemories(t *testing.T, open Opener) {
	st, _ := open(t)
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	m, err := st.Remember(memory.WithProvenance(alice, json.RawMessage(`{"sources":["wiki"]}`)), memory.RememberInput{
		Content: "The billing service deploys with make deploy-billing", Layer: memory.Procedural,
		Tags: []string{"Billing", "deploy"}, Entities: []string{"billing-service"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.ID == 0 || m.Layer != memory.Procedural || fmt.Sprint(m.Tags) != "[billing deploy]" || string(m.Metadata) != "{}" ||
		m.Importance != 0.5 || fmt.Sprint(m.Entities) != "[billing-service]" || string(m.Provenance) != `{"sources":["wiki"]}` {
		t.Fatalf("remembered %+v", m)
	}
	got, err := st.Get(alice, m.ID)
	if err != nil || got.Content != m.Content || got.AccessCount != 1 {
		t.Fatalf("get: %+v %v", got, err)
	}
	_, err = st.Get(bob, m.ID)
	wantCode(t, err, memory.ErrNotFound)
	_, err = st.Remember(alice, memory.RememberInput{Content: ""})
	wantCode(t, err, memory.ErrInvalid)
	res, err := st.Forget(bob, memory.ForgetInput{IDs: []int64{m.ID}})
	if err != nil || res.Deleted != 0 || len(res.NotFound) != 1 {
		t.Fatalf("bob forgets alice's memory: %+v %v", res, err)
	}
	if res, err = st.Forget(alice, memory.ForgetInput{IDs: []int64{m.ID}}); err != nil || res.Deleted != 1 {
		t.Fatalf("forget: %+v %v", res, err)
	}
	_, err = st.Get(alice, m.ID)
	wantCode(t, err, memory.ErrNotFound)
}

func testRecall(t *testing.T, open Opener) {
	st, _ := open(t)
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	facts := []string{
		"Postgres replicas lag behind the primary during bulk loads",
		"The office coffee machine is descaled every Friday",
		"Deploy the billing service with make deploy-billing",
		"Alice prefers tabs over spaces in Go code",
	}
	for _, f := range facts {
		if _, err := st.Remember(alice, memory.RememberInput{Content: f}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Remember(bob, memory.RememberInput{Content: "Bob's secret: billing deploys need a ticket"}); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{memory.ModeHybrid, memory.ModeVector, memory.ModeKeyword} {
		t.Run(mode, func(t *testing.T) {
			res, err := st.Recall(alice, memory.RecallInput{Query: "how do I deploy billing", Mode: mode, Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Results) == 0 || res.Results[0].Content != facts[2] {
				t.Fatalf("top hit = %+v", res.Results)
			}
			for _, h := range res.Results {
				if h.Content == "Bob's secret: billing deploys need a ticket" {
					t.Fatal("alice recalled bob's memory")
				}
			}
			if mode == memory.ModeHybrid && (res.Results[0].VectorRank == 0 || res.Results[0].KeywordRank == 0) {
				t.Fatalf("hybrid top hit was not in both lists: %+v", res.Results[0])
			}
		})
	}
	res, err := st.Recall(bob, memory.RecallInput{Query: "coffee machine", Mode: memory.ModeKeyword})
	if err != nil || len(res.Results) != 0 {
		t.Fatalf("bob's keyword recall sees alice's words: %+v %v", res.Results, err)
	}
	_, err = st.Recall(alice, memory.RecallInput{Query: "  "})
	wantCode(t, err, memory.ErrInvalid)
}
