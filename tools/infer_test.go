package tools_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
)

// observeAll observes each value and returns the inferrer.
func observeAll(tb testing.TB, values ...string) *tools.Inferrer {
	tb.Helper()
	var in tools.Inferrer
	for _, v := range values {
		if _, err := in.Observe(json.RawMessage(v)); err != nil {
			tb.Fatalf("observe %.80s: %v", v, err)
		}
	}
	return &in
}

// checkSchema checks what every inferred schema must be: within the
// bounds, read back by ResumeInferrer as it is, and satisfied by every
// value it was learned from.
func checkSchema(tb testing.TB, in *tools.Inferrer, values ...string) {
	tb.Helper()
	schema := in.Schema()
	var root any
	if err := json.Unmarshal(schema, &root); err != nil {
		tb.Fatalf("schema %s: %v", schema, err)
	}
	nodes, depth := schemaSize(root, 0)
	if nodes > tools.InferMaxNodes || depth > tools.InferMaxDepth {
		tb.Errorf("schema of %d nodes, %d deep; the bounds are %d and %d", nodes, depth, tools.InferMaxNodes, tools.InferMaxDepth)
	}
	back, err := tools.ResumeInferrer(schema, in.Observed())
	if err != nil {
		tb.Fatalf("resume from %s: %v", schema, err)
	}
	if got := back.Schema(); string(got) != string(schema) {
		tb.Errorf("resumed schema differs:\n got %s\nwant %s", got, schema)
	}
	s, err := tools.CompileSchema(schema)
	if err != nil {
		tb.Fatalf("compile %s: %v", schema, err)
	}
	for _, v := range values {
		if ps := s.Validate(json.RawMessage(v)); len(ps) > 0 {
			tb.Errorf("%.80s does not satisfy the schema learned from it, %s: %v", v, schema, ps)
		}
	}
}

// schemaSize counts the schemas in an inferred schema and its depth.
func schemaSize(s any, depth int) (nodes, deepest int) {
	o, ok := s.(map[string]any)
	if !ok {
		return 0, depth
	}
	nodes, deepest = 1, depth
	var subs []any
	if ps, ok := o["properties"].(map[string]any); ok {
		for _, p := range ps {
			subs = append(subs, p)
		}
	}
	subs = append(subs, o["items"], o["additionalProperties"])
	for _, sub := range subs {
		if m, ok := sub.(map[string]any); ok {
			n, d := schemaSize(m, depth+1)
			nodes += n
			deepest = max(deepest, d)
		}
	}
	return nodes, deepest
}

func TestInferrer(t *testing.T) {
	t.Parallel()
	manyKeys := func(n int, value string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`"field%02d":%s`, i, value)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	tests := []struct {
		name   string
		values []string
		want   string
	}{
		{"an integer", []string{`1`}, `{"type":"integer"}`},
		{"integers and a fraction make numbers", []string{`1`, `2.5`, `3`}, `{"type":"number"}`},
		{"a nullable string", []string{`"a"`, `null`}, `{"type":["string","null"]}`},
		{"text that is not JSON stays a string", []string{`"The sum of 2 and 3 is 5."`}, `{"type":"string"}`},
		{"required is what every object has", []string{`{"a":1,"b":"x"}`, `{"a":2,"c":true}`},
			`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"boolean"}},"required":["a"]}`},
		{"array items merge", []string{`[1,2]`, `["x"]`, `[]`}, `{"type":"array","items":{"type":["string","integer"]}}`},
		{"an empty array says nothing of its items", []string{`[]`}, `{"type":"array"}`},
		{"objects of several shapes merge into one", []string{`[{"type":"text","text":"a"},{"type":"image","data":"b","mimeType":"image/png"}]`},
			`{"type":"array","items":{"type":"object","properties":{"data":{"type":"string"},"mimeType":{"type":"string"},"text":{"type":"string"},"type":{"type":"string"}},"required":["type"]}}`},
		{"a union keeps one object", []string{`{"a":1}`, `"x"`, `{"b":2}`, `null`},
			`{"type":["object","string","null"],"properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}`},
		{"an object seen after null", []string{`null`, `{"a":1}`, `{"a":2}`},
			`{"type":["object","null"],"properties":{"a":{"type":"integer"}},"required":["a"]}`},
		{"a format every string has", []string{`"2024-05-01T10:00:00Z"`, `"2025-01-31T23:59:59.5+02:00"`}, `{"type":"string","format":"date-time"}`},
		{"no format when strings disagree", []string{`"2024-05-01T10:00:00Z"`, `"yesterday"`, `"2024-05-01T10:00:00Z"`}, `{"type":"string"}`},
		{"no format when the first string has none", []string{`"soon"`, `"2024-05-01"`}, `{"type":"string"}`},
		{"dates", []string{`"2024-05-01"`}, `{"type":"string","format":"date"}`},
		{"uuids", []string{`"3fa85f64-5717-4562-b3fc-2c963f66afa6"`}, `{"type":"string","format":"uuid"}`},
		{"e-mail addresses", []string{`"ada@example.org"`}, `{"type":"string","format":"email"}`},
		{"URIs", []string{`"demo://resource/dynamic/text/1"`, `"https://example.org/a?b=c"`}, `{"type":"string","format":"uri"}`},
		{"formats inside arrays and objects", []string{`{"at":"2024-05-01","links":["https://a.example/x"]}`},
			`{"type":"object","properties":{"at":{"type":"string","format":"date"},"links":{"type":"array","items":{"type":"string","format":"uri"}}},"required":["at","links"]}`},
		{"dates as keys make a map", []string{`{"2024-05-01":{"n":1},"2024-05-02":{"n":2,"note":"x"}}`},
			`{"type":"object","additionalProperties":{"type":"object","properties":{"n":{"type":"integer"},"note":{"type":"string"}},"required":["n"]}}`},
		{"e-mail addresses as keys make a map", []string{`{"ada@example.org":1}`}, `{"type":"object","additionalProperties":{"type":"integer"}}`},
		{"uuids as keys make a map", []string{`{"a3b8d1b6-0b3b-4b1a-9c1a-1a2b3c4d5e6f":"x"}`}, `{"type":"object","additionalProperties":{"type":"string"}}`},
		{"too many names make a map", []string{manyKeys(tools.InferMaxProperties+1, `"v"`)}, `{"type":"object","additionalProperties":{"type":"string"}}`},
		{"names gathered over results make a map", []string{manyKeys(tools.InferMaxProperties, `1`), `{"another":"x"}`},
			`{"type":"object","additionalProperties":{"type":["string","integer"]}}`},
		{"a map stays a map", []string{`{"2024-05-01":1}`, `{"name":"x"}`}, `{"type":"object","additionalProperties":{"type":["string","integer"]}}`},
		{"field names as they come", []string{`{"@id":"x","Content-Type":"text/plain","$ref":"#","user.name":"ada","_x":1}`},
			`{"type":"object","properties":{"$ref":{"type":"string"},"@id":{"type":"string"},"Content-Type":{"type":"string"},"_x":{"type":"integer"},"user.name":{"type":"string"}},"required":["$ref","@id","Content-Type","_x","user.name"]}`},
		{"an empty object", []string{`{}`}, `{"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := observeAll(t, tt.values...)
			if got := string(in.Schema()); got != tt.want {
				t.Errorf("schema\n got %s\nwant %s", got, tt.want)
			}
			if in.Observed() != len(tt.values) {
				t.Errorf("observed %d, want %d", in.Observed(), len(tt.values))
			}
			checkSchema(t, in, tt.values...)
		})
	}
}

func TestInferrerChanged(t *testing.T) {
	t.Parallel()
	var in tools.Inferrer
	if in.Schema() != nil {
		t.Errorf("schema before any value: %s", in.Schema())
	}
	for i, step := range []struct {
		value   string
		changed bool
	}{
		{`{"a":1}`, true},
		{`{"a":7}`, false},
		{`{"a":1,"b":null}`, true}, // b is new
		{`{"a":3}`, false},         // b was never required
		{`{"a":1.5}`, true},        // integer → number
		{`{"a":2}`, false},
	} {
		changed, err := in.Observe(json.RawMessage(step.value))
		if err != nil || changed != step.changed {
			t.Errorf("step %d, %s: changed %v, %v; want %v", i, step.value, changed, err, step.changed)
		}
	}
}

func TestInferrerRefuses(t *testing.T) {
	t.Parallel()
	big := `"` + strings.Repeat("x", tools.InferMaxBytes) + `"`
	for _, tt := range []struct {
		name, value string
		tooLarge    bool
	}{
		{"not JSON", `{"a":`, false},
		{"two values", `1 2`, false},
		{"empty", ``, false},
		{"too large", big, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var in tools.Inferrer
			changed, err := in.Observe(json.RawMessage(tt.value))
			if err == nil || changed || in.Observed() != 0 || in.Schema() != nil {
				t.Fatalf("observe: changed %v, err %v, observed %d", changed, err, in.Observed())
			}
			if got := errors.Is(err, tools.ErrInferTooLarge); got != tt.tooLarge {
				t.Errorf("errors.Is(%v, ErrInferTooLarge) = %v", err, got)
			}
		})
	}
}

// TestInferrerBounds observes values meant to blow a schema up: deep,
// wide, and many different names over many results.
func TestInferrerBounds(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat(`{"a":[`, 40) + `1` + strings.Repeat(`]}`, 40)
	wide := func(prefix string, n int, value string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`"%s%d":%s`, prefix, i, value)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	// 30 × 30 distinct names, nested: more nodes than the bound.
	inner := wide("inner", 30, `"x"`)
	nested := wide("outer", 30, inner)
	var manyResults []string
	for i := range 20 {
		manyResults = append(manyResults, wide(fmt.Sprintf("r%dk", i), 30, `{"v":1}`))
	}
	tests := []struct {
		name   string
		values []string
		check  func(t *testing.T, schema string)
	}{
		{"deep nesting stops at the depth bound", []string{deep}, func(t *testing.T, schema string) {
			if strings.Count(schema, `"type"`) > tools.InferMaxDepth+1 {
				t.Errorf("schema deeper than the bound: %s", schema)
			}
		}},
		{"nested names stop at the node bound", []string{nested}, func(t *testing.T, schema string) {
			if !strings.Contains(schema, `"additionalProperties":true`) {
				t.Errorf("an object whose properties were left out is not marked open: %.300s", schema)
			}
			for i := range 30 {
				if name := fmt.Sprintf(`"outer%d":`, i); !strings.Contains(schema, name) {
					t.Errorf("the top-level name %s was left out for names below others", name)
				}
			}
		}},
		{"names over many results become a map", manyResults, func(t *testing.T, schema string) {
			if want := `{"type":"object","additionalProperties":{"type":"object","properties":{"v":{"type":"integer"}},"required":["v"]}}`; schema != want {
				t.Errorf("schema\n got %s\nwant %s", schema, want)
			}
		}},
		{"a huge array is one item schema", []string{"[" + strings.Repeat(`{"id":1,"tags":["a"]},`, 20000) + `{"id":2,"tags":[]}]`}, func(t *testing.T, schema string) {
			if want := `{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},"required":["id","tags"]}}`; schema != want {
				t.Errorf("schema\n got %s\nwant %s", schema, want)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := observeAll(t, tt.values...)
			tt.check(t, string(in.Schema()))
			checkSchema(t, in, tt.values...)
		})
	}
}

// TestResumeInferrer checks that learning resumed from a schema goes on
// as if it had never stopped, and that foreign schemas are refused.
func TestResumeInferrer(t *testing.T) {
	t.Parallel()
	values := []string{`{"a":1,"at":"2024-05-01","xs":[{"k":"v"}]}`, `{"a":2,"xs":[]}`, `null`, `{"a":3,"at":"later","xs":[{"k":"w","n":1}]}`}
	whole := observeAll(t, values...)
	first := observeAll(t, values[:2]...)
	resumed, err := tools.ResumeInferrer(first.Schema(), first.Observed())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range values[2:] {
		if _, err := resumed.Observe(json.RawMessage(v)); err != nil {
			t.Fatal(err)
		}
	}
	if string(resumed.Schema()) != string(whole.Schema()) || resumed.Observed() != whole.Observed() {
		t.Errorf("resumed: %d values, %s\nwhole: %d values, %s", resumed.Observed(), resumed.Schema(), whole.Observed(), whole.Schema())
	}
	for _, bad := range []string{
		`[]`,
		`{"type":"object","properties":{"a":{"$ref":"#"}}}`,
		`{"type":"date"}`,
		`{"type":"object","required":["a"]}`,
		`{"type":"object","properties":{"a":{}},"additionalProperties":{"type":"string"}}`,
		strings.Repeat(`{"items":`, tools.InferMaxDepth+2) + `{}` + strings.Repeat(`}`, tools.InferMaxDepth+2),
	} {
		if _, err := tools.ResumeInferrer(json.RawMessage(bad), 1); err == nil {
			t.Errorf("resumed from %s", bad)
		}
	}
}

// FuzzInferrer observes arbitrary JSON values and checks the schema's
// invariants after each.
func FuzzInferrer(f *testing.F) {
	for _, seed := range []string{`{"a":1,"b":[1,"x",null]}`, `[{"2024-01-01":true}]`, `"https://x.example"`, `[[[[[[[[[[1]]]]]]]]]]`, `{"a":{"a":{"a":{}}}}`} {
		f.Add(seed, `{"a":"2024-05-01T10:00:00Z"}`)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		var in tools.Inferrer
		var seen []string
		for _, v := range []string{a, b, a} {
			if !json.Valid([]byte(v)) {
				continue
			}
			if _, err := in.Observe(json.RawMessage(v)); err != nil {
				t.Fatalf("observe %q: %v", v, err)
			}
			seen = append(seen, v)
		}
		if len(seen) > 0 {
			checkSchema(t, &in, seen...)
		}
	})
}

func BenchmarkInferrerObserve(b *testing.B) {
	var items []string
	for i := range 100 {
		items = append(items, fmt.Sprintf(`{"name":"file%d.txt","size":%d,"modified":"2024-05-01T10:00:00Z","tags":["a","b"],"owner":{"id":"3fa85f64-5717-4562-b3fc-2c963f66afa6","email":"ada@example.org"}}`, i, i*100))
	}
	v := json.RawMessage(`{"total":100,"files":[` + strings.Join(items, ",") + `]}`)
	var in tools.Inferrer
	b.SetBytes(int64(len(v)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := in.Observe(v); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/observe")
}
