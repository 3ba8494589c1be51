package filter

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// manyNames returns n source names that sort before "crm.".
func manyNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("aa.%03d", i)
	}
	return out
}

// TestProvenanceNeverDropsASource (issue 19, attack21 P1): past its
// bound a provenance is of every source, which every rule's From
// matches; it kept the first 64 names in order, and names sorting
// before "crm." cut crm.get_contact off.
func TestProvenanceNeverDropsASource(t *testing.T) {
	t.Parallel()
	crm := "crm.get_contact"
	for _, tc := range []struct {
		name string
		p    Provenance
		any  bool
	}{
		{"64 names", NewProvenance(manyNames(64)...), false},
		{"65 names", NewProvenance(append(manyNames(64), crm)...), true},
		{"a union past the bound", NewProvenance(manyNames(64)...).Union(NewProvenance(crm)), true},
		{"a union with every source", NewProvenance(crm).Union(NewProvenance(AnySource)), true},
		{"every source named among others", NewProvenance("b.x", AnySource, "a.y"), true},
	} {
		if tc.p.IsAny() != tc.any {
			t.Errorf("%s: IsAny() = %v, want %v (%d names)", tc.name, tc.p.IsAny(), tc.any, len(tc.p.Sources()))
		}
		if !tc.any && len(tc.p.Sources()) != 64 {
			t.Errorf("%s: %d names, want 64", tc.name, len(tc.p.Sources()))
		}
		b, _ := json.Marshal(tc.p)
		var back Provenance
		if err := json.Unmarshal(b, &back); err != nil || back.String() != tc.p.String() {
			t.Errorf("%s: JSON %s read back as %v, %v", tc.name, b, back, err)
		}
	}
	if p, _ := ParseProvenance(`["*"]`); !p.IsAny() {
		t.Errorf(`["*"] reads as %v, not every source`, p)
	}
}

// TestFlowEverySource: data of every source is tracked under any rule
// and refused wherever a rule forbids some source to go, with an error
// that says why; the flow's own provenance of a value with more sources
// than a provenance keeps is every source, never 64 of them.
func TestFlowEverySource(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	rules := []Rule{{From: "crm.*", To: "http.*"}}
	fl := newTestFlow(t, f, FlowOptions{Rules: rules})
	fl.Observe("memory.get", json.RawMessage(`{"content":"contact ada.lovelace@example.com"}`), NewProvenance(AnySource))
	err := fl.Check("http.post", json.RawMessage(`{"v":"contact ada.lovelace@example.com"}`))
	var fe *FlowError
	if !errors.As(err, &fe) || fe.Source != AnySource || !strings.Contains(err.Error(), "taken as every source") {
		t.Fatalf("Check of data of every source: %v", err)
	}
	if err := fl.Check("jira.comment", json.RawMessage(`{"v":"contact ada.lovelace@example.com"}`)); err != nil {
		t.Errorf("a destination no rule names was refused: %v", err)
	}

	// A value echoed beside 64 made-up sources, then stored.
	fl = newTestFlow(t, f, FlowOptions{Rules: rules})
	fl.Observe("crm.get_contact", json.RawMessage(`{"email":"grace.hopper@example.com"}`), Provenance{})
	fl.Observe("util.echo", json.RawMessage(`{"text":"grace.hopper@example.com"}`), NewProvenance(manyNames(64)...))
	if p := fl.Provenance(json.RawMessage(`{"content":"contact grace.hopper@example.com"}`)); !p.IsAny() {
		t.Errorf("the provenance of a value of 66 sources is %d names, not every source: %v", len(p.Sources()), p)
	}
}

// TestVaultTokenOfEverySource (issue 19, attack21 P1): a token keeps at
// most 32 sources; past them it is of every source, and refused wherever
// a rule forbids some source to go. It kept the first 32 given, and 40
// names sorting before "crm." had crm.get_contact dropped.
func TestVaultTokenOfEverySource(t *testing.T) {
	t.Parallel()
	v := newTestVault(t, VaultOptions{Rules: []Rule{{From: "crm.*", To: "http.*"}}})
	tok := v.Tokenize(ClassEmail, "ada@example.com", append(manyNames(40), "crm.get_contact"))
	if s, _ := v.Sources(tok); len(s) != 1 || s[0] != AnySource {
		t.Fatalf("sources of a token of 41 sources: %v", s)
	}
	_, err := v.Resolve(json.RawMessage(`{"v":"`+tok+`"}`), "http.post")
	var re *RuleError
	if !errors.As(err, &re) || re.Source != AnySource || !strings.Contains(err.Error(), "taken as every source") {
		t.Fatalf("resolve for http: %v", err)
	}
	if _, err := v.Resolve(json.RawMessage(`{"v":"`+tok+`"}`), "jira.comment"); err != nil {
		t.Errorf("resolve for a destination no rule names: %v", err)
	}
	// Sources added one at a time reach the bound the same way.
	tok = v.Tokenize(ClassEmail, "bob@example.com", manyNames(32))
	v.Tokenize(ClassEmail, "bob@example.com", []string{"crm.get_contact"})
	if s, _ := v.Sources(tok); len(s) != 1 || s[0] != AnySource {
		t.Fatalf("sources of a token given a 33rd: %v", s)
	}
}
