package filter

import (
	"encoding/json"
	"errors"
	goparser "go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const customers = `{"customers":[
 {"id":1,"name":"Ada Lovelace","email":"ada@example.com","phone":"+44 20 7946 0958","ssn":"123-45-6789",
  "card_number":4111111111111111,"iban":"DE89 3704 0044 0532 0130 00","password":"correct-horse-9",
  "api_key":"sk_live_4eC39HqLyjWDarjtT1zdp7dc","ip":"203.0.113.7","dob":"1815-12-10",
  "notes":"prefers email ada@example.com; old pw correct-horse-9"},
 {"id":2,"name":"Bob","email":"bob@example.org","phone":null,"ssn":null,"card_number":null,"notes":"call 415-555-2671"}
],"count":2,"next_page_token":"CgwI2rWxBhDA8tnAAQ"}`

// secretsOf lists the values of customers that must not reach a model.
var secretsOf = []string{
	"ada@example.com", "+44 20 7946 0958", "123-45-6789", "4111111111111111",
	"DE89 3704 0044 0532 0130 00", "correct-horse-9", "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
	"203.0.113.7", "1815-12-10", "bob@example.org", "415-555-2671",
}

func newTestFilter(tb testing.TB, cfg Config) *Filter {
	tb.Helper()
	f, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

func assertNoSecrets(tb testing.TB, where, text string, secrets []string) {
	tb.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			tb.Errorf("%s holds %q:\n%s", where, s, text)
		}
	}
}

func TestApplyCustomerRecords(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{Compact: true})
	v := newTestVault(t, VaultOptions{})
	origin := func(value string) []string { return []string{"crm.list_customers"} }
	out, err := f.Apply(Input{Result: json.RawMessage(customers), Logs: []string{"fetched ada@example.com", "pw correct-horse-9 ok"}}, Options{Vault: v, Origin: origin, Details: true})
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"Full": string(out.Full), "Limited": string(out.Limited), "Compact": out.Compact, "Logs": strings.Join(out.Logs, "\n")} {
		assertNoSecrets(t, name, text, secretsOf)
	}
	rep, _ := json.Marshal(out.Report)
	assertNoSecrets(t, "Report", string(rep), secretsOf)

	var doc struct {
		Customers []map[string]any `json:"customers"`
		Next      string           `json:"next_page_token"`
	}
	if err := json.Unmarshal(out.Full, &doc); err != nil {
		t.Fatal(err)
	}
	ada := doc.Customers[0]
	// Personal data is tokenized, credentials are redacted, the rest stays.
	for field, class := range map[string]Class{"email": ClassEmail, "phone": ClassPhone, "ssn": ClassSSN, "card_number": ClassCard, "iban": ClassIBAN, "ip": ClassIP, "dob": ClassDateOfBirth} {
		s, _ := ada[field].(string)
		if !regexpToken(class).MatchString(s) {
			t.Errorf("%s = %v, want a %s token", field, ada[field], class)
		}
	}
	for field, class := range map[string]Class{"password": ClassPassword, "api_key": ClassAPIKey} {
		if ada[field] != RedactionMarker(class) {
			t.Errorf("%s = %v, want %s", field, ada[field], RedactionMarker(class))
		}
	}
	if ada["name"] != "Ada Lovelace" || ada["id"] != float64(1) || doc.Next != "CgwI2rWxBhDA8tnAAQ" {
		t.Errorf("non-sensitive data changed: %v, next %q", ada, doc.Next)
	}
	if doc.Customers[1]["phone"] != nil {
		t.Errorf("null under a sensitive name became %v", doc.Customers[1]["phone"])
	}
	// The same value gets the same token wherever it is.
	emailTok := ada["email"].(string)
	if notes := ada["notes"].(string); !strings.Contains(notes, emailTok) || !strings.Contains(notes, RedactionMarker(ClassPassword)) {
		t.Errorf("notes = %q, want the e-mail token and the password marker", notes)
	}
	if !strings.Contains(out.Logs[0], emailTok) || out.Logs[1] != "pw "+RedactionMarker(ClassPassword)+" ok" {
		t.Errorf("logs = %q", out.Logs)
	}
	// Tokens resolve to the values, numbers as numbers, with their sources.
	args, _ := json.Marshal(map[string]any{"to": emailTok, "pan": ada["card_number"], "msg": "hi " + emailTok})
	got, err := v.Resolve(args, "mail.send")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"msg":"hi ada@example.com","pan":4111111111111111,"to":"ada@example.com"}` {
		t.Errorf("Resolve = %s", got)
	}
	if srcs, ok := v.Sources(emailTok); !ok || len(srcs) != 1 || srcs[0] != "crm.list_customers" {
		t.Errorf("Sources = %v, %v", srcs, ok)
	}
	// The report counts by class and action, and knows the sizes.
	r := out.Report
	if r.Findings[ClassEmail] < 3 || r.Findings[ClassPassword] < 2 || r.Tokenized == 0 || r.Redacted == 0 {
		t.Errorf("report = %+v", r)
	}
	if r.OriginalBytes != len(customers) || r.FilteredBytes != len(out.Full) || r.ReturnedBytes != len(out.Limited) || r.Cut || r.Budget != DefaultBudget {
		t.Errorf("report sizes = %+v", r)
	}
	if r.Logs == nil || r.Logs.Lines != 2 || r.Logs.LinesReturned != 2 {
		t.Errorf("log stats = %+v", r.Logs)
	}
	if len(r.Details) == 0 || r.Details[0].Path != "/customers/0/email" || r.Details[0].In != "result" {
		t.Errorf("first detail = %+v", r.Details)
	}
}

func regexpToken(c Class) interface{ MatchString(string) bool } {
	return tokenMatcher{c}
}

type tokenMatcher struct{ c Class }

func (m tokenMatcher) MatchString(s string) bool {
	t, ok := parseTokenAt(s, 0)
	return ok && t.end == len(s) && t.class == m.c && !t.redacted() && len(t.id) == tokenHexLen
}

func TestApplyExfiltrationEndToEnd(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	v := newTestVault(t, VaultOptions{Rules: []Rule{{From: "crm.*", To: "http.*"}}})
	origin := func(value string) []string {
		if value == "ada@example.com" {
			return []string{"crm.get_customer"}
		}
		return nil
	}
	out, err := f.Apply(Input{Result: json.RawMessage(`{"email":"ada@example.com","other":"bob@example.org"}`)}, Options{Vault: v, Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]string
	json.Unmarshal(out.Full, &doc)
	args := json.RawMessage(`{"body":"` + doc["email"] + `"}`)
	if _, err := v.Resolve(args, "http.post"); !errors.Is(err, ErrExfiltration) {
		t.Errorf("crm value to http.post: %v, want ErrExfiltration", err)
	}
	if _, err := v.Resolve(args, "mail.send"); err != nil {
		t.Errorf("crm value to mail.send: %v", err)
	}
	if _, err := v.Resolve(json.RawMessage(`{"body":"`+doc["other"]+`"}`), "http.post"); err != nil {
		t.Errorf("value of unknown source to http.post: %v", err)
	}
}

func TestApplyPolicy(t *testing.T) {
	t.Parallel()
	doc := json.RawMessage(`{"email":"ada@example.com","card":"4111 1111 1111 1111","author_email":"bob@example.org",` +
		`"commit":{"authorEmail":"carol@example.net"},"ip":"203.0.113.7","phone":"+1 415 555 2671"}`)
	f := newTestFilter(t, Config{Policy: Policy{
		Actions:     map[Class]Action{ClassCard: ActionMask, ClassEmail: ActionRedact, ClassPhone: ActionAllow},
		AllowFields: []string{"authorEmail"},
		AllowTools:  []string{"net.*"},
	}})
	origin := func(value string) []string {
		if value == "203.0.113.7" {
			return []string{"net.lookup"}
		}
		return []string{"crm.get"}
	}
	out, err := f.Apply(Input{Result: doc}, Options{Vault: newTestVault(t, VaultOptions{}), Origin: origin})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"email":"⟦email:redacted⟧","card":"**** **** **** 1111","author_email":"bob@example.org",` +
		`"commit":{"authorEmail":"carol@example.net"},"ip":"203.0.113.7","phone":"+1 415 555 2671"}`
	if string(out.Full) != want {
		t.Errorf("Full =\n%s\nwant\n%s", out.Full, want)
	}
	r := out.Report
	if r.Masked != 1 || r.Redacted != 1 || r.Allowed < 2 || r.Tokenized != 0 {
		t.Errorf("report = %+v", r)
	}

	// MinConfidence ignores weak findings: "auth" (0.7) but not "password".
	g := newTestFilter(t, Config{Policy: Policy{MinConfidence: 0.8}})
	out, err = g.Apply(Input{Result: json.RawMessage(`{"auth":"xyz123abc","password":"xyz123abc!"}`)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Full) != `{"auth":"xyz123abc","password":"⟦password:redacted⟧"}` {
		t.Errorf("MinConfidence: %s", out.Full)
	}
}

func TestApplyWithoutVaultRedacts(t *testing.T) {
	t.Parallel()
	out, err := newTestFilter(t, Config{}).Apply(Input{Result: json.RawMessage(`["ada@example.com"]`)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Full) != `["⟦email:redacted⟧"]` || out.Report.Redacted != 1 || out.Report.Tokenized != 0 {
		t.Errorf("Full = %s, report %+v", out.Full, out.Report)
	}
}

func TestApplyKeys(t *testing.T) {
	t.Parallel()
	v := newTestVault(t, VaultOptions{})
	doc := `{"ada@example.com":{"n":1},"AKIAIOSFODNN7EXAMPLE":1,"ASIAY34FZKBOKMUTVV7A":2}`
	out, err := newTestFilter(t, Config{}).Apply(Input{Result: json.RawMessage(doc)}, Options{Vault: v, Details: true})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Full, &m); err != nil {
		t.Fatal(err)
	}
	if len(m) != 3 {
		t.Fatalf("keys collapsed: %s", out.Full)
	}
	assertNoSecrets(t, "Full", string(out.Full), []string{"ada@example.com", "AKIAIOSFODNN7EXAMPLE", "ASIAY34FZKBOKMUTVV7A"})
	marker := RedactionMarker(ClassCloudKey)
	if _, ok := m[marker]; !ok {
		t.Errorf("no %s key in %s", marker, out.Full)
	}
	if _, ok := m[marker+" #2"]; !ok {
		t.Errorf("duplicate marker key not numbered in %s", out.Full)
	}
	if !out.Report.Details[0].InKey {
		t.Errorf("finding in a key not marked: %+v", out.Report.Details[0])
	}
}

func TestApplyBudget(t *testing.T) {
	t.Parallel()
	doc := realisticResult(100 << 10)
	f := newTestFilter(t, Config{Budget: 2000, MaxBudget: 8000})
	for _, tc := range []struct{ ask, want int }{{0, 2000}, {5000, 5000}, {100000, 8000}, {10, MinBudget}} {
		out, err := f.Apply(Input{Result: doc}, Options{Budget: tc.ask})
		if err != nil {
			t.Fatal(err)
		}
		if out.Report.Budget != tc.want || len(out.Limited) > tc.want || !out.Report.Cut || len(out.Report.Cuts) == 0 {
			t.Errorf("budget %d: report budget %d, %d bytes, cut %v", tc.ask, out.Report.Budget, len(out.Limited), out.Report.Cut)
		}
		if !json.Valid(out.Limited) {
			t.Errorf("budget %d: invalid JSON", tc.ask)
		}
	}
}

func TestApplyLogs(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{LogBudget: 300, MaxLogLine: 60})
	var logs []string
	for i := range 50 {
		logs = append(logs, "line "+strconv.Itoa(i)+" token=ghp_"+strings.Repeat("aB3", 12))
	}
	logs[0] = strings.Repeat("x", 200)
	out, err := f.Apply(Input{Result: json.RawMessage(`null`), Logs: logs}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, l := range out.Logs {
		total += len(l)
		if strings.Contains(l, "ghp_") {
			t.Errorf("log line %q keeps a token", l)
		}
	}
	if total > 300 {
		t.Errorf("logs take %d bytes, budget 300", total)
	}
	last := out.Logs[len(out.Logs)-1]
	if !strings.HasPrefix(last, "… ") || !strings.HasSuffix(last, " more lines") {
		t.Errorf("last line %q", last)
	}
	if !strings.HasSuffix(out.Logs[0], "… [cut: 200 bytes total]") || len(out.Logs[0]) > 60 {
		t.Errorf("long line = %q", out.Logs[0])
	}
	st := out.Report.Logs
	if st.Lines != 50 || st.LinesCut == 0 || st.LinesReturned != len(out.Logs) || st.ReturnedBytes != total {
		t.Errorf("log stats = %+v", st)
	}
}

func TestApplyText(t *testing.T) {
	t.Parallel()
	v := newTestVault(t, VaultOptions{})
	f := newTestFilter(t, Config{})
	msg := `tool crm.update failed: duplicate email ada@example.com (password=hunter22, retry with hunter22)`
	res := f.ApplyText(msg, Options{Vault: v, Details: true})
	out, rep := res.Text, res.Report
	assertNoSecrets(t, "text", out, []string{"ada@example.com", "hunter22"})
	if !strings.HasPrefix(out, "tool crm.update failed: duplicate email ⟦email:") || rep.Findings[ClassPassword] != 2 || rep.Details[0].In != "text" {
		t.Errorf("ApplyText = %q, %+v", out, rep)
	}
	if plain := f.ApplyText("nothing to see", Options{}); plain.Text != "nothing to see" || plain.Report.Cut {
		t.Errorf("plain text changed: %+v", plain)
	}
}

func TestApplyInvalid(t *testing.T) {
	t.Parallel()
	_, err := newTestFilter(t, Config{}).Apply(Input{Result: json.RawMessage(`{"password":"hunter22"`)}, Options{})
	var se *SyntaxError
	if !errors.As(err, &se) || strings.Contains(err.Error(), "hunter22") {
		t.Errorf("Apply of invalid JSON = %v", err)
	}
	out, err := newTestFilter(t, Config{}).Apply(Input{}, Options{})
	if err != nil || string(out.Full) != "null" || string(out.Limited) != "null" {
		t.Errorf("empty result: %v, %v", out, err)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config{
		"negative budget": {Budget: -1},
		"max below":       {Budget: 10000, MaxBudget: 5000},
		"unknown class":   {Policy: Policy{Actions: map[Class]Action{"shoe_size": ActionRedact}}},
		"unknown action":  {Policy: Policy{Actions: map[Class]Action{ClassEmail: "shred"}}},
		"bad glob":        {Policy: Policy{AllowTools: []string{"[x"}}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
}

func TestReportAdd(t *testing.T) {
	t.Parallel()
	var total Report
	total.Add(Report{Findings: map[Class]int{ClassEmail: 2}, Tokenized: 2, OriginalBytes: 100, ReturnedBytes: 50})
	total.Add(Report{Findings: map[Class]int{ClassEmail: 1, ClassPassword: 1}, Redacted: 1, Tokenized: 1, OriginalBytes: 10, ReturnedBytes: 10, Cut: true, CutsTotal: 3})
	if total.Findings[ClassEmail] != 3 || total.Findings[ClassPassword] != 1 || total.Tokenized != 3 || total.Redacted != 1 ||
		total.OriginalBytes != 110 || total.ReturnedBytes != 60 || !total.Cut || total.CutsTotal != 3 {
		t.Errorf("total = %+v", total)
	}
}

// TestImportsNoCodecellPackage keeps the design's rule: filter imports no
// other codecell package but tools/jsonstr, the JSON string encoder, a leaf.
func TestImportsNoCodecellPackage(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := goparser.ParseFile(fset, name, nil, goparser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, "github.com/codecell/") && p != "github.com/codecell/codecell/tools/jsonstr" {
				t.Errorf("%s imports %s", name, p)
			}
		}
	}
}

func TestApplyFieldNameEdges(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	v := newTestVault(t, VaultOptions{})
	cases := []struct{ in, want string }{
		// Placeholders under sensitive names stay.
		{`{"password":"********","api_key":"${API_KEY}","phone":"N/A","ssn":""}`, `{"password":"********","api_key":"${API_KEY}","phone":"N/A","ssn":""}`},
		// Booleans and nulls are not values to hide.
		{`{"password":true,"token":null}`, `{"password":true,"token":null}`},
		// A strong name covers a whole object; a weak one only scalars.
		{`{"credentials":{"user":"ada","pass":"x1y2z3"}}`, `{"credentials":{"user":"⟦secret:redacted⟧","pass":"⟦secret:redacted⟧"}}`},
		{`{"auth":{"method":"oauth2","scopes":["read"]}}`, `{"auth":{"method":"oauth2","scopes":["read"]}}`},
		{`{"auth":"xyz123abc"}`, `{"auth":"⟦token:redacted⟧"}`},
		// A JSON-encoded string under a strong name is hidden whole.
		{`{"credentials":"{\"user\":\"ada\"}"}`, `{"credentials":"⟦secret:redacted⟧"}`},
		// Near misses keep their values.
		{`{"tokens_used":1234567,"pinned":true,"author":"Ada","next_page_token":"abc123def"}`, `{"tokens_used":1234567,"pinned":true,"author":"Ada","next_page_token":"abc123def"}`},
	}
	for _, tc := range cases {
		out, err := f.Apply(Input{Result: json.RawMessage(tc.in)}, Options{Vault: v})
		if err != nil {
			t.Fatal(err)
		}
		if string(out.Full) != tc.want {
			t.Errorf("Apply(%s) =\n%s\nwant\n%s", tc.in, out.Full, tc.want)
		}
	}
}
