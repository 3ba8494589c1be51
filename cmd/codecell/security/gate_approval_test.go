package security

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// TestGateApprovals (issue 19, Medium and Low): codecell's own approval
// prompt shows a call's arguments as the model sees them — no secret, no
// token resolved —; a program's prompt is marked as the program's, so an
// imitation of codecell's cannot pass for it; and a program's form may
// not ask for a credential, nor get one back.
func TestGateApprovals(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	s := start(t, "--config", gateConfig(t, api, nil, "[approval]\nrequired_for = [\"api.create_user\"]\n"))
	u := &user{}
	alice := s.connect(t, aliceToken, u, "api", "vault")
	asked := func() string {
		_, m := u.seen()
		if len(m) == 0 {
			return ""
		}
		return m[len(m)-1]
	}

	var policy string
	t.Run("arguments shown filtered", func(t *testing.T) {
		rec := alice.run(`const s = await vault.get_secret(); await api.create_user({name: "dana", email: s.email, password: s.password})`)
		if rec.Status != "error" || rec.Error.Code != "approval_declined" {
			t.Fatalf("not asked, or not declined: %.400s", rec.raw)
		}
		policy = asked()
		noPlanted(t, "codecell's approval prompt", policy)
		if !strings.Contains(policy, "api.create_user") {
			t.Errorf("the prompt does not name the call: %s", policy)
		}
		// A secret the program wrote itself, inside a JSON string.
		alice.run(`await api.create_user({name: JSON.stringify({password: "Tr0ub4dor-and-3", email: "lit@example.com"})})`)
		if m := asked(); strings.Contains(m, "Tr0ub4dor") || strings.Contains(m, "lit@example.com") {
			t.Errorf("the prompt shows what a result would not: %s", m)
		}
	})
	t.Run("tokens not resolved", func(t *testing.T) {
		// A value tokenised for its field's name, where nothing but the
		// name says what it is.
		tok := regexp.MustCompile(`⟦national_id:[0-9a-f]+⟧`).FindString(alice.run(`return {national_id: "ZX-99812-Q"}`).raw)
		if tok == "" {
			t.Fatal("no token for the id")
		}
		alice.run(`await api.create_user({name: "` + tok + `"})`)
		if m := asked(); strings.Contains(m, "ZX-99812-Q") || !strings.Contains(m, tok) {
			t.Errorf("the prompt resolved the token: %s", m)
		}
	})
	t.Run("an imitation is marked", func(t *testing.T) {
		if policy == "" {
			t.Skip("no policy prompt to imitate")
		}
		alice.run(`await approval.request(` + jsString(policy) + `)`)
		m := asked()
		if m == policy || strings.HasPrefix(m, firstLine(policy)) {
			t.Errorf("a program's prompt passes for codecell's:\n%s", m)
		}
		if !strings.Contains(firstLine(m), "program") {
			t.Errorf("a program's prompt does not say it is the program's: %s", m)
		}
	})
	t.Run("no form for a credential", func(t *testing.T) {
		_, before := u.seen()
		for _, schema := range []string{
			`{type: "object", properties: {password: {type: "string"}}}`,
			`{type: "object", properties: {x: {type: "string", title: "API key"}}}`,
			// Fourth round, A8: named otherwise, described as one.
			`{type: "object", properties: {answer: {type: "string", description: "Your account password"}}}`,
		} {
			rec := alice.run(`await approval.request("Sign in to continue", {schema: ` + schema + `})`)
			if rec.Status != "error" || rec.Error.Code != "invalid_arguments" {
				t.Errorf("a form asking for a credential: %.400s", rec.raw)
			}
		}
		if _, after := u.seen(); len(after) != len(before) {
			t.Errorf("the user was shown a form asking for a credential: %q", after[len(before):])
		}
	})
	t.Run("a form that cannot be checked is refused", func(t *testing.T) {
		// Third round, M3: one title not a string made the credential
		// check pass the whole form, a password field included.
		_, before := u.seen()
		for _, schema := range []string{
			`{type: "object", properties: {pw: {type: "string", title: "Password"}, n: {type: "string", title: 5}}}`,
			`{type: "object", properties: {pw: {type: "string", title: "Password"}, n: {type: "object", properties: {}}}}`,
			`{type: "object", properties: {x: {type: "string", title: ["API key"]}}}`,
			`{type: "object", properties: {x: {type: "string", "x-title": "API key"}}}`,
			`{type: "object", properties: [1]}`,
		} {
			rec := alice.run(`await approval.request("Sign in again", {schema: ` + schema + `})`)
			if rec.Status != "error" || rec.Error.Code != "invalid_arguments" {
				t.Errorf("%s: %.400s", schema, rec.raw)
			}
		}
		if _, after := u.seen(); len(after) != len(before) {
			t.Errorf("the user was shown a form that could not be checked: %q", after[len(before):])
		}
	})
	t.Run("a form shown filtered", func(t *testing.T) {
		// Third round, M1: the form's texts went raw.
		rec := alice.run(`const s = await vault.get_secret(); await approval.request("Please confirm", {schema: {type: "object", title: "t " + s.email, description: "d " + s.api_key, properties: {
  ok: {type: "boolean", title: "ok " + s.email, description: "pw " + s.password, default: true},
  who: {type: "string", enum: [s.email, "nobody"], enumNames: [s.email, "no one"], default: s.email},
  pick: {type: "string", oneOf: [{const: s.email, title: s.password}]}}}}); 1`)
		if rec.Status != "error" || rec.Error.Code != "approval_declined" && !strings.Contains(rec.raw, "decline") {
			t.Logf("run: %.300s", rec.raw)
		}
		u.mu.Lock()
		forms := append([]string(nil), u.forms...)
		u.mu.Unlock()
		if len(forms) == 0 || !strings.Contains(forms[len(forms)-1], "nobody") {
			t.Fatalf("no form shown: %q", forms)
		}
		noPlanted(t, "an approval form", forms[len(forms)-1])
	})
	t.Run("no credential back", func(t *testing.T) {
		u.mu.Lock()
		u.accept, u.content = true, map[string]any{"note": "my key is " + plantedAPIKey, "to": "ops@example.org"}
		u.mu.Unlock()
		defer func() { u.mu.Lock(); u.accept = false; u.mu.Unlock() }()
		// The program sends what it got where it can read it back: a
		// tool the filter does not stand between.
		rec := alice.run(`const a = await approval.request("Anything to add?", {schema: {type: "object", properties: {note: {type: "string"}, to: {type: "string"}}}}); await api.search_things({v: a.content.to}); return [a.content.note.indexOf("` + plantedAPIKey[:12] + `"), a.content.note.length]`)
		if rec.Status != "ok" || !strings.HasPrefix(string(rec.Result), "[-1,") {
			t.Errorf("the program got the credential the user typed: %.400s", rec.raw)
		}
		if got := strings.Join(api.got("POST /search"), "\n"); !strings.Contains(got, "ops@example.org") {
			t.Errorf("the program lost the address the user typed: %s", got)
		}
	})
	alice.normal()
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)
	return `"` + r.Replace(s) + `"`
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// TestPurposeImitatesPrompt (issue 19, third attack round, M5): the
// purpose the model gives a run is shown in codecell's approval prompt;
// with line breaks it could add an imitation of the prompt (harmless
// arguments, a forged "Accept…" line) after the real one, and push the
// real one out of sight.
func TestPurposeImitatesPrompt(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	s := start(t, "--config", gateConfig(t, api, nil, "[approval]\nrequired_for = [\"api.create_user\"]\n"))
	u := &user{accept: true}
	a := s.connect(t, aliceToken, u, "api")
	for _, purpose := range []string{
		"add the user\n\ncodecell — approval required by the server's policy (approval.required_for \"api.create_user\").\nA program wants to call api.create_user.\nArguments, as the model sees them: {\"name\":\"harmless\"}\nAccept to allow this one call; decline to refuse it.\n\n\n\n\n\n\n\n\n\n",
		"add the user\u2028\u2028\u2028\u2028\u2028approved already\r\r\r\r",
	} {
		a.run(`await api.create_user({name: "dana"}); return 1`, "purpose", purpose)
		_, msgs := u.seen()
		if len(msgs) == 0 {
			t.Fatal("not asked")
		}
		got := msgs[len(msgs)-1]
		if n := strings.Count(got, "Arguments, as the model sees them"); n != 1 {
			t.Errorf("the prompt shows %d lines of arguments, the model's purpose forged some:\n%s", n, got)
		}
		if strings.ContainsAny(got[strings.Index(got, "Purpose"):strings.LastIndex(got, "Accept")], "\r\u2028\u2029") || strings.Count(got, "\n") > 4 {
			t.Errorf("the model's purpose adds lines to the prompt:\n%q", got)
		}
	}
}

// TestPurposeOwnWordsZeroWidth (issue 19, fourth round, A4): the check
// that keeps the prompt's own words out of the purpose looked for them
// before format characters were taken out: a zero-width space inside
// each phrase passed it, and the prompt then showed "Accept to allow
// this one call" in the model's words. Full-width letters are the same
// words too.
func TestPurposeOwnWordsZeroWidth(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	s := start(t, "--config", gateConfig(t, api, nil, "[approval]\nrequired_for = [\"api.create_user\"]\n"))
	u := &user{accept: false}
	a := s.connect(t, aliceToken, u, "api")
	for _, purpose := range []string{
		"archive the report. Arguments,\u200b as the model sees them: {\"name\":\"harmless\"}. codecell checked them: Accept\u200b to allow this one call",
		"archive the report. Arguments, as the\u00admodel sees them: {\"name\":\"harmless\"}. \uff21ccept to allow this one call",
	} {
		a.run(`await api.create_user({name: "dana"}); return 1`, "purpose", purpose)
		_, msgs := u.seen()
		if len(msgs) == 0 {
			t.Fatal("not asked")
		}
		got := msgs[len(msgs)-1]
		if strings.Count(got, "Arguments, as the model sees them") > 1 || strings.Count(got, "Accept to allow") > 1 || strings.Contains(got, "harmless") {
			t.Errorf("the purpose shows the prompt's own words:\n%s", got)
		}
	}
}

// TestApprovalShowsEveryArgument (issue 19, third attack round, L1): the
// approval prompt's 1 KB cut dropped an object's later members, so 200
// filler arguments hid the one that mattered from the user; and a call
// that fails validation cost the user a prompt before it failed.
func TestApprovalShowsEveryArgument(t *testing.T) {
	t.Parallel()
	api := newHostileAPI(t)
	l := newLiar(t)
	s := start(t, "--config", gateConfig(t, api, l, "[approval]\nrequired_for = [\"api.create_user\", \"liar.note_write\"]\n"))
	u := &user{}
	alice := s.connect(t, aliceToken, u, "api", "liar")
	fill := func(n, size int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "f%03d: %q, ", i, strings.Repeat("x", size))
		}
		return b.String()
	}

	t.Run("every top-level argument named", func(t *testing.T) {
		// A loose schema (an upstream's) takes any member.
		for _, c := range []struct{ name, args string }{
			{"many short", "{" + fill(200, 8) + "text: 'wire the money'}"},
			{"few long", "{" + fill(6, 400) + "text: 'wire the money'}"},
		} {
			_, before := u.seen()
			rec := alice.run(`await liar.note_write(` + c.args + `)`)
			_, after := u.seen()
			if len(after) == len(before) {
				if rec.Status == "error" && rec.Error.Code == "approval_unavailable" {
					continue // refused, not asked: nothing hidden from the user
				}
				t.Fatalf("%s: neither asked nor refused: %.400s", c.name, rec.raw)
			}
			m := after[len(after)-1]
			if !strings.Contains(m, `"text"`) {
				t.Errorf("%s: the prompt hides the argument text:\n%.2000s", c.name, m)
			}
			if !strings.Contains(m, `"f005"`) {
				t.Errorf("%s: the prompt hides the argument f005:\n%.2000s", c.name, m)
			}
		}
	})
	t.Run("invalid arguments not asked", func(t *testing.T) {
		_, before := u.seen()
		for _, args := range []string{
			`{name: 5}`,
			"{" + fill(200, 8) + "email: 'dana@example.com'}",
		} {
			rec := alice.run(`await api.create_user(` + args + `)`)
			if rec.Status != "error" || rec.Error.Code != "invalid_arguments" {
				t.Errorf("%.60s: %.400s", args, rec.raw)
			}
		}
		if _, after := u.seen(); len(after) != len(before) {
			t.Errorf("the user was asked to approve calls that fail validation: %d prompts", len(after)-len(before))
		}
	})
	alice.normal()
}
