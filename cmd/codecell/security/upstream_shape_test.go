package security

import (
	"context"
	"encoding/json"
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

// recordsServer is an upstream MCP server over Streamable HTTP whose tool
// lookup (no output schema) returns the record asked for, keyed by its
// name, as many APIs key objects by what they hold.
func recordsServer(t *testing.T) string {
	t.Helper()
	s := mcpsrv.NewMCPServer("records", "1", mcpsrv.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("lookup", mcp.WithDescription("Look up a record by name."), mcp.WithString("name")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name := req.GetString("name", "")
			b, _ := json.Marshal(map[string]any{"records": map[string]any{name: map[string]any{"owner": "finance", "rows": 3}}})
			return mcp.NewToolResultText(string(b)), nil
		})
	ts := httptest.NewServer(mcpsrv.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// TestLearnedShapeLeaksAcrossPrincipals (issue 19, third attack round,
// H6): codecell learns the shape
// of results of upstream tools that declare no output schema and shows it
// to every principal (the tool's page and .d.ts). Object keys that look
// like field names (letters, digits, '_', '-', '.', up to 48 bytes, up to
// 40 of them) become property names: alice's data — the names she looked
// up, the keys her records came under — is shown to bob, who never called
// the tool. The same channel lets bob write property names into the
// .d.ts alice's model reads (a cross-principal injection channel).
func TestLearnedShapeLeaksAcrossPrincipals(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[upstream.records]\nurl = %q\n", recordsServer(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, "--config", cfg)
	const private = "nightingale_layoffs_q3"
	alice := s.open(t, aliceToken)
	deadline := time.Now().Add(60 * time.Second)
	for {
		rec := alice.run(`return typeof records === "object" && typeof records.lookup === "function"`)
		if string(rec.Result) == "true" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream did not load: %s", rec.raw)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if rec := alice.run(`return await records.lookup({name: "` + private + `"})`); rec.Status != "ok" {
		t.Fatalf("alice's call: %.400s", rec.raw)
	}
	bob := s.open(t, bobToken)
	var seen string
	for time.Now().Before(deadline) {
		seen = ""
		for _, p := range []string{"/records/lookup.md", "/records/index.d.ts", "/records/"} {
			seen += string(rpcLoose(bob, "tools/call", map[string]any{"name": "read_tools", "arguments": map[string]any{"path": p}}))
		}
		// The shape learned of alice's result is shown (what of it a
		// principal may see) once "Inferred from 1 observed result".
		if strings.Contains(seen, "observed result") {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(seen, "observed result") {
		t.Fatalf("no shape learned of alice's result:\n%.2000s", seen)
	}
	if strings.Contains(seen, private) {
		i := strings.Index(seen, private)
		t.Errorf("bob reads the name alice looked up in the tool's learned shape: …%s…", seen[max(0, i-300):min(len(seen), i+100)])
	}
}

// rpcLoose is rpc that returns the error as well as the result.
func rpcLoose(ss *session, method string, params any) json.RawMessage {
	ss.t.Helper()
	ss.next++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": ss.next, "method": method, "params": params})
	_, _, out := do(ss.t, "POST", ss.url, ss.header(), string(body))
	return json.RawMessage(lastMessage(out))
}
