package filter

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

// jsEscape is JavaScript's escape(): %XX for a code unit below 0x100,
// %uXXXX past it.
func jsEscape(s string) string {
	var b strings.Builder
	for _, u := range utf16.Encode([]rune(s)) {
		switch {
		case u < 0x80 && (isAlnum(byte(u)) || strings.IndexByte("@*_+-./", byte(u)) >= 0):
			b.WriteByte(byte(u))
		case u < 0x100:
			fmt.Fprintf(&b, "%%%02X", u)
		default:
			fmt.Fprintf(&b, "%%u%04X", u)
		}
	}
	return b.String()
}

// jsCharCodeHex is a program's hex of a string's char codes:
// Array.from(s).map(ch => ch.charCodeAt(0).toString(16).padStart(2, "0")).join("").
func jsCharCodeHex(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, "%02x", utf16.Encode([]rune{r})[0])
	}
	return b.String()
}

// jsonText is JSON.stringify(v) (Go's escapes of <, > and & aside).
func jsonText(tb testing.TB, v any) string {
	tb.Helper()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		tb.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

const crmDeal = `{"street":"Hauptstraße 17","turkish_street":"İstiklal Caddesi 42","greek_office":"Οδός Αγίου Σπυρίδωνος 12",` +
	`"notes":"Call after 3pm,\nonly on \"Mondays\"","amount":1234567.10,"budget":4.2e7,"check":98765432.000,` +
	`"ledger_id":98765432109876543210,"tiny":0.00000012345600,"title":"Head of Finance"}`

// TestFlowCheckProgramForms (attack25 F1, F2, F4, F5, F9): what everyday
// program code makes of a value — JavaScript's full case changes, JSON
// text, escape() and the hex of char codes of non-ASCII text, a number
// as JavaScript writes it, a name beside punctuation past ASCII — is
// followed by the rules.
func TestFlowCheckProgramForms(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	fl := newTestFlow(t, f, FlowOptions{Rules: crmToHTTP})
	fl.Observe("crm.get_deal", json.RawMessage(crmDeal), Provenance{})
	upper, lower := cases.Upper(language.Und), cases.Lower(language.Und)
	note := "Call after 3pm,\nonly on \"Mondays\""
	for _, tc := range []struct {
		name     string
		args     string
		encoding string
	}{
		{"ß upper-cased", jsonText(t, map[string]any{"v": upper.String("Hauptstraße 17")}), ""},
		{"İ lower-cased", jsonText(t, map[string]any{"v": lower.String("İstiklal Caddesi 42")}), ""},
		{"final ς upper-cased", jsonText(t, map[string]any{"v": upper.String("Οδός Αγίου Σπυρίδωνος 12")}), ""},
		{"upper-cased, lower-cased again", jsonText(t, map[string]any{"v": lower.String(upper.String("Οδός Αγίου Σπυρίδωνος 12"))}), ""},
		{"a note as JSON text", jsonText(t, map[string]any{"body": jsonText(t, map[string]any{"notes": note})}), "JSON-escaped"},
		{"a note as JSON text, \\u escapes", jsonText(t, map[string]any{"body": `{"n":"Call after 3pm,\u000aonly on \u0022Mondays\u0022"}`}), "JSON-escaped"},
		{"a street as JSON text, upper-cased", jsonText(t, map[string]any{"body": `{"s":"HAUPTSTRA\u00dfE 17"}`}), "JSON-escaped"},
		{"escape() of Latin-1", jsonText(t, map[string]any{"v": jsEscape("Hauptstraße 17")}), "URL-encoded"},
		{"escape() past Latin-1", jsonText(t, map[string]any{"v": jsEscape("Οδός Αγίου Σπυρίδωνος 12")}), "URL-encoded"},
		{"hex of char codes", jsonText(t, map[string]any{"v": jsCharCodeHex("Hauptstraße 17")}), "hex-encoded"},
		{"number with a trailing zero", `{"v":1234567.1}`, ""},
		{"number with an exponent", `{"v":42000000}`, ""},
		{"whole number written with decimals", `{"v":98765432}`, ""},
		{"integer past 2^53", `{"v":98765432109876540000}`, ""},
		{"small number", `{"v":1.23456e-7}`, ""},
		{"number in a sentence", `{"v":"total 1234567.1 EUR"}`, ""},
		{"a title before ’", `{"v":"Head of Finance’s budget"}`, ""},
		{"a title before a no-break space", `{"v":"Head of Finance\u00a0(Stockholm)"}`, ""},
		{"a title in « »", `{"v":"«Head of Finance»"}`, ""},
		{"a title before —", `{"v":"Head of Finance—Stockholm"}`, ""},
		{"a title after a JSON line break", jsonText(t, map[string]any{"body": jsonText(t, map[string]any{"t": "Dear\nHead of Finance"})}), "JSON-escaped"},
		{"a title after %20", `{"v":"https://x.example/?q=dear%20Head%20of%20Finance%20"}`, "URL-encoded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := fl.Check("http.post_webhook", json.RawMessage(tc.args))
			var fe *FlowError
			if !errors.As(err, &fe) {
				t.Fatalf("Check(%s) = %v, want a *FlowError", tc.args, err)
			}
			if fe.Source != "crm.get_deal" || fe.Encoding != tc.encoding {
				t.Errorf("FlowError = %+v, want encoding %q", fe, tc.encoding)
			}
		})
	}
	// What only looks alike passes.
	for _, args := range []string{`{"v":"ÜberHead of Finance"}`, `{"v":"Head of Financeé"}`, `{"v":"HAUPTSTRASSE 18"}`, `{"v":1234567.2}`, `{"v":"Call after 3pm, only on Tuesdays"}`, `{"v":"a\\\\b \\\"c\\\" d\\ne"}`} {
		if err := fl.Check("http.post_webhook", json.RawMessage(args)); err != nil {
			t.Errorf("Check(%s) = %v", args, err)
		}
	}
}

// TestFlowHidesProgramForms (attack25 F3, F5, F6): a sensitive value the
// program upper-cased with JavaScript's full case mapping, put in JSON
// text with its quote escaped, or a number the upstream wrote otherwise
// than JavaScript does, is hidden in the result and the logs.
func TestFlowHidesProgramForms(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	v := newTestVault(t, VaultOptions{})
	fl := newTestFlow(t, f, FlowOptions{})
	fl.Observe("crm.get_user", json.RawMessage(`{"user":"ann","password":"winter\"autumn-leaves-fall","portal_password":"Weißbier-Geheimnis-2024","ssn":987654321.0}`), Provenance{})
	body := jsonText(t, map[string]any{"user": "ann", "pass": `winter"autumn-leaves-fall`})
	result := argsOf(t, map[string]any{"upper": "WEISSBIER-GEHEIMNIS-2024", "body": body, "tab": jsonText(t, []string{"x\tWeißbier-Geheimnis-2024"}), "ref": 987654321, "note": "ref 987654321"})
	logs := []string{"pw WEISSBIER-GEHEIMNIS-2024", "sent " + body}
	out, err := f.Apply(Input{Result: result, Logs: logs}, Options{Vault: v, Flow: fl})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.ToLower(string(out.Full) + "\n" + strings.Join(out.Logs, "\n"))
	for _, form := range []string{"weissbier", "weißbier", "geheimnis", "autumn-leaves", `winter\`, "987654321"} {
		if strings.Contains(all, form) {
			t.Errorf("%q shows in\n%s", form, all)
		}
	}
	if !strings.Contains(all, `"user\":\"ann\"`) && !strings.Contains(all, `\"user\":\"ann\"`) {
		t.Errorf("the text around the value is lost:\n%s", all)
	}
}

// TestJSNumber: numbers as JavaScript writes them.
func TestJSNumber(t *testing.T) {
	t.Parallel()
	for lit, want := range map[string]string{
		"1234567.10": "1234567.1", "4.2e7": "42000000", "42000000.0": "42000000", "98765432109876543210": "98765432109876540000",
		"1e21": "1e+21", "1.5E-7": "1.5e-7", "0.000001": "0.000001", "-0.0": "0", "-12.50": "-12.5", "123e-20": "1.23e-18", "1.7976931348623157e308": "1.7976931348623157e+308",
	} {
		if got, ok := jsNumber(lit); !ok || got != want {
			t.Errorf("jsNumber(%s) = %q, %v; want %q", lit, got, ok, want)
		}
	}
	for _, lit := range []string{"1e999", "+44207946", "0x1F4A3B", "Infinity", "12_345_678", "", "-"} {
		if js, ok := jsNumber(lit); ok {
			t.Errorf("jsNumber(%q) = %q: not a finite JSON number", lit, js)
		}
	}
}

// TestKeywordEntropyWholeWord (attack25 F8): a random-looking value after
// a key-like word is a secret whole, the letters past ASCII in it too: a
// run of ASCII cut at "ß" left the head "Weiß" shown.
func TestKeywordEntropyWholeWord(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	for _, text := range []string{"new password Weißbier-Geheimnis-2024", "token: Ab3dEf9hIj2kLm5nOp-çà-Qr7s!", "secret=x9Kq2Lm8Np4Rt6Vw1Yz3-Ærø"} {
		got := f.ApplyText(text, Options{}).Text
		for _, part := range []string{"Weiß", "çà", "Ærø", "Geheimnis"} {
			if strings.Contains(got, part) {
				t.Errorf("ApplyText(%q) = %q: %q shows", text, got, part)
			}
		}
	}
	// Prose around it stays.
	if got := f.ApplyText("secret: Ab3dEf9hIj2kLm5nOp7Qr — à bientôt", Options{}).Text; !strings.HasSuffix(got, " — à bientôt") {
		t.Errorf("the text after the secret changed: %q", got)
	}
}

// TestFlowCheckCardDigits (attack25 F12): a card, an IBAN or a phone
// number a tool returned is refused with its separators removed or
// changed to spaces, as a payment API wants it.
func TestFlowCheckCardDigits(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	fl := newTestFlow(t, f, FlowOptions{Rules: crmToHTTP})
	fl.Observe("crm.get_contact", json.RawMessage(`{"card_on_file":"4012-8888-8888-1881","iban":"DE89-3704-0044-0532-0130-00","phone":"+44-20-7946-0958"}`), Provenance{})
	for _, v := range []string{"4012888888881881", "4012 8888 8888 1881", "pay 4012888888881881 now", "DE89370400440532013000", "442079460958"} {
		err := fl.Check("http.post_webhook", argsOf(t, map[string]any{"v": v}))
		var fe *FlowError
		if !errors.As(err, &fe) {
			t.Errorf("Check(%q) = %v, want a *FlowError", v, err)
		}
	}
	if err := fl.Check("http.post_webhook", argsOf(t, map[string]any{"v": "4012888888881882"})); err != nil {
		t.Errorf("another number: %v", err)
	}
}

// TestAssignmentReadsEscapedQuotes (attack25 F6): a password in JSON text
// holding an escaped quote is one value to the key_assignment detector,
// not its head replaced and its tail shown.
func TestAssignmentReadsEscapedQuotes(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	for _, text := range []string{`{"user":"ann","password":"winter\"autumn-leaves-fall"}`, `password = 'it\'s-autumn-leaves-fall'`, `{"password":"back\\slash\"autumn-leaves"}`} {
		got := f.ApplyText(text, Options{}).Text
		if strings.Contains(got, "autumn") || !strings.Contains(got, "⟦password") {
			t.Errorf("ApplyText(%q) = %q", text, got)
		}
	}
	// A value that ends in an escaped backslash ends at its quote.
	if got := f.ApplyText(`{"password":"hunter2-x\\","user":"ann"}`, Options{}).Text; !strings.Contains(got, `"user":"ann"`) {
		t.Errorf("the text after the value changed: %q", got)
	}
}

// TestFlowCheckSpacelessScripts (attack28 T6): a letters-only value in a
// script written without spaces, inside a sentence of it, is a word of
// that sentence: "請求先は" + name + "です" breaks the rule as
// "請求先：" + name + "。" does. A value joined to letters of a spaced
// script still is not one.
func TestFlowCheckSpacelessScripts(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	fl := newTestFlow(t, f, FlowOptions{Rules: crmToHTTP})
	fl.Observe("crm.get_deal", json.RawMessage(`{"jp":"株式会社山田製作所","zh":"北京市海淀区中关村大街","th":"บริษัทสยามพาณิชย์","title":"Head of Finance"}`), Provenance{})
	for _, v := range []string{
		"請求先：株式会社山田製作所。",
		"請求先は株式会社山田製作所です",
		"株式会社山田製作所様",
		"地址是北京市海淀区中关村大街。",
		"ลูกค้าบริษัทสยามพาณิชย์ครับ",
		"Head of Finance様",
		"宛先Head of Finance",
	} {
		err := fl.Check("http.post_webhook", json.RawMessage(jsonText(t, map[string]any{"v": v})))
		var fe *FlowError
		if !errors.As(err, &fe) || fe.Source != "crm.get_deal" {
			t.Errorf("Check(%q) = %v, want a *FlowError from crm.get_deal", v, err)
		}
	}
	// What only looks alike passes: a Latin value joined to Latin letters.
	for _, v := range []string{"宛先ÜberHead of Finance", "Head of Financeé様", "株式会社山田製作"} {
		if err := fl.Check("http.post_webhook", json.RawMessage(jsonText(t, map[string]any{"v": v}))); err != nil {
			t.Errorf("Check(%q) = %v", v, err)
		}
	}
}
