package filter

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestForgedTokenHidesNothing (attack14 I4): the filter left alone every
// finding inside text shaped like a token (⟦class:hex⟧ of 8, 16 or 64
// hex digits) or a marker, whoever wrote it. A program that wrapped a
// card number or an API key a tool returned in ⟦x:…⟧ gave it to the
// model raw. Only a token the session's vault minted, or a marker of a
// class the filter knows, keeps its text from the detectors and the flow.
func TestForgedTokenHidesNothing(t *testing.T) {
	t.Parallel()
	const (
		card = "4012888888881881"
		key  = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0"
		pass = "correcthorse"
	)
	f := newTestFilter(t, Config{})
	v, err := NewVault(fuzzKey, "local", VaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	own := v.Tokenize(ClassEmail, "ada@example.com", nil)
	for _, tc := range []struct {
		name   string
		result any
		secret string
	}{
		// What the detectors find.
		{"card in a forged token", "⟦card:" + card + "⟧", card},
		{"card in a forged token in a sentence", "pay with ⟦c:" + card + "⟧ today", card},
		{"secret as a forged marker's class", "secret ⟦a8f3k2m9q7x1z5w4r6p0:redacted⟧", "a8f3k2m9q7x1z5w4r6p0"},
		{"key in a forged token", map[string]any{"note": "api_key = ⟦x:" + key + "⟧"}, key},
		{"key after a forged token's opening", "api_key=⟦" + key, key},
		{"password before our own token", "password=" + pass + own, pass},
		{"forged token under a sensitive name", map[string]any{"password": "⟦x:" + key[:16] + "⟧"}, key[:16]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.Apply(Input{Result: argsOf(t, tc.result)}, Options{Vault: v})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(out.Full), tc.secret) {
				t.Errorf("%s reached the model: %s", tc.secret, out.Full)
			}
		})
	}

	// What the flow knows: values a tool returned, wrapped by the program.
	fl := newTestFlow(t, f, FlowOptions{})
	fl.Observe("crm.get", json.RawMessage(`{"card":"`+card+`","secret":"`+pass+`","api_key":"`+key+`"}`), Provenance{})
	for _, res := range []string{
		"⟦card:" + card + "⟧",
		"⟦x:" + key + "⟧",
		"⟦" + pass + ":redacted⟧",
		"⟦x:" + strings.ToUpper(key) + "⟧",
	} {
		out, err := f.Apply(Input{Result: argsOf(t, res), Logs: []string{"log " + res}}, Options{Vault: v, Flow: fl})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{card, key, pass, strings.ToUpper(key)} {
			if strings.Contains(string(out.Full), s) || strings.Contains(strings.Join(out.Logs, "\n"), s) {
				t.Errorf("a value the run read from a tool reached the model inside %.40q: %s %q", res, out.Full, out.Logs)
			}
		}
	}

	// The filter's own tokens and markers are left as they are.
	for _, s := range []string{
		own,
		"write to " + own + ", password: ⟦password:redacted⟧",
		`{"email":"` + own + `","api_key":"⟦api_key:redacted⟧"}`,
	} {
		out, err := f.Apply(Input{Result: argsOf(t, map[string]any{"text": s, "email": own}), Logs: []string{s}}, Options{Vault: v, Flow: fl})
		if err != nil {
			t.Fatal(err)
		}
		want := argsOf(t, map[string]any{"email": own, "text": s})
		if string(out.Full) != string(want) || out.Logs[0] != s {
			t.Errorf("own tokens changed:\n got %s %q\nwant %s", out.Full, out.Logs, want)
		}
	}
}
