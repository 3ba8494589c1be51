package filter

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestReportLeanByDefault(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{Budget: 4096})
	v := newTestVault(t, VaultOptions{})
	doc := realisticResult(256 << 10)
	for _, details := range []bool{false, true} {
		out, err := f.Apply(Input{Result: doc}, Options{Vault: v, Details: details})
		if err != nil {
			t.Fatal(err)
		}
		r := out.Report
		rep, _ := json.Marshal(r)
		switch {
		case !details && (len(r.Details) != 0 || len(r.Cuts) > leanCuts || r.CutsTotal <= leanCuts || len(rep) > 1024):
			t.Errorf("lean report: %d details, %d of %d cuts, %d bytes: %s", len(r.Details), len(r.Cuts), r.CutsTotal, len(rep), rep)
		case details && (len(r.Details) != maxDetails || len(r.Cuts) <= leanCuts):
			t.Errorf("detailed report: %d details, %d cuts", len(r.Details), len(r.Cuts))
		}
		if r.Findings[ClassEmail] == 0 || r.Tokenized == 0 || r.Redacted == 0 {
			t.Errorf("details %v: counts missing: %+v", details, r.Findings)
		}
	}
	// A report with nothing to say is a few sizes.
	out, err := f.Apply(Input{Result: json.RawMessage(`{"n":1}`)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep, _ := json.Marshal(out.Report); string(rep) != `{"original_bytes":7,"filtered_bytes":7,"returned_bytes":7,"budget":4096,"cut":false}` {
		t.Errorf("empty report = %s", rep)
	}
}

// TestReportPathsHideKeys: a path in a report never shows a key the
// filter hid, in findings and in cuts.
func TestReportPathsHideKeys(t *testing.T) {
	t.Parallel()
	secrets := []string{"ada@example.com", "bob@example.org", "415-555-2671", "hunter22", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"}
	items := strings.Repeat(`"call 415-555-2671 or mail bob@example.org",`, 200)
	doc := `{"ada@example.com":{"password":"hunter22","notes":[` + items + `"end"]},` +
		`"by_key":{"sk_live_4eC39HqLyjWDarjtT1zdp7dc":{"bob@example.org":["x",{"415-555-2671":"` + strings.Repeat("y", 5000) + `"}]}},` +
		`"log":"hunter22 again"}`
	f := newTestFilter(t, Config{Budget: 2000})
	out, err := f.Apply(Input{Result: json.RawMessage(doc), Logs: []string{"hunter22 in a log"}}, Options{Vault: newTestVault(t, VaultOptions{}), Details: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, _ := json.Marshal(out.Report)
	assertNoSecrets(t, "report", string(rep), secrets)
	if len(out.Report.Details) < 5 || len(out.Report.Cuts) == 0 {
		t.Fatalf("report lacks details or cuts: %s", rep)
	}
	tokenPath := false
	for _, d := range out.Report.Details {
		if strings.HasPrefix(d.Path, "/⟦email:") && strings.HasSuffix(d.Path, "/password") {
			tokenPath = true
		}
	}
	if !tokenPath {
		t.Errorf("no finding under /⟦email:…⟧/password: %s", rep)
	}
	out2 := f.ApplyText("key sk_live_4eC39HqLyjWDarjtT1zdp7dc", Options{Details: true})
	rep, _ = json.Marshal(out2.Report)
	assertNoSecrets(t, "text report", string(rep), secrets)
}

func TestReportPointer(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 100)
	cases := []struct {
		toks []string
		want string
	}{
		{nil, ""},
		{[]string{"a", "0", "b/c"}, "/a/0/b~1c"},
		{[]string{long}, "/" + strings.Repeat("k", maxPathSegment-len(ellipsis)) + ellipsis},
		{[]string{strings.Repeat("x", 30) + "⟦email:0123abcd⟧"}, "/" + strings.Repeat("x", 30) + ellipsis},
		{[]string{strings.Repeat("é", 30)}, "/" + strings.Repeat("é", 18) + ellipsis},
	}
	for _, tc := range cases {
		if got := reportPointer(tc.toks); got != tc.want {
			t.Errorf("reportPointer(%q) = %q, want %q", tc.toks, got, tc.want)
		}
	}
	var deep []string
	for range 100 {
		deep = append(deep, "field")
	}
	deep = append(deep, "last")
	got := reportPointer(deep)
	if len(got) > maxPathLen || !strings.HasPrefix(got, "/field/…/") || !strings.HasSuffix(got, "/field/last") {
		t.Errorf("deep pointer = %q (%d bytes)", got, len(got))
	}
}
