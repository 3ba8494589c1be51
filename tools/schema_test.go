package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
)

// deepSchema nests n object schemas.
func deepSchema(n int) string {
	return strings.Repeat(`{"type":"object","properties":{"a":`, n) + `{}` + strings.Repeat(`}}`, n)
}

// wideSchema is an object of n properties.
func wideSchema(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
	}
	b.WriteString(`}}`)
	return b.String()
}

// TestSchemaBounds: a schema too deep or too wide to compile cheaply is
// refused before it is compiled (compiling a 1,000-deep one took seconds
// of CPU), and one within the bounds compiles.
func TestSchemaBounds(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		schema  string
		refused bool
	}{
		"1,000 deep":             {deepSchema(1000), true},
		"deeper than the bound":  {deepSchema(tools.MaxSchemaDepth), true},
		"20,000 properties":      {wideSchema(20000), true},
		"array items 1,000 deep": {strings.Repeat(`{"items":`, 1000) + `{}` + strings.Repeat(`}`, 1000), true},
		"within the bounds":      {deepSchema(tools.MaxSchemaDepth - 1), false},
		"many properties":        {wideSchema(1000), false},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := tools.CompileSchema(json.RawMessage(tc.schema))
			if tc.refused != errors.Is(err, tools.ErrSchemaTooLarge) {
				t.Fatalf("CompileSchema: %v, want refused %v", err, tc.refused)
			}
		})
	}
}

// TestUnusableSchemaMakesOneToolUnavailable: a tool whose input schema
// cannot be compiled — invalid, beyond the bounds, or referring to a file
// — registers with the others, and its calls fail as tool_unavailable
// with the reason; the other tools of the same registration work.
func TestUnusableSchemaMakesOneToolUnavailable(t *testing.T) {
	t.Parallel()
	ok := func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`"ok"`), nil }
	bad := map[string]string{
		"x.invalid":  `{"type":"nonsense"}`,
		"x.deep":     deepSchema(1000),
		"x.wide":     wideSchema(20000),
		"x.file_ref": `{"$ref":"file:///etc/passwd"}`,
	}
	r := tools.NewRegistry()
	ts := []tools.Tool{{Name: "x.good", Summary: "s", Handler: ok, InputSchema: json.RawMessage(`{"type":"object"}`)}}
	for name, schema := range bad {
		ts = append(ts, tools.Tool{Name: name, Summary: "s", Handler: ok, InputSchema: json.RawMessage(schema)})
	}
	if err := r.Register(ts...); err != nil {
		t.Fatalf("Register: %v", err)
	}
	for name := range bad {
		_, err := r.Call(t.Context(), name, json.RawMessage(`{}`))
		if tools.CodeOf(err) != tools.CodeToolUnavailable || !strings.Contains(err.Error(), "input schema") {
			t.Errorf("%s: %v, want %s naming the input schema", name, err, tools.CodeToolUnavailable)
		}
		if err := r.Validate(name, json.RawMessage(`{}`)); tools.CodeOf(err) != tools.CodeToolUnavailable {
			t.Errorf("Validate %s: %v, want %s", name, err, tools.CodeToolUnavailable)
		}
	}
	if out, err := r.Call(t.Context(), "x.good", nil); err != nil || string(out) != `"ok"` {
		t.Errorf("x.good: %s %v", out, err)
	}
}

// TestDefinitions: tools whose schemas refer to shared definitions
// validate as the standalone documents would, recursive definitions
// included, and InputDocument gives that document.
func TestDefinitions(t *testing.T) {
	t.Parallel()
	defs, err := tools.NewDefinitions(map[string]json.RawMessage{
		"Pet":    json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"owner":{"$ref":"#/$defs/Person"}},"required":["name"]}`),
		"Person": json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"friends":{"type":"array","items":{"$ref":"#/$defs/Person"}}}}`),
		"Unused": json.RawMessage(`{"type":"integer"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	echo := func(_ context.Context, a json.RawMessage) (json.RawMessage, error) { return a, nil }
	r := tools.NewRegistry()
	err = r.Register(
		tools.Tool{Name: "pets.add", Summary: "s", Handler: echo, InputDefs: defs, OutputDefs: defs,
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"pet":{"$ref":"#/$defs/Pet"}},"required":["pet"],"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"$ref":"#/$defs/Pet"}`)},
		tools.Tool{Name: "pets.meet", Summary: "s", Handler: echo, InputDefs: defs,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"who":{"$ref":"#/$defs/Person"}}}`)},
		tools.Tool{Name: "pets.dangling", Summary: "s", Handler: echo, InputDefs: defs,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"#/$defs/Nothing"}}}`)},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool, args string
		problems   []string // paths
	}{
		{"pets.add", `{"pet":{"name":"Rex","owner":{"name":"Ann","friends":[{"name":"Bo"}]}}}`, nil},
		{"pets.add", `{"pet":{"owner":{"friends":[{"name":1}]}}}`, []string{"/pet", "/pet/owner/friends/0/name"}},
		{"pets.add", `{}`, []string{""}},
		{"pets.meet", `{"who":{"friends":[{"friends":[{"name":false}]}]}}`, []string{"/who/friends/0/friends/0/name"}},
	} {
		_, err := r.Call(t.Context(), tc.tool, json.RawMessage(tc.args))
		var te *tools.Error
		errors.As(err, &te)
		var got []string
		if te != nil {
			for _, p := range te.Problems {
				got = append(got, p.Path)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.problems) {
			t.Errorf("%s(%s): problems at %v, want %v (%v)", tc.tool, tc.args, got, tc.problems, err)
		}
	}
	if _, err := r.Call(t.Context(), "pets.dangling", json.RawMessage(`{}`)); tools.CodeOf(err) != tools.CodeToolUnavailable {
		t.Errorf("a reference to an undefined definition: %v, want %s", err, tools.CodeToolUnavailable)
	}

	add, _ := r.Get("pets.add")
	doc := add.OutputDocument()
	var got struct {
		Ref  string                     `json:"$ref"`
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatalf("OutputDocument %s: %v", doc, err)
	}
	if got.Ref != "#/$defs/Pet" || len(got.Defs) != 2 || got.Defs["Pet"] == nil || got.Defs["Person"] == nil {
		t.Errorf("OutputDocument: %s, want Pet with the definitions it reaches (Pet, Person), not Unused", doc)
	}
	s, err := tools.CompileSchema(add.InputDocument())
	if err != nil {
		t.Fatalf("InputDocument does not compile by itself: %v", err)
	}
	if ps := s.Validate(json.RawMessage(`{"pet":{"name":"Rex","owner":{"friends":[{"name":1}]}}}`)); len(ps) != 1 || ps[0].Path != "/pet/owner/friends/0/name" {
		t.Errorf("InputDocument validates differently: %v", ps)
	}
	if string((&tools.Tool{InputSchema: json.RawMessage(`{}`), InputDefs: defs}).InputDocument()) != `{}` {
		t.Error("a schema that reaches no definition is its own document")
	}
}

// TestDefinitionsRefused: definitions with names that would need
// escaping, or that are not JSON, are refused, and so is a tool whose
// root has $defs of its own beside shared ones.
func TestDefinitionsRefused(t *testing.T) {
	t.Parallel()
	for name, defs := range map[string]map[string]json.RawMessage{
		"slash in name": {"a/b": json.RawMessage(`{}`)},
		"quote in name": {`a"b`: json.RawMessage(`{}`)},
		"not JSON":      {"a": json.RawMessage(`{`)},
	} {
		if _, err := tools.NewDefinitions(defs); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	defs, _ := tools.NewDefinitions(map[string]json.RawMessage{"a": json.RawMessage(`{}`)})
	h := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	err := tools.NewRegistry().Register(tools.Tool{Name: "x.y", Summary: "s", Handler: h, InputDefs: defs,
		InputSchema: json.RawMessage(`{"$defs":{"a":{}},"$ref":"#/$defs/a"}`)})
	if err == nil {
		t.Error("a root with $defs of its own beside shared definitions was registered")
	}
}

// TestSchemaValuesCountedFirst (issue 19, attack15 I4): a schema is
// counted in JSON values before it is decoded, and one of more than
// MaxSchemaValues is refused with ErrSchemaTooLarge, saying so, having
// decoded nothing: one upstream tool's schema of 15 MB of {} under an
// unknown keyword was decoded whole into maps, 862 MiB, before its depth
// and subschemas were measured. The same for a tool's schema that refers
// to definitions, and for a definition it reaches. (Not parallel: it
// measures what it allocates.)
func TestSchemaValuesCountedFirst(t *testing.T) {
	pad := func(n int) string {
		return `{"type":"object","x-pad":[` + strings.Repeat("{},", n-1) + `{}]}`
	}
	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	huge := json.RawMessage(pad(1_000_000)) // 3 MB; about 170 MB decoded
	var err error
	if n := allocated(func() { _, err = tools.CompileSchema(huge) }); !errors.Is(err, tools.ErrSchemaTooLarge) ||
		!strings.Contains(err.Error(), fmt.Sprintf("more than %d JSON values", tools.MaxSchemaValues)) || n > 4<<20 {
		t.Errorf("CompileSchema of a million values: %v, having allocated %d bytes; want refused, saying the bound, having allocated little", err, n)
	}
	if _, err := tools.CompileSchema(json.RawMessage(pad(tools.MaxSchemaValues / 2))); err != nil {
		t.Errorf("CompileSchema within the bound: %v", err)
	}
	ok := func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`"ok"`), nil }
	defs, err := tools.NewDefinitions(map[string]json.RawMessage{"Huge": huge})
	if err != nil {
		t.Fatal(err)
	}
	r := tools.NewRegistry()
	if err := r.Register(
		tools.Tool{Name: "x.root", Summary: "s", Handler: ok, InputDefs: defs, InputSchema: huge},
		tools.Tool{Name: "x.def", Summary: "s", Handler: ok, InputDefs: defs, InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/Huge"}}}`)},
	); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"x.root", "x.def"} {
		var err error
		n := allocated(func() { _, err = r.Call(t.Context(), name, json.RawMessage(`{}`)) })
		if err == nil || !strings.Contains(err.Error(), "JSON values") || n > 4<<20 {
			t.Errorf("%s: %v, having allocated %d bytes; want unavailable, saying the bound, having allocated little", name, err, n)
		}
	}
}
