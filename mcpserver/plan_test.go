package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
)

// clock is a settable clock for the store, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testSource is a tool source for these tests that counts its calls:
// test.count (read-only), test.touch (a write), test.append (a write that
// keeps its values in order), test.fail (a write that fails) and
// test.secret (read-only, returns an API key) and test.hold (a write that
// holds until its call is cancelled).
type testSource struct {
	held     chan struct{} // test.hold says here that it holds
	counts   sync.Map      // tool → *atomic.Int64
	mu       sync.Mutex
	appended []string
}

const testSecret = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"

func (ts *testSource) calls(tool string) int64 {
	n, _ := ts.counts.LoadOrStore(tool, new(atomic.Int64))
	return n.(*atomic.Int64).Load()
}

func (ts *testSource) tools() []tools.Tool {
	count := func(tool string) int64 {
		n, _ := ts.counts.LoadOrStore(tool, new(atomic.Int64))
		return n.(*atomic.Int64).Add(1)
	}
	counted := func(name string, ro bool) tools.Tool {
		return tools.Tool{Name: name, Summary: "Counts its calls.", Annotations: tools.Annotations{ReadOnly: ro},
			InputSchema: json.RawMessage(`{"type": "object"}`),
			Handler: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
				return json.Marshal(map[string]any{"calls": count(name), "args": args})
			}}
	}
	return []tools.Tool{
		counted("test.count", true),
		counted("test.touch", false),
		{Name: "test.append", Summary: "Appends a value.", Positional: []string{"v"},
			InputSchema: json.RawMessage(`{"type": "object", "properties": {"v": {"type": "string"}}, "required": ["v"]}`),
			Handler: func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
				var in struct {
					V string `json:"v"`
				}
				json.Unmarshal(args, &in)
				ts.mu.Lock()
				defer ts.mu.Unlock()
				ts.appended = append(ts.appended, in.V)
				return json.Marshal(map[string]int{"length": len(ts.appended)})
			}},
		{Name: "test.hold", Summary: "Holds until its call is cancelled.",
			Handler: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				count("test.hold")
				ts.held <- struct{}{}
				<-ctx.Done()
				return nil, ctx.Err()
			}},
		{Name: "test.fail", Summary: "Always fails.", Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			count("test.fail")
			return nil, tools.Errorf("upstream_error", "the service said no")
		}},
		{Name: "test.secret", Summary: "Returns an API key.", Annotations: tools.Annotations{ReadOnly: true},
			Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return json.Marshal(map[string]string{"api_key": testSecret, "name": "billing"})
			}},
	}
}

func (ts *testSource) values() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.appended...)
}

type planEnv struct {
	srv   *mcpserver.Server
	store *sqlite.Store
	clock *clock
	src   *testSource
	url   string
}

// planServer serves, over Streamable HTTP, a server with a store on a
// settable clock and the test source, for alice and bob.
func planServer(t testing.TB, cfg mcpserver.Config) *planEnv {
	t.Helper()
	clk := &clock{t: time.Now()}
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "db"), Now: clk.now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	src := &testSource{held: make(chan struct{}, 1)}
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := st.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(src.tools()...); err != nil {
		t.Fatal(err)
	}
	cfg.Store = st
	cfg.Auth = []mcpserver.Token{{Principal: "alice", Token: aliceToken}, {Principal: "bob", Token: bobToken}}
	srv, err := mcpserver.New(forTests(t, cfg), reg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
		st.Close()
	})
	return &planEnv{srv: srv, store: st, clock: clk, src: src, url: ts.URL + "/mcp"}
}

// commit sends execute_code {plan_id} and decodes the record.
func commit(t *testing.T, c *client.Client, planID string) *engine.Record {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = "execute_code"
	req.Params.Arguments = map[string]any{"plan_id": planID}
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var rec engine.Record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("not a record: %v\n%s", err, b)
	}
	if res.IsError != (rec.Status != executor.StatusOK) {
		t.Fatalf("isError %v for status %s", res.IsError, rec.Status)
	}
	return &rec
}

func wantKindRec(t *testing.T, rec *engine.Record, kind executor.Kind) {
	t.Helper()
	if rec == nil || rec.Status != executor.StatusError || rec.Error == nil || rec.Error.Kind != kind {
		t.Fatalf("record %+v: want error kind %s", rec, kind)
	}
}

type shownStep struct {
	Step      int             `json:"step"`
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args"`
	Status    string          `json:"status"`
	ErrorCode string          `json:"error_code"`
}

func steps(t *testing.T, rec *engine.Record) []shownStep {
	t.Helper()
	if rec.Plan == nil {
		t.Fatalf("record has no plan: %+v", rec)
	}
	var out []shownStep
	if err := json.Unmarshal(rec.Plan.Steps, &out); err != nil {
		t.Fatalf("steps %s: %v", rec.Plan.Steps, err)
	}
	return out
}

func statuses(ss []shownStep) string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Status+":"+s.ErrorCode)
	}
	return strings.Join(out, " ")
}

const threeWrites = `
const key = (await test.secret({})).api_key;
const a = await workspace.write({path: "a.txt", data: "one"});
const b = await workspace.write("b.txt", "two");
const c = await workspace.write({path: "c.txt", data: key});
const files = (await workspace.list({})).files ?? [];
return {a, b, c, files: files.length};`

// TestPlanAndCommit: a dry run shows its three writes, filtered, makes
// none, and gives the program placeholders; the commit makes them in
// order, once; a second commit, another principal's, and an expired
// plan's are refused.
func TestPlanAndCommit(t *testing.T) {
	env := planServer(t, mcpserver.Config{Plans: engine.PlanConfig{TTL: time.Hour}})
	alice := authedClient(t, env.url, aliceToken)
	bob := authedClient(t, env.url, bobToken)
	aliceCtx := tools.WithCaller(t.Context(), tools.Caller{Principal: "alice"})

	res, rec := execute(t, alice, map[string]any{"code": threeWrites, "mode": "plan"})
	if rec == nil || rec.Status != executor.StatusOK {
		t.Fatalf("plan run: %s", text(res))
	}
	body := text(res)
	if strings.Contains(body, testSecret) {
		t.Fatalf("the plan shows the secret: %s", body)
	}
	if rec.Plan.ID == "" || rec.Plan.ExpiresAt == nil {
		t.Fatalf("no plan id or expiry: %+v", rec.Plan)
	}
	planned := steps(t, rec)
	if len(planned) != 3 {
		t.Fatalf("plan has %d steps, want 3: %s", len(planned), rec.Plan.Steps)
	}
	for i, want := range []string{`"path":"a.txt"`, `"path":"b.txt"`, `"path":"c.txt"`} {
		if planned[i].Tool != "workspace.write" || planned[i].Step != i+1 || !strings.Contains(string(planned[i].Args), want) {
			t.Errorf("step %d: %+v, want workspace.write with %s", i+1, planned[i], want)
		}
	}
	if !strings.Contains(string(planned[2].Args), "⟦") {
		t.Errorf("step 3's secret is not a token: %s", planned[2].Args)
	}
	var result struct {
		A, B, C struct {
			Planned bool `json:"planned"`
			ID      int  `json:"id"`
		}
		Files int `json:"files"`
	}
	if err := json.Unmarshal(rec.Result, &result); err != nil {
		t.Fatalf("result %s: %v", rec.Result, err)
	}
	if !result.A.Planned || result.A.ID != 1 || result.C.ID != 3 || result.Files != 0 {
		t.Fatalf("the program saw %s; want placeholders 1..3 and no files", rec.Result)
	}
	if _, _, err := env.store.ReadFile(aliceCtx, "a.txt"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("a dry run wrote a.txt: %v", err)
	}

	t.Run("another principal's plan is not found", func(t *testing.T) {
		wantKindRec(t, commit(t, bob, rec.Plan.ID), engine.KindPlanNotFound)
	})
	t.Run("commit", func(t *testing.T) {
		done := commit(t, alice, rec.Plan.ID)
		if done.Status != executor.StatusOK {
			t.Fatalf("commit: %+v %+v", done, done.Error)
		}
		if got := statuses(steps(t, done)); got != "ok: ok: ok:" {
			t.Fatalf("outcomes %s", got)
		}
		// The results, in order: as a table when the record chose one.
		shown := string(done.Result) + done.Table
		if a, c := strings.Index(shown, "a.txt"), strings.Index(shown, "c.txt"); a < 0 || c < a {
			t.Fatalf("results %s: want the three writes in order", shown)
		}
		for path, want := range map[string]string{"a.txt": "one", "b.txt": "two", "c.txt": testSecret} {
			_, data, err := env.store.ReadFile(aliceCtx, path)
			if err != nil || string(data) != want {
				t.Errorf("%s: %q, %v; want %q", path, data, err, want)
			}
		}
	})
	t.Run("second commit refused", func(t *testing.T) {
		_, again := execute(t, alice, map[string]any{"plan_id": rec.Plan.ID})
		wantKindRec(t, again, engine.KindPlanCommitted)
	})
	t.Run("expired", func(t *testing.T) {
		_, p := execute(t, alice, map[string]any{"code": `await test.append("late"); return 1`, "mode": "plan"})
		env.clock.add(time.Hour + time.Second)
		wantKindRec(t, commit(t, alice, p.Plan.ID), engine.KindPlanExpired)
		if got := env.src.values(); len(got) != 0 {
			t.Fatalf("an expired plan wrote %v", got)
		}
	})
	t.Run("audit", func(t *testing.T) {
		env.srv.Close() // flushes the audit log
		who := "alice"
		execs, err := env.store.ListExecutions(t.Context(), memory.ExecutionQuery{Principal: &who})
		if err != nil {
			t.Fatal(err)
		}
		modes := map[string]int{}
		// The audit log names a plan by the hash of the store's id, the
		// part of the plan id before its secret.
		storeID, _, _ := strings.Cut(rec.Plan.ID, ".")
		hash := memory.PlanIDHash(storeID)
		for _, e := range execs {
			if e.PlanHash == hash {
				modes[e.Mode+"/"+e.ErrorKind]++
			}
		}
		if modes["plan/"] != 1 || modes["commit/"] != 1 || modes["commit/plan_committed"] != 1 || len(modes) != 3 {
			t.Fatalf("audit records of the plan by mode: %v; want one plan, one commit, one commit refused", modes)
		}
		// Bob's try is audited as his.
		who = "bob"
		execs, err = env.store.ListExecutions(t.Context(), memory.ExecutionQuery{Principal: &who})
		if err != nil {
			t.Fatal(err)
		}
		if len(execs) != 1 || execs[0].Mode != "commit" || execs[0].PlanHash != hash || execs[0].ErrorKind != string(engine.KindPlanNotFound) {
			t.Fatalf("bob's audit records: %+v; want his refused commit", execs)
		}
	})
}

func TestPlanInvalidRequests(t *testing.T) {
	env := planServer(t, mcpserver.Config{})
	alice := authedClient(t, env.url, aliceToken)
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"code and plan_id", map[string]any{"code": "1", "plan_id": "plan_x"}},
		{"plan mode and plan_id", map[string]any{"mode": "plan", "plan_id": "plan_x"}},
		{"neither", map[string]any{"mode": "plan"}},
		{"unknown mode", map[string]any{"code": "1", "mode": "later"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, rec := execute(t, alice, c.args)
			wantKindRec(t, rec, executor.KindInvalidRequest)
		})
	}
	t.Run("unknown plan", func(t *testing.T) {
		wantKindRec(t, commit(t, alice, "plan_doesnotexist"), engine.KindPlanNotFound)
	})
}

// TestPlanConcurrentCommits: of two commits of one plan at once, exactly
// one runs the writes.
func TestPlanConcurrentCommits(t *testing.T) {
	env := planServer(t, mcpserver.Config{})
	alice := authedClient(t, env.url, aliceToken)
	alice2 := authedClient(t, env.url, aliceToken)
	_, rec := execute(t, alice, map[string]any{"code": `await test.append("x"); await test.append("y"); return "planned"`, "mode": "plan"})
	if rec.Plan == nil || rec.Plan.ID == "" {
		t.Fatalf("no plan: %+v", rec)
	}
	recs := make([]*engine.Record, 2)
	var wg sync.WaitGroup
	for i, c := range []*client.Client{alice, alice2} {
		wg.Go(func() { recs[i] = commit(t, c, rec.Plan.ID) })
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, r := range recs {
		switch {
		case r.Status == executor.StatusOK:
			ok++
		case r.Error != nil && r.Error.Kind == engine.KindPlanCommitted:
			refused++
		}
	}
	if ok != 1 || refused != 1 {
		t.Fatalf("%d commits ran, %d refused; want 1 and 1", ok, refused)
	}
	if got := strings.Join(env.src.values(), ","); got != "x,y" {
		t.Fatalf("writes made: %s, want x,y once", got)
	}
}

// TestPlanStopsAtFirstFailure: a commit stops at the step that fails, and
// says which ran.
func TestPlanStopsAtFirstFailure(t *testing.T) {
	env := planServer(t, mcpserver.Config{})
	alice := authedClient(t, env.url, aliceToken)
	_, rec := execute(t, alice, map[string]any{"code": `await test.append("1"); await test.fail({}); await test.append("3"); return 0`, "mode": "plan"})
	if env.src.calls("test.fail") != 0 {
		t.Fatal("the dry run called test.fail")
	}
	done := commit(t, alice, rec.Plan.ID)
	wantKindRec(t, done, engine.KindPlanStepFailed)
	if got := statuses(steps(t, done)); got != "ok: error:upstream_error not_run:" {
		t.Fatalf("outcomes %s: %s", got, done.Error.Message)
	}
	if !strings.Contains(done.Error.Message, "step 2 of 3") {
		t.Fatalf("message %q does not name the step", done.Error.Message)
	}
	if got := strings.Join(env.src.values(), ","); got != "1" {
		t.Fatalf("writes made: %s, want 1 only", got)
	}
}

// TestPlanRecordsSkillWrites: a skill's writes in a dry run are recorded
// too, and its reads run.
func TestPlanRecordsSkillWrites(t *testing.T) {
	env := planServer(t, mcpserver.Config{})
	alice := authedClient(t, env.url, aliceToken)
	_, rec := execute(t, alice, map[string]any{"code": `return await skills.save({name: "stamp", description: "Stamp.", code: "const n = (await test.count({})).calls; await test.append('s' + n); return n"})`})
	if rec.Status != executor.StatusOK {
		t.Fatalf("save skill: %+v", rec.Error)
	}
	_, rec = execute(t, alice, map[string]any{"code": `return await skills.stamp({})`, "mode": "plan"})
	if rec.Status != executor.StatusOK {
		t.Fatalf("plan: %+v", rec.Error)
	}
	ss := steps(t, rec)
	if len(ss) != 1 || ss[0].Tool != "test.append" || !strings.Contains(string(ss[0].Args), `"s1"`) {
		t.Fatalf("steps %s: want the skill's test.append", rec.Plan.Steps)
	}
	if env.src.calls("test.count") != 1 || len(env.src.values()) != 0 {
		t.Fatalf("the skill's read ran %d times, writes %v", env.src.calls("test.count"), env.src.values())
	}
}

// TestPlanCommitEndsWhenItsClientLeaves: a commit whose client gives up
// while a step runs still records its steps' outcomes and its end, so the
// plan does not stay committing with its steps' arguments (attack9 D1).
func TestPlanCommitEndsWhenItsClientLeaves(t *testing.T) {
	env := planServer(t, mcpserver.Config{})
	alice := authedClient(t, env.url, aliceToken)
	_, rec := execute(t, alice, map[string]any{"code": `await test.append("1"); await test.hold({}); await test.append("3"); return 0`, "mode": "plan"})
	if rec.Plan == nil {
		t.Fatalf("no plan: %+v", rec)
	}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-env.src.held
		cancel()
	}()
	req := mcp.CallToolRequest{}
	req.Params.Name = "execute_code"
	req.Params.Arguments = map[string]any{"plan_id": rec.Plan.ID}
	if _, err := alice.CallTool(ctx, req); err == nil {
		t.Fatal("the commit answered although its client gave up")
	}
	storeID, _, _ := strings.Cut(rec.Plan.ID, ".")
	as := tools.WithCaller(t.Context(), tools.Caller{Principal: "alice"})
	var p memory.Plan
	for deadline := time.Now().Add(20 * time.Second); ; {
		var err error
		if p, err = env.store.GetPlan(as, storeID); err != nil {
			t.Fatal(err)
		}
		if p.State != memory.PlanCommitting || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p.State != memory.PlanFailed {
		t.Fatalf("plan state %q, want %q", p.State, memory.PlanFailed)
	}
	var got []string
	for _, st := range p.Steps {
		got = append(got, st.Status)
		if len(st.Args) != 0 {
			t.Errorf("step %d keeps %d bytes of arguments", st.Seq, len(st.Args))
		}
	}
	if want := []string{memory.StepOK, memory.StepError, memory.StepNotRun}; !slices.Equal(got, want) {
		t.Fatalf("step outcomes %v, want %v", got, want)
	}
}
