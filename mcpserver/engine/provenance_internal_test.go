package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// TestStoreUnionKeepsTheFlowsBound (issue 19, attack21 P1): the store's
// union of provenances (an update, a consolidation's survivor, a tag's)
// is bounded as the flow's: past the names a provenance keeps it is of
// every source, which the flow reads as such — never the first names in
// order, which dropped crm.get_contact.
func TestStoreUnionKeepsTheFlowsBound(t *testing.T) {
	t.Parallel()
	if memory.AnySource != filter.AnySource {
		t.Fatalf("memory.AnySource %q, filter.AnySource %q", memory.AnySource, filter.AnySource)
	}
	names := func(n int) json.RawMessage {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf("aa.%03d", i)
		}
		b, _ := json.Marshal(s)
		return b
	}
	for _, tc := range []struct {
		name          string
		stored, given json.RawMessage
		any           bool
	}{
		{"at the bound", names(memory.MaxProvenanceSources - 1), json.RawMessage(`["crm.get_contact"]`), false},
		{"past the bound", names(memory.MaxProvenanceSources), json.RawMessage(`["crm.get_contact"]`), true},
		{"every source given", json.RawMessage(`["crm.get_contact"]`), json.RawMessage(`["*"]`), true},
		{"every source stored", json.RawMessage(`["*"]`), json.RawMessage(`["crm.get_contact"]`), true},
	} {
		u := memory.UnionProvenance(tc.stored, tc.given)
		p, err := filter.ParseProvenance(string(u))
		if err != nil {
			t.Fatalf("%s: %s: %v", tc.name, u, err)
		}
		if p.IsAny() != tc.any || !tc.any && !slices.Contains(p.Sources(), "crm.get_contact") {
			t.Errorf("%s: the union %.80s… reads as %d names (every source: %v)", tc.name, u, len(p.Sources()), p.IsAny())
		}
		if !tc.any && len(p.Sources()) != memory.MaxProvenanceSources && len(p.Sources()) != 2 {
			t.Errorf("%s: %d names", tc.name, len(p.Sources()))
		}
	}
}

// TestStoredOfReadsStoreToolsOnly (issue 19, attack21 P1): a result's
// sources are read only from a store tool's result, where the tool says.
func TestStoredOfReadsStoreToolsOnly(t *testing.T) {
	t.Parallel()
	out := json.RawMessage(`{"text": "x", "provenance": ["aa.00"], "metadata": {"provenance": ["aa.01"]}}`)
	if s := storedOf(&tools.Tool{Name: "util.echo"}, out); !s.from.IsZero() {
		t.Errorf("util.echo's result named sources: %v", s.from)
	}
	if s := storedOf(nil, out); !s.from.IsZero() {
		t.Errorf("a call of no tool named sources: %v", s.from)
	}
	store := &tools.Tool{Name: "memory.get", Stored: &tools.StoredFields{Provenance: []string{"provenance"}}}
	if s := storedOf(store, out); s.from.String() != "aa.00" {
		t.Errorf("memory.get's sources: %v, want aa.00 alone", s.from)
	}
}

// TestDecodedTexts (issue 19, attack21 P2): stored data a result gives
// back in base64 is known as its text, and as the characters of its
// bytes when any is not ASCII.
func TestDecodedTexts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Head of Finance", []string{"Head of Finance"}},
		{"Müller", []string{"Müller", "MÃ¼ller"}},
		{"a\xffb", []string{"aÿb"}},
	} {
		if got := decodedTexts([]byte(tc.in)); !slices.Equal(got, tc.want) {
			t.Errorf("decodedTexts(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
