package filter

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// jsEncodeURIComponent is JavaScript's encodeURIComponent.
func jsEncodeURIComponent(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; isAlnum(c) || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// TestFlowFollowsLayeredEncodings (attack28 T1–T3): a value in a JSON text
// that is URL-encoded, in JSON text inside JSON text, URL-encoded twice,
// is followed by the rules, and a sensitive value so encoded is hidden.
func TestFlowFollowsLayeredEncodings(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	fl := newTestFlow(t, f, FlowOptions{Rules: crmToHTTP})
	fl.Observe("crm.get_deal", json.RawMessage(crmDeal), Provenance{})
	note := "Call after 3pm,\nonly on \"Mondays\""
	inner := jsonText(t, map[string]any{"n": note})
	for name, v := range map[string]string{
		"JSON in URL":         "https://x.example/?q=" + jsEncodeURIComponent(inner),
		"JSON twice":          jsonText(t, map[string]any{"body": inner}),
		"URL twice":           jsEncodeURIComponent(jsEncodeURIComponent("Hauptstraße 17")),
		"JSON in URL twice":   jsEncodeURIComponent(jsEncodeURIComponent(inner)),
		"JSON in JSON in URL": "https://x.example/?q=" + jsEncodeURIComponent(jsonText(t, map[string]any{"body": inner})),
	} {
		err := fl.Check("http.post_webhook", json.RawMessage(jsonText(t, map[string]any{"v": v})))
		var fe *FlowError
		if !errors.As(err, &fe) || fe.Source != "crm.get_deal" {
			t.Errorf("%s: Check(%q) = %v, want a *FlowError from crm.get_deal", name, v, err)
		}
	}
	// What only looks alike passes.
	for _, v := range []string{jsEncodeURIComponent(jsonText(t, map[string]any{"n": "Call after 3pm,\nonly on \"Tuesdays\""})), jsEncodeURIComponent(jsEncodeURIComponent("Hauptstraße 18"))} {
		if err := fl.Check("http.post_webhook", json.RawMessage(jsonText(t, map[string]any{"v": v}))); err != nil {
			t.Errorf("Check(%q) = %v", v, err)
		}
	}

	v := newTestVault(t, VaultOptions{})
	out := newTestFlow(t, f, FlowOptions{})
	out.Observe("util.echo", json.RawMessage(`{"password":"winter\"autumn-leaves-fall"}`), Provenance{})
	body := jsonText(t, map[string]any{"user": "ann", "pass": `winter"autumn-leaves-fall`})
	result := argsOf(t, map[string]any{
		"url":    "https://x.example/?q=" + jsEncodeURIComponent(body),
		"twice":  jsonText(t, map[string]any{"body": body}),
		"url2":   jsEncodeURIComponent(jsEncodeURIComponent(`winter"autumn-leaves-fall`)),
		"around": "user ann",
	})
	res, err := f.Apply(Input{Result: result}, Options{Vault: v, Flow: out})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.ToLower(string(res.Full))
	for _, form := range []string{"autumn-leaves", "winter"} {
		if strings.Contains(got, form) {
			t.Errorf("%q shows in\n%s", form, got)
		}
	}
	if !strings.Contains(got, "user ann") {
		t.Errorf("the text around the values is lost:\n%s", got)
	}
}

// BenchmarkCheckLayeredText: a rule's check of a 64 KB argument of JSON
// text inside JSON text whose notes hold "%" escapes too, which gets every
// view maxViewDepth deep.
func BenchmarkCheckLayeredText(b *testing.B) {
	f := newTestFilter(b, Config{})
	fl := newTestFlow(b, f, FlowOptions{Rules: crmToHTTP})
	fl.Observe("crm.get_contact", json.RawMessage(contact), Provenance{})
	var rows []map[string]string
	for len(rows)*80 < 48<<10 {
		rows = append(rows, map[string]string{"note": "line one\nline \"two\" 100%25", "city": "Springfield West"})
	}
	text, _ := json.Marshal(rows)
	inner, _ := json.Marshal(map[string]string{"rows": string(text)})
	args, _ := json.Marshal(map[string]string{"body": string(inner)})
	b.SetBytes(int64(len(args)))
	c := startCPU()
	for b.Loop() {
		if err := fl.Check("http.post_webhook", args); err != nil {
			b.Fatal(err)
		}
	}
	c.report(b, len(args))
}
