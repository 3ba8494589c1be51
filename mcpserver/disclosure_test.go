package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/vfs"
)

// toolsListBytes is the size of a tools/list result as a client receives it.
func toolsListBytes(t *testing.T, expose mcpserver.Expose) int {
	t.Helper()
	srv := catalogServer(t, mcpserver.Config{Expose: expose})
	c := start(t, transports[0].connect(t, srv))
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestDisclosureBudgets measures what an agent pays for the testdata
// catalogue in code mode against direct mode, and holds the design's
// budgets. With CODECELL_DISCLOSURE_REPORT=FILE it also writes the
// Markdown table the README shows (make bench-disclosure).
func TestDisclosureBudgets(t *testing.T) {
	direct := toolsListBytes(t, mcpserver.ExposeDirect)
	code := toolsListBytes(t, mcpserver.ExposeCode)

	srv := catalogServer(t, mcpserver.Config{})
	c := start(t, transports[0].connect(t, srv))
	read := func(p string) int {
		return len(text(callTool(t, c, "read_tools", map[string]any{"path": p})))
	}
	manifest := read("/manifest.json")
	index := read("/github/index.json")
	sig := read("/github/search_issues.d.ts")
	full := read("/github/search_issues.md")
	path := manifest + index + sig

	fsys := vfs.New(srv.Registry())
	st := fsys.Stats()

	pct := func(n int) float64 { return 100 * float64(n) / float64(direct) }
	var b strings.Builder
	fmt.Fprintf(&b, "Catalogue: testdata/catalog plus the built-in tools, %d tools in %d categories.\n\n", st.Tools, st.Categories)
	fmt.Fprintf(&b, "| what the agent reads | bytes | ~tokens | vs direct tools/list |\n|---|---:|---:|---:|\n")
	row := func(what string, n int) {
		fmt.Fprintf(&b, "| %s | %d | %d | %.1f%% |\n", what, n, tools.EstimateTokens(n), pct(n))
	}
	row("`tools/list`, direct mode (every tool with its schemas)", direct)
	row("`tools/list`, code mode (execute_code, read_tools, search_tools)", code)
	row("level 0: `/manifest.json`", manifest)
	row("level 1: `/github/index.json`", index)
	row("level 2: `/github/search_issues.d.ts`", sig)
	row("level 3: `/github/search_issues.md`", full)
	row("manifest → index → signature, for github.search_issues", path)
	row(fmt.Sprintf("manifest → index → signature, worst tool (median %d)", st.Path.Median), st.Path.Max)
	fmt.Fprintf(&b, "\nPer level over the whole catalogue:\n\n")
	if err := st.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	if out := os.Getenv("CODECELL_DISCLOSURE_REPORT"); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	if manifest > 1024 {
		t.Errorf("manifest is %d bytes; the budget is 1 KB", manifest)
	}
	if code > 3000 {
		t.Errorf("code-mode tools/list is %d bytes; the budget is 3 KB", code)
	}
	if p := pct(st.Path.Max); p > 6 {
		t.Errorf("manifest → index → signature takes up to %.1f%% of direct mode's tools/list; the budget is 6%%", p)
	}
}
