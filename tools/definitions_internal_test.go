package tools

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

// TestSchemasCompileLazilyOnce: registering compiles nothing; the first
// call of a tool compiles its schema and the definitions it reaches, each
// once, and no other; tools with the same schema share one compilation.
func TestSchemasCompileLazilyOnce(t *testing.T) {
	t.Parallel()
	defs, err := NewDefinitions(map[string]json.RawMessage{
		"A": json.RawMessage(`{"type":"object","properties":{"b":{"$ref":"#/$defs/B"}}}`),
		"B": json.RawMessage(`{"type":"string"}`),
		"C": json.RawMessage(`{"type":"object","properties":{"b":{"$ref":"#/$defs/B"}}}`),
		"D": json.RawMessage(`{"type":"integer"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	h := func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`1`), nil }
	same := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
	r := NewRegistry()
	err = r.Register(
		Tool{Name: "x.a", Summary: "s", Handler: h, InputDefs: defs, InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}}}`)},
		Tool{Name: "x.c", Summary: "s", Handler: h, InputDefs: defs, InputSchema: json.RawMessage(`{"type":"object","properties":{"c":{"$ref":"#/$defs/C"}}}`)},
		Tool{Name: "x.c2", Summary: "s", Handler: h, InputDefs: defs, InputSchema: json.RawMessage(`{"type":"object","properties":{"c":{"$ref":"#/$defs/C"}}}`)},
		Tool{Name: "y.one", Summary: "s", Handler: h, InputSchema: same},
		Tool{Name: "y.two", Summary: "s", Handler: h, InputSchema: same},
	)
	if err != nil {
		t.Fatal(err)
	}
	compiled := func() []string { return slices.Sorted(maps.Keys(defs.done)) }
	if len(defs.sizes) != 0 || len(defs.done) != 0 || defs.compiler != nil {
		t.Fatalf("registering parsed or compiled definitions: sizes %v, done %v", defs.sizes, defs.done)
	}
	call := func(name string) {
		t.Helper()
		if _, err := r.Call(t.Context(), name, json.RawMessage(`{}`)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	call("x.a")
	if got := compiled(); !slices.Equal(got, []string{"A", "B"}) {
		t.Errorf("after x.a, compiled %v, want [A B]", got)
	}
	call("x.c")
	call("x.c2")
	if got := compiled(); !slices.Equal(got, []string{"A", "B", "C"}) {
		t.Errorf("after x.c, compiled %v, want [A B C]", got)
	}
	if len(defs.roots) != 2 {
		t.Errorf("%d roots compiled, want 2 (x.c and x.c2 have one schema)", len(defs.roots))
	}
	if len(defs.parsed) != 0 {
		t.Errorf("parsed definitions left behind: %v", slices.Sorted(maps.Keys(defs.parsed)))
	}
	call("y.one")
	call("y.two")
	one, _ := r.tools["y.one"].input.get()
	two, _ := r.tools["y.two"].input.get()
	if one == nil || one != two {
		t.Error("two tools with the same schema compiled it twice")
	}
}

// TestPrepareCompilesTheLargestSchemasDefinitions: Prepare compiles the
// definitions that the root reaching the most of them reaches, and
// neither that root nor the definitions only the others reach; a first
// call of a tool then compiles its own schema and what is left.
func TestPrepareCompilesTheLargestSchemasDefinitions(t *testing.T) {
	t.Parallel()
	defs, err := NewDefinitions(map[string]json.RawMessage{
		"A": json.RawMessage(`{"type":"object","properties":{"b":{"$ref":"#/$defs/B"},"c":{"$ref":"#/$defs/C"}}}`),
		"B": json.RawMessage(`{"type":"string"}`),
		"C": json.RawMessage(`{"type":"integer"}`),
		"D": json.RawMessage(`{"type":"boolean"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	small := json.RawMessage(`{"type":"object","properties":{"d":{"$ref":"#/$defs/D"}}}`)
	large := json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}}}`)
	if err := defs.Prepare(small, large); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(defs.done)); !slices.Equal(got, []string{"A", "B", "C"}) {
		t.Errorf("compiled %v, want A, B and C", got)
	}
	if len(defs.roots) != 0 {
		t.Errorf("%d roots compiled, want none", len(defs.roots))
	}
	s, err := defs.compile(large)
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Validate(json.RawMessage(`{"a":{"b":"x","c":"not an integer"}}`)); len(p) != 1 {
		t.Errorf("problems %v, want one", p)
	}
	if err := defs.Prepare(); err != nil {
		t.Errorf("Prepare of nothing: %v", err)
	}
}
