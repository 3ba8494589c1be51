package filter

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestFlowCarry: what a flow knows of the secrets in a call's arguments
// goes with the call to another flow, whose outputs then hide them though
// the arguments put them under names that say nothing.
func TestFlowCarry(t *testing.T) {
	t.Parallel()
	f := newTestFilter(t, Config{})
	planned := newTestFlow(t, f, FlowOptions{})
	planned.Observe("vault.get_secret", json.RawMessage(`{"password":"hunter2-Pw-9f8e7d6c5b4a","email":"dana@example.com","city":"Springfield"}`), Provenance{})

	args := json.RawMessage(`{"name":"HUNTER2-PW-9F8E7D6C5B4A","note":"write to dana@example.com","city":"Springfield"}`)
	known := planned.KnownIn(args)
	var classes []string
	for _, k := range known {
		classes = append(classes, string(k.Class))
	}
	slices.Sort(classes)
	if strings.Join(classes, ",") != "email,password" {
		t.Fatalf("known in the arguments: %+v", known)
	}
	if got := planned.KnownIn(json.RawMessage(`{"city":"Springfield"}`)); len(got) != 0 {
		t.Errorf("known in arguments without a secret: %+v", got)
	}

	committed := newTestFlow(t, f, FlowOptions{})
	committed.ObserveKnown("plan", append(known, Known{Class: "nonsense", Value: "whatever-value"}), Provenance{})
	out, err := f.Apply(Input{Result: json.RawMessage(`{"name":"hunter2-Pw-9f8e7d6c5b4a","echo":"dana@example.com","x":"whatever-value"}`)}, Options{Flow: committed})
	if err != nil {
		t.Fatal(err)
	}
	got := string(out.Limited)
	if strings.Contains(got, "hunter2") || strings.Contains(got, "dana@example.com") {
		t.Errorf("the committed flow shows a carried secret: %s", got)
	}
	if !strings.Contains(got, "⟦password:redacted⟧") || !strings.Contains(got, "whatever-value") {
		t.Errorf("carried values not hidden as their class, or an unknown class taken: %s", got)
	}
	var nilFlow *Flow
	if nilFlow.KnownIn(args) != nil {
		t.Error("a nil flow knows something")
	}
	nilFlow.ObserveKnown("plan", known, Provenance{})
}

// TestKeyDerive: a derived key depends on the key and the purpose, and
// the filter's own purposes are refused.
func TestKeyDerive(t *testing.T) {
	t.Parallel()
	k1, _ := NewKey()
	k2, _ := NewKey()
	a, err := k1.Derive("codecell/test v1", 32)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := k1.Derive("codecell/test v1", 32)
	c, _ := k1.Derive("codecell/other v1", 32)
	d, _ := k2.Derive("codecell/test v1", 32)
	if string(a) != string(b) || string(a) == string(c) || string(a) == string(d) || len(a) != 32 {
		t.Error("derived keys do not depend on exactly the key and the purpose")
	}
	for _, info := range []string{principalKeyInfo + "alice", sealKeyInfo} {
		if _, err := k1.Derive(info, 32); err == nil {
			t.Errorf("derived a key for the filter's own purpose %q", info)
		}
	}
}
