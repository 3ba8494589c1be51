package security

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMetricsNameNoHiddenTool (issue 19, attack9's D8): /metrics takes
// any principal's token and labelled codecell_tool_calls_total by tool,
// whoever called it: bob, whose toolset denies crm.*, read
// codecell_tool_calls_total{status="ok",tool="crm.search_contacts"} after
// alice's call — what /readyz stopped showing in the third round (L7). A
// principal now reads the series of the tools it sees; one that sees
// every tool (alice here; a token of its own for Prometheus) reads them
// all, and the server's other series stay.
func TestMetricsNameNoHiddenTool(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte("[access.principal.bob]\ndeny = [\"crm.*\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	catalog, _ := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "catalog"))
	s := start(t, "--config", cfg, "--catalog", catalog)
	alice := s.open(t, aliceToken)
	if rec := alice.run(`await crm.search_contacts({query: "merger target"}); await memory.recall({query: "x"}); return 1`); rec.Status != "ok" {
		t.Fatalf("alice: %.300s", rec.raw)
	}
	bob := s.open(t, bobToken)
	if rec := bob.run(`await crm.search_contacts({query: "x"}); return 1`); rec.Status == "ok" {
		t.Fatal("bob reached crm: the toolset does not apply")
	}
	metrics := func(token string) string {
		code, _, body := do(t, http.MethodGet, s.base+"/metrics", map[string]string{"Authorization": "Bearer " + token}, "")
		if code != http.StatusOK {
			t.Fatalf("GET /metrics: %d %.300s", code, body)
		}
		return body
	}
	body := metrics(bobToken)
	if strings.Contains(body, `tool="crm.`) {
		t.Errorf("bob, denied crm.*, reads the crm tools' calls in /metrics: %s", grepLines(body, `tool="crm.`))
	}
	for _, want := range []string{`codecell_tool_calls_total{status="ok",tool="memory.recall"} 1`, "codecell_executions_total", "codecell_pool_size"} {
		if !strings.Contains(body, want) {
			t.Errorf("bob's /metrics has no %s", want)
		}
	}
	if body := metrics(aliceToken); !strings.Contains(body, `codecell_tool_calls_total{status="ok",tool="crm.search_contacts"} 1`) {
		t.Errorf("alice, who sees every tool, does not read crm.search_contacts' calls: %s", grepLines(body, "codecell_tool_calls_total"))
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
