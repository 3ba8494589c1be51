package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// executeCodeSchema is the shape of execute_code's input schema
// (mcpserver/testdata/toolsnaps/execute_code.json), required added.
const executeCodeSchema = `{"additionalProperties": false, "type": "object", "required": ["code"], "properties": {
	"code": {"description": "The program.", "minLength": 1, "type": "string"},
	"language": {"default": "javascript", "enum": ["javascript", "typescript"], "type": "string"},
	"timeout_ms": {"description": "Deadline.", "maximum": 600000, "minimum": 1, "type": "integer"},
	"budget_bytes": {"maximum": 262144, "minimum": 1024, "type": "integer"},
	"details": {"type": "boolean"},
	"purpose": {"maxLength": 5, "type": "string"},
	"mode": {"enum": ["run", "plan"], "type": "string"}}}`

// flatSchemas are schemas with and without a flat check.
var flatSchemas = []struct {
	doc  string
	flat bool
}{
	{executeCodeSchema, true},
	{`{"type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "integer"}}}`, true},
	{`{"type": "object", "properties": {"a": {"type": "string", "enum": ["x", "é", "\u00e9"]}}, "additionalProperties": true}`, true},
	{`{"type": "object", "properties": {"a": {"type": "integer", "minimum": -5, "maximum": -1}}, "required": ["a", "b"]}`, true},
	{`{"type": "object", "properties": {"a": {"type": "number"}}}`, false},
	{`{"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}`, false},
	{`{"type": "object", "properties": {"a": {"type": ["string", "null"]}}}`, false},
	{`{"type": "object", "properties": {"a": {"enum": ["x"]}}}`, false},
	{`{"type": "object", "properties": {"a": {"type": "integer", "minimum": 1.5}}}`, false},
	{`{"type": "object", "properties": {"a": {"type": "string"}}, "minProperties": 1}`, false},
	{`{"properties": {"a": {"type": "string"}}}`, false},
}

// flatDocs are arguments to check against each of flatSchemas.
var flatDocs = []string{
	`{}`, ` {"code": "1+1"} `, `{"code": ""}`, `{"code": "x", "language": "typescript"}`, `{"code": "x", "language": "python"}`,
	`{"code": "a\nb\u00e9\ud83d\ude00"}`, `{"code": "x", "purpose": "\u00e9\u00e9\u00e9\u00e9\u00e9"}`, `{"code": "x", "purpose": "ééééé"}`,
	`{"code": "x", "purpose": "éééééé"}`, `{"code": "x", "purpose": "\ud83d"}`, "{\"code\": \"x\", \"purpose\": \"\xff\xfe\"}",
	`{"code": "x", "timeout_ms": 600000}`, `{"code": "x", "timeout_ms": 600001}`, `{"code": "x", "timeout_ms": 0}`, `{"code": "x", "timeout_ms": 1.0}`,
	`{"code": "x", "timeout_ms": 1e3}`, `{"code": "x", "timeout_ms": -0}`, `{"code": "x", "timeout_ms": 99999999999999999999}`, `{"code": "x", "timeout_ms": "5"}`,
	`{"code": "x", "details": true}`, `{"code": "x", "details": null}`, `{"code": "x", "details": 1}`, `{"code": "x", "mode": "plan", "budget_bytes": 1024}`,
	`{"code": "x", "extra": {"a": [1, "]}", {"b": "\""}]}}`, `{"code": "x", "code": "y"}`, `{"co\u0064e": "x"}`, `{"code": 1}`, `{"code": null}`,
	`{"a": "x"}`, `{"a": "é"}`, `{"a": "\u00e9"}`, `{"a": "y", "n": 3}`, `{"a": -3}`, `{"a": -6}`, `{"a": 0}`, `{"a": -1, "b": 1}`, `{"a": -1, "b": "\\"}`,
	`{"a": "x", "extra": [1, 2, {"c": null}], "n": -12}`, `{"n": 12.5}`, `{"a": "x",}`, `{"a": "x"`, `{"a": "x"} {}`, `[]`, `null`, `"x"`, ``, `{"a"}`,
	`{"code": "x", "language": "javascript", "timeout_ms": 5, "budget_bytes": 2048, "details": false, "purpose": "ab", "mode": "run"}`,
}

// TestFlatValidation: a flat schema accepts arguments without the
// validator exactly where the validator accepts them, and what it does
// not accept the validator reports.
func TestFlatValidation(t *testing.T) {
	t.Parallel()
	for _, sc := range flatSchemas {
		s, err := CompileSchema(json.RawMessage(sc.doc))
		if err != nil {
			t.Fatal(sc.doc, err)
		}
		if (s.flat != nil) != sc.flat {
			t.Errorf("%s: flat %v, want %v", sc.doc, s.flat != nil, sc.flat)
		}
		slow := &Schema{s: s.s}
		for _, d := range flatDocs {
			// What the flat check does not accept goes to the validator,
			// whose messages name additional properties in map order: the
			// answers must agree on whether there are problems.
			got, want := s.Validate(json.RawMessage(d)), slow.Validate(json.RawMessage(d))
			if (got == nil) != (want == nil) {
				t.Errorf("schema %s, arguments %q: %v, the validator says %v", sc.doc, d, got, want)
			}
			if s.flat != nil && s.flat.accepts([]byte(d)) && want != nil {
				t.Errorf("schema %s: the flat check accepts %q, the validator says %v", sc.doc, d, want)
			}
		}
	}
	// The check must accept what it is for, or it saves nothing.
	s, _ := CompileSchema(json.RawMessage(executeCodeSchema))
	for _, d := range []string{`{"code": "1+1"}`, `{"code": "a\nb", "language": "typescript", "timeout_ms": 5000, "details": true}`} {
		if s.flat == nil || !s.flat.accepts([]byte(d)) {
			t.Errorf("the flat check leaves %s to the validator", d)
		}
	}
}

// FuzzFlatValidation checks the flat check against the validator on
// arbitrary arguments: whatever it accepts, the validator accepts.
func FuzzFlatValidation(f *testing.F) {
	for _, d := range flatDocs {
		f.Add(d)
	}
	var schemas []*Schema
	for _, sc := range flatSchemas {
		if s, err := CompileSchema(json.RawMessage(sc.doc)); err == nil && s.flat != nil {
			schemas = append(schemas, s)
		}
	}
	f.Fuzz(func(t *testing.T, d string) {
		for _, s := range schemas {
			got, want := s.Validate(json.RawMessage(d)), (&Schema{s: s.s}).Validate(json.RawMessage(d))
			if (got == nil) != (want == nil) {
				t.Fatalf("arguments %q: %v, the validator says %v", d, got, want)
			}
		}
	})
}

// BenchmarkFlatValidate measures validating execute_code's arguments,
// with the flat check and with the validator alone.
//
//	go test -run '^$' -bench FlatValidate ./tools/
func BenchmarkFlatValidate(b *testing.B) {
	s, err := CompileSchema(json.RawMessage(executeCodeSchema))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name, doc string
		validator bool
	}{
		{"1+1", `{"code": "1+1"}`, false},
		{"1+1_validator", `{"code": "1+1"}`, true},
		{"program", `{"code": "const r = await github.search_issues({q: \"is:open\"});\nreturn r.items.map(i => i.title).slice(0, 5);", "language": "javascript", "timeout_ms": 10000}`, false},
		{"program_validator", `{"code": "const r = await github.search_issues({q: \"is:open\"});\nreturn r.items.map(i => i.title).slice(0, 5);", "language": "javascript", "timeout_ms": 10000}`, true},
	} {
		v := s
		if bc.validator {
			v = &Schema{s: s.s}
		}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if ps := v.Validate(json.RawMessage(bc.doc)); ps != nil {
					b.Fatal(fmt.Sprint(ps))
				}
			}
		})
	}
}

// TestFlatLeavesTheRestToTheValidator (attack11): the scan judges only
// arguments of at most maxFlatKeys keys, each UTF-8 — it compared every key
// with every other, and 150,000 keys for an open schema cost the server
// 21.5 s of CPU past the run's end (F1); and a key not UTF-8 is the
// validator's U+FFFD, another property than its bytes (F2).
func TestFlatLeavesTheRestToTheValidator(t *testing.T) {
	t.Parallel()
	open := flatSchemaOf(mustJSON(t, `{"type": "object", "properties": {"a": {"type": "integer"}}}`))
	if open == nil {
		t.Fatal("no flat check for an open schema")
	}
	var b strings.Builder
	b.WriteString(`{"a": 1`)
	for i := range maxFlatKeys {
		fmt.Fprintf(&b, `, "k%d": 0`, i)
	}
	b.WriteString("}")
	if open.accepts([]byte(b.String())) {
		t.Errorf("the scan judged %d keys", maxFlatKeys+1)
	}
	if !open.accepts([]byte(`{"a": 1, "k": 0}`)) {
		t.Error("the scan refused a few keys")
	}
	odd := flatSchemaOf(mustJSON(t, `{"type": "object", "properties": {"n\ufffd": {"type": "integer", "maximum": 5}}}`))
	if odd == nil {
		t.Fatal("no flat check")
	}
	if odd.accepts([]byte("{\"n\xff\": \"not an integer\"}")) {
		t.Error("the scan judged a key that is not UTF-8")
	}
}

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber() // as schemas are decoded
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
