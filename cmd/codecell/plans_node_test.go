package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/sqlite"
)

// TestTypeScriptSDKPlans drives dry runs, memoisation and the cache with
// the official TypeScript SDK's client as the host, over Streamable HTTP,
// as two principals (testdata/sdk/plans.mjs): a plan of three workspace
// writes shown with filtered arguments and nothing written, committed
// once and in order, a second commit and another principal's refused, an
// expired plan refused (a second server with a one-second plan_ttl), a
// destructive step approved or declined at commit, memoised calls of the
// reference filesystem server counted in the trace, and cache.set, get
// and delete across runs. Then it reads the audit log the server left.
func TestTypeScriptSDKPlans(t *testing.T) {
	t.Parallel()
	node(t)
	upNode, upDir := upstreamNode(t)
	const alice, bob = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
	catalog, err := filepath.Abs(filepath.Join("..", "..", "testdata", "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	mcpConfig := filepath.Join(t.TempDir(), "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		// Its read-only tools are memoised and not asked about: the
		// configuration trusts its annotations.
		"fs": map[string]any{"command": upNode, "args": []string{serverScript(upDir, "server-filesystem"), work}, "trust_annotations": true},
	}})
	if err := os.WriteFile(mcpConfig, b, 0o600); err != nil {
		t.Fatal(err)
	}
	config := func(planTTL string) string {
		path := filepath.Join(t.TempDir(), "codecell.toml")
		if err := os.WriteFile(path, []byte(`
[sandbox]
plan_ttl = "`+planTTL+`"

[approval]
required_for = ["destructive"]

[cache.memoize]
"fs.read_text_file" = "10m"

[[auth.tokens]]
principal = "alice"
token = "`+alice+`"

[[auth.tokens]]
principal = "bob"
token = "`+bob+`"
`), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	srv := serveUpstreams(t, nil, "--config", config("1h"), "--catalog", catalog, "--mcp-config", mcpConfig)
	short := serveUpstreams(t, nil, "--config", config("1s"), "--catalog", catalog)

	out, err := runNode(t, 3*time.Minute, "plans.mjs", srv.base+"/mcp", short.base+"/mcp", alice, bob, work)
	t.Logf("%s", out)
	if err != nil {
		t.Errorf("TypeScript SDK client: %v", err)
	}
	for _, check := range []string{
		"plan: three writes shown, filtered, nothing written",
		"plan: another principal's plan_id is not found",
		"plan: committed exactly once, in order",
		"plan: a second commit is refused",
		"plan: an expired plan is refused",
		"plan: a destructive step asks approval at commit (decline)",
		"plan: a destructive step asks approval at commit (accept)",
		"sampling and elicitation in a run",
		"memoize: cached calls counted in the trace",
		"cache: set, get and delete across runs",
	} {
		if !strings.Contains(out, `"check":"`+check+`","ok":true`) {
			t.Errorf("check %q did not pass", check)
		}
	}

	// The audit log: the server writes it off the request path and
	// flushes it when it stops.
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := srv.cmd.Wait(); err != nil {
		t.Fatalf("server exit: %v\n%s", err, srv.log)
	}
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(srv.data, "codecell.db"), ReadOnly: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkPlansAudit(t, st)
}

// checkPlansAudit checks what the audit log shows of plans.mjs's runs.
func checkPlansAudit(t *testing.T, st *sqlite.Store) {
	t.Helper()
	who := "alice"
	execs, err := st.ListExecutions(t.Context(), memory.ExecutionQuery{Principal: &who, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	// Each plan is one dry run and its commits, linked by the plan's hash.
	byPlan := map[string][]string{}
	for _, e := range execs {
		if e.PlanHash != "" {
			byPlan[e.PlanHash] = append(byPlan[e.PlanHash], e.Mode+"/"+e.Status+"/"+e.ErrorKind)
		}
	}
	var shapes []string
	for _, modes := range byPlan {
		shapes = append(shapes, strings.Join(slices.Sorted(slices.Values(modes)), " "))
	}
	for _, want := range []string{
		"commit/error/plan_committed commit/ok/ plan/ok/", // the three writes: committed, then refused
		"commit/error/plan_step_failed plan/ok/",          // the destructive step declined
		"commit/ok/ plan/ok/",                             // and accepted
	} {
		if !slices.Contains(shapes, want) {
			t.Errorf("no plan audited as %q; plans: %q", want, shapes)
		}
	}
	// Bob's try at alice's plan is audited as his.
	who = "bob"
	bobs, err := st.ListExecutions(t.Context(), memory.ExecutionQuery{Principal: &who, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	tried := 0
	for _, e := range bobs {
		if _, alices := byPlan[e.PlanHash]; alices && e.Mode == "commit" && e.ErrorKind == "plan_not_found" {
			tried++
		}
	}
	if tried != 1 {
		t.Errorf("%d of bob's commits of alice's plans audited, want 1", tried)
	}

	calls := func(tool string) []memory.ToolCall {
		t.Helper()
		cs, err := st.ListToolCalls(t.Context(), memory.ToolCallQuery{Tool: tool, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	count := func(cs []memory.ToolCall, keep func(memory.ToolCall) bool) int {
		n := 0
		for _, c := range cs {
			if keep(c) {
				n++
			}
		}
		return n
	}
	writes := calls("workspace.write")
	if n := count(writes, func(c memory.ToolCall) bool { return c.Planned }); n != 3 {
		t.Errorf("%d planned workspace.write calls audited, want 3", n)
	}
	if n := count(writes, func(c memory.ToolCall) bool { return !c.Planned && c.Status == "ok" }); n != 3 {
		t.Errorf("%d committed workspace.write calls audited, want 3", n)
	}
	reads := calls("fs.read_text_file")
	if n := count(reads, func(c memory.ToolCall) bool { return c.Cached }); n != 5 {
		t.Errorf("%d cached fs.read_text_file calls audited, want 5 (1 + 3 of alice's, 1 of bob's)", n)
	}
	if n := count(reads, func(c memory.ToolCall) bool { return !c.Cached }); n != 4 {
		t.Errorf("%d fs.read_text_file calls made audited, want 4", n)
	}
	for _, tool := range []string{"llm.call", "approval.request"} {
		if n := count(calls(tool), func(c memory.ToolCall) bool { return c.Status == "ok" }); n != 1 {
			t.Errorf("%d %s calls audited, want 1", n, tool)
		}
	}
	deletes := calls("crm.delete_contact")
	if n := count(deletes, func(c memory.ToolCall) bool { return c.Status == "error" && c.ErrorCode == "approval_declined" }); n != 1 {
		t.Errorf("%d declined crm.delete_contact calls audited, want 1: %+v", n, deletes)
	}
	if n := count(deletes, func(c memory.ToolCall) bool { return c.Status == "ok" && !c.Planned }); n != 1 {
		t.Errorf("%d crm.delete_contact calls made audited, want 1: %+v", n, deletes)
	}
	if n := count(deletes, func(c memory.ToolCall) bool { return c.Status == "approved" }); n != 1 {
		t.Errorf("%d approvals of crm.delete_contact audited, want 1: %+v", n, deletes)
	}
	for _, tool := range []string{"cache.set", "cache.get", "cache.delete"} {
		if len(calls(tool)) == 0 {
			t.Errorf("no %s call audited", tool)
		}
	}
}
