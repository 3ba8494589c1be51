package tools_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/codecell/codecell/tools"
)

// TestProvenanceFields: the provenance fields of an output schema are the
// properties it declares by that name, under properties, items and
// allOf/anyOf/oneOf — never inside an object that declares no properties,
// which is data.
func TestProvenanceFields(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type": "object", "properties": {
		"provenance": {"type": "array"},
		"metadata": {"type": "object"},
		"value": {},
		"results": {"type": "array", "items": {"allOf": [
			{"type": "object", "properties": {"provenance": {"type": "array"}, "merged_from": {"type": "array", "items": {"properties": {"record": {"properties": {"provenance": {}}}}}}}},
			{"type": "object", "properties": {"score": {"type": "number"}}}]}},
		"either": {"anyOf": [{"properties": {"provenance": {}}}, {"type": "string"}]}}}`)
	got := tools.ProvenanceFields(schema)
	want := []string{"either/provenance", "provenance", "results/*/merged_from/*/record/provenance", "results/*/provenance"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("ProvenanceFields = %q, want %q", got, want)
	}
	if got := tools.ProvenanceFields(json.RawMessage(`{"type": "object", "properties": {"metadata": {"type": "object"}}}`)); got != nil {
		t.Errorf("a schema with no provenance field: %q", got)
	}
}

// TestStoredFieldsRead (issue 19, attack21 P1 and P2): a result's sources
// are read where its tool says, not from a "provenance" key of the data
// it shows; a base64 field is decoded when its object says so.
func TestStoredFieldsRead(t *testing.T) {
	t.Parallel()
	s := &tools.StoredFields{Provenance: []string{"provenance", "results/*/provenance"}, Base64: []string{"data"}}
	out := json.RawMessage(`{"provenance": ["crm.get"], "metadata": {"provenance": ["aa.00"]},
		"results": [{"provenance": ["jira.get", "crm.get"], "value": {"provenance": ["aa.01"]}}, {"provenance": "not an array"}],
		"encoding": "base64", "data": "SGVhZCBvZiBGaW5hbmNl"}`)
	d := s.Read(out)
	if !slices.Equal(d.Sources, []string{"crm.get", "jira.get"}) {
		t.Errorf("Sources = %q, want crm.get and jira.get only", d.Sources)
	}
	if len(d.Decoded) != 1 || string(d.Decoded[0]) != "Head of Finance" {
		t.Errorf("Decoded = %q", d.Decoded)
	}
	// Data as text is not decoded, even when it is valid base64.
	if d := s.Read(json.RawMessage(`{"encoding": "utf8", "data": "SGVhZCBvZiBGaW5hbmNl"}`)); d.Decoded != nil {
		t.Errorf("text decoded: %q", d.Decoded)
	}
	// A tool that is no store tool names no source, whatever it returns.
	var none *tools.StoredFields
	if d := none.Read(out); d.Sources != nil || d.Decoded != nil {
		t.Errorf("nil StoredFields read %+v", d)
	}
}
