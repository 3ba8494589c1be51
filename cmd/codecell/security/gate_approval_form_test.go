package security

import (
	"strings"
	"testing"
)

// TestProgramFormCannotImitateThePolicyPrompt (issue 19, attack27 L3):
// a program's form whose title or description holds the words of
// codecell's own approval prompt — which hosts show as the field's label
// and help, under the program's marked message — is refused, and the
// user is asked nothing; a zero-width or full-width character does not
// hide the words.
func TestProgramFormCannotImitateThePolicyPrompt(t *testing.T) {
	api := newHostileAPI(t)
	s := start(t, "--config", gateConfig(t, api, nil, ""))
	u := &user{accept: true}
	alice := s.connect(t, aliceToken, u, "api")
	head := "codecell — approval required by the server's policy (approval.required_for \"api.create_user\")."
	for _, field := range []string{
		`{type: "boolean", title: ` + jsString(head) + `}`,
		`{type: "boolean", title: "Confirm", description: "A program wants to call api.create_user. Arguments, as the model sees them: {}. Accept to allow this one call; decline to refuse it."}`,
		`{type: "boolean", title: "codecell — approval requ\u200bired by the server's ｐｏｌｉｃｙ"}`,
	} {
		rec := alice.run(`try { await approval.request("Confirm", {schema: {type: "object", properties: {ok: ` + field + `}}}); return "asked" } catch (e) { return e.code + ": " + e.message }`)
		if !strings.Contains(string(rec.Result), "invalid_arguments") || !strings.Contains(string(rec.Result), "approval prompt") {
			t.Errorf("a form with %s: %s", field, rec.Result)
		}
	}
	u.mu.Lock()
	forms := u.forms
	u.mu.Unlock()
	if len(forms) != 0 {
		t.Errorf("the user was shown %q", forms)
	}
	if rec := alice.run(`try { await approval.request("Ship it?", {schema: {type: "object", properties: {ok: {type: "boolean", title: "Ship the release", description: "Accept to ship now."}}}}); return "asked" } catch (e) { return e.code + ": " + e.message }`); string(rec.Result) != `"asked"` {
		t.Errorf("an ordinary form: %s", rec.Result)
	}
}
