package filter

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
)

const contact = `{"id":"cus_8f3a9c21b7","name":"Ada Lovelace","email":"ada@example.com","phone":"+44 20 7946 0958",` +
	`"account":12345678901,"tier":"enterprise","city":"Springfield","code":"A1B2C3","status":"active","notes":"prefers tea"}`

func newTestFlow(tb testing.TB, f *Filter, opts FlowOptions) *Flow {
	tb.Helper()
	fl, err := f.NewFlow(opts)
	if err != nil {
		tb.Fatal(err)
	}
	return fl
}

var crmToHTTP = []Rule{{From: "crm.*", To: "http.*"}}

func argsOf(tb testing.TB, v any) json.RawMessage {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestFlowCheckLaundering: a value from crm reaches http in every form a
// program can give it cheaply, and each is refused with an error that
// names the rule, the source and the argument, not the value.
func TestFlowCheckLaundering(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	fl := newTestFlow(t, f, FlowOptions{Rules: crmToHTTP})
	fl.Observe("crm.get_contact", json.RawMessage(contact), Provenance{})
	fl.Observe("hr.get_employee", json.RawMessage(`{"manager":"Grace Hopper","email":"grace@example.org"}`), Provenance{})

	email := "ada@example.com"
	b64 := base64.StdEncoding.EncodeToString
	cases := []struct {
		name     string
		args     any
		path     string
		inKey    bool
		encoding string
	}{
		{"exact", map[string]any{"v": email}, "/v", false, ""},
		{"upper case", map[string]any{"v": strings.ToUpper(email)}, "/v", false, ""},
		{"spaced", map[string]any{"v": "ada @ example . com"}, "/v", false, ""},
		{"in a sentence", map[string]any{"body": "Dear customer, write to " + email + " today."}, "/body", false, ""},
		{"name in a sentence", map[string]any{"body": "Contact: ADA lovelace, please"}, "/body", false, ""},
		{"nested", map[string]any{"a": []any{1, map[string]any{"b": email}}}, "/a/1/b", false, ""},
		{"in a key", map[string]any{"x": map[string]any{email: true}}, "/x", true, ""},
		{"tracked id", map[string]any{"ref": "order for cus_8f3a9c21b7"}, "/ref", false, ""},
		{"number", map[string]any{"n": 12345678901}, "/n", false, ""},
		{"number in a string", map[string]any{"s": "acct 12345678901"}, "/s", false, ""},
		{"base64", map[string]any{"v": b64([]byte(email))}, "/v", false, "base64-encoded"},
		{"base64 url unpadded", map[string]any{"v": base64.RawURLEncoding.EncodeToString([]byte("??" + email + "??"))}, "/v", false, "base64-encoded"},
		{"base64 of a sentence", map[string]any{"v": "data=" + b64([]byte("hello "+email+" bye"))}, "/v", false, "base64-encoded"},
		{"base64 in lines", map[string]any{"v": mimeWrap(b64([]byte(strings.Repeat("x", 50) + email)))}, "/v", false, "base64-encoded"},
		{"base64 of upper case", map[string]any{"v": b64([]byte(strings.ToUpper(email)))}, "/v", false, "base64-encoded"},
		{"hex", map[string]any{"v": hex.EncodeToString([]byte(email))}, "/v", false, "hex-encoded"},
		{"hex upper, odd offset", map[string]any{"v": "f" + strings.ToUpper(hex.EncodeToString([]byte(email)))}, "/v", false, "hex-encoded"},
		{"url", map[string]any{"u": "https://hooks.example/?to=" + url.QueryEscape(email)}, "/u", false, "URL-encoded"},
		{"url name", map[string]any{"u": "https://hooks.example/?n=" + url.QueryEscape("Ada Lovelace")}, "/u", false, "URL-encoded"},
		{"url path", map[string]any{"u": "https://hooks.example/" + url.PathEscape("Ada Lovelace")}, "/u", false, "URL-encoded"},
		{"not JSON", "raw text " + email, "", false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := argsOf(t, tc.args)
			if s, ok := tc.args.(string); ok {
				args = json.RawMessage(s)
			}
			err := fl.Check("http.post_webhook", args)
			var fe *FlowError
			if !errors.As(err, &fe) || !errors.Is(err, ErrExfiltration) {
				t.Fatalf("Check = %v, want a *FlowError", err)
			}
			if fe.Rule != crmToHTTP[0] || fe.Source != "crm.get_contact" || fe.Tool != "http.post_webhook" ||
				fe.Path != tc.path || fe.InKey != tc.inKey || fe.Encoding != tc.encoding || fe.Untracked {
				t.Errorf("FlowError = %+v", fe)
			}
			msg := err.Error()
			for _, part := range []string{`"crm.*"`, `"http.*"`, "crm.get_contact", "http.post_webhook"} {
				if !strings.Contains(msg, part) {
					t.Errorf("%q does not name %s", msg, part)
				}
			}
			assertNoSecrets(t, "error", strings.ToLower(msg), []string{"ada@", "lovelace", "12345678901", "cus_8f3a", "ada%40"})
			// The same arguments may go where no rule forbids them.
			if err := fl.Check("mail.send", args); err != nil {
				t.Errorf("mail.send: %v", err)
			}
		})
	}
}

// mimeWrap breaks base64 into lines of 16 characters.
func mimeWrap(s string) string {
	var b strings.Builder
	for len(s) > 16 {
		b.WriteString(s[:16] + "\r\n")
		s = s[16:]
	}
	b.WriteString(s)
	return b.String()
}

// TestFlowCheckNearMisses: what must pass.
func TestFlowCheckNearMisses(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	fl := newTestFlow(t, f, FlowOptions{Rules: crmToHTTP})
	fl.Observe("crm.get_contact", json.RawMessage(contact), Provenance{})
	fl.Observe("hr.get_employee", json.RawMessage(`{"manager":"Grace Hopper","email":"grace@example.org"}`), Provenance{})
	for name, args := range map[string]any{
		"single words":           map[string]any{"tier": "enterprise", "city": "Springfield", "status": "active"},
		"short code":             map[string]any{"code": "A1B2C3", "n": 12345},
		"part of a value":        map[string]any{"domain": "example.com", "who": "Ada", "q": "lovelace"},
		"short word of a phrase": map[string]any{"drink": "tea"},
		"other source":           map[string]any{"to": "grace@example.org", "boss": "Grace Hopper"},
		"booleans and nulls":     map[string]any{"a": true, "b": nil, "c": []any{}},
		"unrelated base64":       map[string]any{"v": base64.StdEncoding.EncodeToString([]byte("nothing to see here at all"))},
		"unrelated hex":          map[string]any{"v": "deadbeef0123456789abcdef"},
	} {
		if err := fl.Check("http.post", argsOf(t, args)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Without rules, or before anything was observed, nothing is refused.
	empty := newTestFlow(t, f, FlowOptions{Rules: crmToHTTP})
	if err := empty.Check("http.post", json.RawMessage(`{"v":"ada@example.com"}`)); err != nil {
		t.Errorf("empty flow: %v", err)
	}
	norules := newTestFlow(t, f, FlowOptions{})
	norules.Observe("crm.get_contact", json.RawMessage(contact), Provenance{})
	if err := norules.Check("http.post", json.RawMessage(`{"v":"ada@example.com"}`)); err != nil {
		t.Errorf("no rules: %v", err)
	}
	if _, err := f.NewFlow(FlowOptions{Rules: []Rule{{From: "[", To: "x"}}}); err == nil {
		t.Error("NewFlow accepted a malformed glob")
	}
}

func TestWorthTracking(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"active": false, "enterprise": false, "Springfield": false, "A1B2C3": false, "true": false,
		"12345": false, "in progress": true, "Ada Lovelace": true, "ada@example.com": true,
		"2024-01-01T00:00:00Z": true, "12345678": true, "Internationalization": true, "   a   b   ": false,
	} {
		if got := worthTracking(s); got != want {
			t.Errorf("worthTracking(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestFlowProvenance: a value saved to memory by one run and read back by
// another is still traced to crm.
func TestFlowProvenance(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	run1 := newTestFlow(t, f, FlowOptions{Rules: crmToHTTP})
	run1.Observe("crm.get_contact", json.RawMessage(contact), Provenance{})
	run1.Observe("hr.get_employee", json.RawMessage(`{"manager":"Grace Hopper"}`), Provenance{})
	save := json.RawMessage(`{"text":"Call ` + "ADA LOVELACE" + ` at ada@example.com about the refund","tags":["todo"]}`)
	if err := run1.Check("memory.remember", save); err != nil {
		t.Fatalf("saving to memory: %v", err)
	}
	prov := run1.Provenance(save)
	if got := prov.Sources(); len(got) != 1 || got[0] != "crm.get_contact" {
		t.Fatalf("Provenance = %v", got)
	}
	if p := run1.Provenance(json.RawMessage(`{"text":"nothing from tools"}`)); !p.IsZero() {
		t.Errorf("Provenance of unrelated text = %v", p)
	}
	// The store keeps it as JSON and gives it back.
	stored, err := json.Marshal(prov)
	if err != nil || string(stored) != `["crm.get_contact"]` {
		t.Fatalf("MarshalJSON = %s, %v", stored, err)
	}
	back, err := ParseProvenance(string(stored))
	if err != nil || back.String() != "crm.get_contact" {
		t.Fatalf("ParseProvenance = %v, %v", back, err)
	}

	recall := json.RawMessage(`[{"id":7,"text":"Call ADA LOVELACE at ada@example.com about the refund"}]`)
	run2 := newTestFlow(t, f, FlowOptions{Rules: crmToHTTP})
	run2.Observe("memory.recall", recall, back)
	for _, args := range []string{`{"v":"ada@example.com"}`, `{"v":"Call ADA LOVELACE at ada@example.com about the refund"}`} {
		var fe *FlowError
		if err := run2.Check("http.post", json.RawMessage(args)); !errors.As(err, &fe) || fe.Source != "crm.get_contact" {
			t.Errorf("run 2, %s: %v", args, err)
		}
	}
	if got := run2.Sources("ADA@example.com"); strings.Join(got, ",") != "crm.get_contact,memory.recall" {
		t.Errorf("Sources = %v", got)
	}
	// Without the provenance, memory.recall is the only source.
	run3 := newTestFlow(t, f, FlowOptions{Rules: crmToHTTP})
	run3.Observe("memory.recall", recall, Provenance{})
	if err := run3.Check("http.post", json.RawMessage(`{"v":"ada@example.com"}`)); err != nil {
		t.Errorf("run 3: %v", err)
	}

	for _, bad := range []string{`{`, `"x"`, `[1]`} {
		if _, err := ParseProvenance(bad); err == nil {
			t.Errorf("ParseProvenance(%s) accepted", bad)
		}
	}
	if p, err := ParseProvenance(""); err != nil || !p.IsZero() {
		t.Errorf(`ParseProvenance("") = %v, %v`, p, err)
	}
	if u := NewProvenance("b", "a", "b", "").Union(NewProvenance("c")); u.String() != "a,b,c" {
		t.Errorf("Union = %v", u)
	}
}

// TestFlowHidesKnownValues: a value the filter hides in a tool result is
// hidden wherever the program outputs it, however it is encoded.
func TestFlowHidesKnownValues(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	v := newTestVault(t, VaultOptions{})
	fl := newTestFlow(t, f, FlowOptions{})
	fl.Observe("crm.get_user", json.RawMessage(`{"user":"ada","password":"hunter2-Horse","email":"ada@example.com","notes":"likes tea"}`), Provenance{})
	pw := "hunter2-Horse"
	result := argsOf(t, map[string]any{
		"plain":    "the password is " + pw,
		"upper":    strings.ToUpper(pw),
		"spaced":   "h u n t e r 2 - H o r s e",
		"base64":   base64.StdEncoding.EncodeToString([]byte(pw)),
		"b64 mid":  "x=" + base64.RawURLEncoding.EncodeToString([]byte("pw:"+pw+";")) + " end",
		"hex":      hex.EncodeToString([]byte(pw)),
		"url":      url.QueryEscape("p=" + pw),
		"e64":      base64.StdEncoding.EncodeToString([]byte("ada@example.com")),
		"harmless": "likes tea, hunter, horse",
		pw:         "as a key",
	})
	logs := []string{pw, "encoded " + hex.EncodeToString([]byte(strings.ToUpper(pw)))}
	forms := []string{pw, strings.ToLower(pw), strings.ToUpper(pw), "h u n t e r", base64.StdEncoding.EncodeToString([]byte(pw)),
		hex.EncodeToString([]byte(pw)), "hunter2-", "ada@example.com", base64.StdEncoding.EncodeToString([]byte("ada@example.com"))}

	// Without the flow, most of it shows.
	bare, err := f.Apply(Input{Result: result, Logs: logs}, Options{Vault: v})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(bare.Full), pw) {
		t.Fatalf("without a flow the password was found anyway: %s", bare.Full)
	}

	out, err := f.Apply(Input{Result: result, Logs: logs}, Options{Vault: v, Flow: fl, Details: true})
	if err != nil {
		t.Fatal(err)
	}
	all := string(out.Full) + "\n" + strings.Join(out.Logs, "\n")
	for _, form := range forms {
		if strings.Contains(all, form) || strings.Contains(strings.ToLower(all), strings.ToLower(form)) && len(form) > 12 {
			t.Errorf("%q shows in\n%s", form, all)
		}
	}
	var doc map[string]string
	if err := json.Unmarshal(out.Full, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["harmless"] != "likes tea, hunter, horse" {
		t.Errorf("harmless text changed: %q", doc["harmless"])
	}
	if doc["upper"] != RedactionMarker(ClassPassword) || !strings.HasPrefix(doc["b64 mid"], "x=") || !strings.HasSuffix(doc["b64 mid"], " end") {
		t.Errorf("replacements: %s", out.Full)
	}
	// An encoded e-mail becomes its token, which resolves to the value.
	got, err := v.Resolve(argsOf(t, []string{doc["e64"]}), "mail.send")
	if err != nil || string(got) != `["ada@example.com"]` {
		t.Errorf("token of the encoded e-mail: %s, %v", got, err)
	}
	known := 0
	for _, d := range out.Report.Details {
		if d.Detector == "known_value" {
			known++
		}
	}
	if known < 8 {
		t.Errorf("%d known_value findings: %+v", known, out.Report.Details)
	}

	// Texts too: an error message, a progress line.
	for _, text := range []string{"Error: login failed for " + strings.ToUpper(pw), "progress: " + base64.StdEncoding.EncodeToString([]byte(pw))} {
		got := f.ApplyText(text, Options{Vault: v, Flow: fl})
		if strings.Contains(strings.ToLower(got.Text), "hunter2") || !strings.Contains(got.Text, RedactionMarker(ClassPassword)) {
			t.Errorf("ApplyText(%q) = %q", text, got.Text)
		}
	}
}

// TestFlowBounded: a flow keeps at most MaxBytes; when values were lost,
// calls a rule covers are refused rather than passed unchecked.
func TestFlowBounded(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	fl := newTestFlow(t, f, FlowOptions{Rules: crmToHTTP, MaxBytes: 64 << 10})
	doc := realisticResult(1 << 20)
	fl.Observe("crm.list_contacts", doc, Provenance{})
	st := fl.Stats()
	if st.Bytes > 64<<10 || st.Dropped == 0 || st.Values == 0 || st.Sources != 1 {
		t.Fatalf("Stats = %+v", st)
	}
	var fe *FlowError
	err := fl.Check("http.post", json.RawMessage(`{"v":"hello"}`))
	if !errors.As(err, &fe) || !fe.Untracked || fe.Source != "crm.list_contacts" || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Check after values were dropped = %v", err)
	}
	if err := fl.Check("mail.send", json.RawMessage(`{"v":"hello"}`)); err != nil {
		t.Errorf("mail.send: %v", err)
	}
	if p := fl.Provenance(json.RawMessage(`"hello"`)); p.String() != "crm.list_contacts" {
		t.Errorf("Provenance with dropped values = %v", p)
	}
}

func TestFlowManySources(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	rules := []Rule{{From: "crm.*", To: "mail.*"}, {From: "crm.special", To: "http.*"}}
	fl := newTestFlow(t, f, FlowOptions{Rules: rules})
	for i := range maxFlowSources + 10 {
		fl.Observe(fmt.Sprintf("crm.tool%d", i), json.RawMessage(fmt.Sprintf(`{"v":"value number %d"}`, i)), Provenance{})
	}
	fl.Observe("crm.special", json.RawMessage(`{"v":"from the special one 42"}`), Provenance{})
	var fe *FlowError
	if err := fl.Check("http.post", json.RawMessage(`{"x":"from the special one 42"}`)); !errors.As(err, &fe) || fe.Source != "crm.special" {
		t.Errorf("source past the 64th: %v", err)
	}
	if err := fl.Check("http.post", json.RawMessage(`{"x":"value number 5"}`)); err != nil {
		t.Errorf("value of another source: %v", err)
	}
	// Sources after the 63rd share a slot: a rule on one covers them all.
	if err := fl.Check("http.post", json.RawMessage(`{"x":"value number 70"}`)); !errors.As(err, &fe) || fe.Source != "crm.special" {
		t.Errorf("value of a source sharing the special one's slot: %v", err)
	}
	if st := fl.Stats(); st.Sources != maxFlowSources+11 {
		t.Errorf("Stats = %+v", st)
	}
}

// TestFlowTracksRuledSourcesOnly: values of a source no rule names are not
// kept for the rules (its sensitive values are, for the outputs).
func TestFlowTracksRuledSourcesOnly(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	fl := newTestFlow(t, f, FlowOptions{Rules: crmToHTTP})
	fl.Observe("catalog.search", json.RawMessage(`{"sku":"SKU-123456","title":"Blue widget large","contact":"sales@example.com"}`), Provenance{})
	if st := fl.Stats(); st.Values != 1 {
		t.Errorf("Stats = %+v, want the e-mail only", st)
	}
	if err := fl.Check("http.post", json.RawMessage(`{"q":"SKU-123456 sales@example.com"}`)); err != nil {
		t.Errorf("Check = %v", err)
	}
	// Stored data from crm read back through another tool is tracked.
	fl.Observe("memory.recall", json.RawMessage(`{"text":"order SKU-123456"}`), NewProvenance("crm.get"))
	if err := fl.Check("http.post", json.RawMessage(`{"q":"order SKU-123456"}`)); !errors.Is(err, ErrExfiltration) {
		t.Errorf("Check of a recalled crm value = %v", err)
	}
}

func TestFlowConcurrent(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	fl := newTestFlow(t, f, FlowOptions{Rules: crmToHTTP})
	v := newTestVault(t, VaultOptions{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				email := fmt.Sprintf("user%d.%d@example.com", g, i)
				fl.Observe("crm.get", json.RawMessage(`{"email":"`+email+`"}`), Provenance{})
				if err := fl.Check("http.post", json.RawMessage(`{"v":"`+email+`"}`)); !errors.Is(err, ErrExfiltration) {
					t.Errorf("Check = %v", err)
					return
				}
				if out := f.ApplyText("log "+strings.ToUpper(email), Options{Flow: fl, Vault: v}); strings.Contains(strings.ToLower(out.Text), email) {
					t.Errorf("ApplyText = %q", out.Text)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestFlowPathHidesKeys: the path in a FlowError does not show a key that
// holds a known or sensitive value.
func TestFlowPathHidesKeys(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	fl := newTestFlow(t, f, FlowOptions{Rules: crmToHTTP})
	fl.Observe("crm.get_contact", json.RawMessage(contact), Provenance{})
	fl.Observe("hr.get_employee", json.RawMessage(`{"email":"grace@example.org"}`), Provenance{})
	// The crm name in the third key is the violation; the keys above it
	// hold an e-mail from hr and one the detectors find.
	args := json.RawMessage(`{"GRACE@example.org":{"bob@example.org":{"Ada Lovelace":{"v":"ada@example.com"}}}}`)
	var fe *FlowError
	if err := fl.Check("http.post", args); !errors.As(err, &fe) || fe.Path != "/…/…" || !fe.InKey {
		t.Fatalf("Check = %v (%+v)", err, fe)
	}
	assertNoSecrets(t, "error", strings.ToLower(fe.Error()), []string{"grace@", "bob@", "lovelace"})
}

// TestFlowHidesLongValues: a value longer than the patterns the flow
// searches for is hidden whole, not only its head.
func TestFlowHidesLongValues(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	fl := newTestFlow(t, f, FlowOptions{})
	body := strings.Repeat("MIIEowIBAAKCAQEA7Zq3bWx9Lq0Rw8Vd2Fh", 30)
	secret := "s3cr3t-" + body
	fl.Observe("vault.read", argsOf(t, map[string]string{"client_secret": secret}), Provenance{})
	for _, out := range []string{
		"here: " + secret + " done",
		"upper: " + strings.ToUpper(secret) + " done",
	} {
		got := f.ApplyText(out, Options{Flow: fl, Budget: 1 << 20})
		if strings.Contains(strings.ToLower(got.Text), strings.ToLower(body[len(body)-40:])) || !strings.HasSuffix(got.Text, " done") {
			t.Errorf("long value not hidden whole: %q", got.Text)
		}
	}
}

// TestFlowSeenStrings: a string a tool returned as it is gets the plain
// search only (its encoded contents would not be hidden in the tool's
// result either); the same encoding made by the program is hidden.
func TestFlowSeenStrings(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	fl := newTestFlow(t, f, FlowOptions{})
	blob := "blob " + base64.StdEncoding.EncodeToString([]byte("hunter2-Horse"))
	tool := argsOf(t, map[string]string{"password": "hunter2-Horse", "attachment": blob})
	fl.Observe("crm.get_user", tool, Provenance{})
	out, err := f.Apply(Input{Result: tool}, Options{Flow: fl})
	if err != nil {
		t.Fatal(err)
	}
	bare, err := f.Apply(Input{Result: tool}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Full) != string(bare.Full) || !strings.Contains(string(out.Full), blob) {
		t.Errorf("the tool's own result: with the flow %s, without %s", out.Full, bare.Full)
	}
	made := f.ApplyText("program: "+base64.StdEncoding.EncodeToString([]byte("hunter2-Horse")), Options{Flow: fl})
	if strings.Contains(made.Text, "aHVudGVy") {
		t.Errorf("the program's encoding shows: %q", made.Text)
	}
}
