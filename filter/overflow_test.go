package filter

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// overflowAddresses is attack21 A3's run at the flow: 63 sources in
// their slots (the 64th, a62, the last slot), fill results that each name
// 64 more sources through the provenance of what they return, then 12
// results that give 4,096 addresses 4,096 distinct sets of slots, the
// last one in each. It returns the flow and the addresses.
func overflowAddresses(tb testing.TB, f *Filter, fill int) (*Flow, []string) {
	tb.Helper()
	fl := newTestFlow(tb, f, FlowOptions{Rules: []Rule{{From: "crm.*", To: "http.*"}}})
	var first []string
	for i := range 63 {
		first = append(first, fmt.Sprintf("a%02d", i))
	}
	fl.Observe("util.echo", json.RawMessage(`{"text":"x"}`), NewProvenance(first...))
	for c := range fill {
		var names []string
		for i := range 64 {
			names = append(names, fmt.Sprintf("o%d_%d", c, i))
		}
		fl.Observe("util.echo", json.RawMessage(`{"text":"x"}`), NewProvenance(names...))
	}
	emails := make([]string, 4096)
	for j := range emails {
		emails[j] = fmt.Sprintf("user%d@example.org", j)
	}
	for b := range 12 {
		var mine []string
		for j, e := range emails {
			if j>>b&1 != 0 {
				mine = append(mine, e)
			}
		}
		doc, _ := json.Marshal(map[string]any{"items": mine})
		fl.Observe("util.echo", doc, NewProvenance(fmt.Sprintf("a%02d", b), "a62"))
	}
	return fl, emails
}

// TestOverflowNamesBounded (attack21 A3): the names of the sources past
// the 63rd are bounded, and what the output filter asks of them for each
// value it tokenizes does not copy them all for each set of slots: a
// run's 4,096 addresses after 12,800 names had allocated 820 MB.
func TestOverflowNamesBounded(t *testing.T) {
	f, v := newTestFilter(t, Config{}), newTestVault(t, VaultOptions{})
	measure := func(fill int) (uint64, *Flow) {
		fl, emails := overflowAddresses(t, f, fill)
		out, _ := json.Marshal(emails)
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		res, err := f.Apply(Input{Result: out}, Options{Vault: v, Flow: fl})
		runtime.ReadMemStats(&m1)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(res.Full), "@example.org") {
			t.Fatalf("an address passed: %.200s", res.Full)
		}
		return m1.TotalAlloc - m0.TotalAlloc, fl
	}
	control, _ := measure(0)
	grown, fl := measure(200)
	t.Logf("the output's filtering allocated %d KiB, %d KiB after 12,800 names", control>>10, grown>>10)
	if grown > control+32<<20 {
		t.Errorf("after 12,800 source names the output's filtering allocated %d MiB (control %d MiB)", grown>>20, control>>20)
	}
	if st := fl.Stats(); st.Sources > maxFlowSources+maxOverflowNames {
		t.Errorf("the flow names %d sources", st.Sources)
	}
	// Past the bound, the last slot is every source's: a value of a
	// source it met past it is refused by every rule, and its provenance
	// says so.
	fl.Observe("crm.secret_store", json.RawMessage(`{"v":"the launch code 4417-A"}`), Provenance{})
	var fe *FlowError
	err := fl.Check("http.post", json.RawMessage(`{"body":"the launch code 4417-A"}`))
	if !errors.As(err, &fe) || fe.Source != AnySource || !strings.Contains(err.Error(), "taken as every source") {
		t.Errorf("Check of a value from a source past the names = %v", err)
	}
	if p := fl.Provenance(json.RawMessage(`"the launch code 4417-A"`)); !slices.Contains(p.Sources(), AnySource) {
		t.Errorf("Provenance = %v, want %s among them", p, AnySource)
	}
	// A later run that reads it back: every rule covers its values.
	later := newTestFlow(t, f, FlowOptions{Rules: []Rule{{From: "crm.*", To: "http.*"}}})
	later.Observe("memory.get", json.RawMessage(`{"content":"the launch code 4417-A"}`), NewProvenance(AnySource))
	if err := later.Check("http.post", json.RawMessage(`{"body":"the launch code 4417-A"}`)); !errors.As(err, &fe) {
		t.Errorf("Check of a stored value of every source = %v", err)
	}
}

// TestTokenOfAnySource: a token whose sources include AnySource (a
// value of the flow's last slot past its names) is refused by every rule
// whose To covers the call.
func TestTokenOfAnySource(t *testing.T) {
	t.Parallel()
	v := newTestVault(t, VaultOptions{Rules: []Rule{{From: "crm.*", To: "http.*"}}})
	tok := v.Tokenize(ClassEmail, "ada@example.com", []string{AnySource, "tool.one"})
	var re *RuleError
	if _, err := v.Resolve(json.RawMessage(`{"to":"`+tok+`"}`), "http.post"); !errors.As(err, &re) || re.Source != AnySource {
		t.Errorf("Resolve to http = %v, want a *RuleError of %s", err, AnySource)
	}
	if _, err := v.Resolve(json.RawMessage(`{"to":"`+tok+`"}`), "mail.send"); err != nil {
		t.Errorf("Resolve to a tool no rule covers = %v", err)
	}
}
