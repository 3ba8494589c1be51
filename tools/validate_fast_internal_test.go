package tools

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// TestFastValidation: a schema that accepts any JSON, any object or only
// the empty object is checked without the validator, with the answers
// the validator gives — for every document, the same problems.
func TestFastValidation(t *testing.T) {
	t.Parallel()
	schemas := []struct {
		doc  string
		want fastCheck
	}{
		{`true`, fastAny},
		{`{}`, fastAny},
		{`{"description": "anything", "properties": {}}`, fastAny},
		{`{"type": "object"}`, fastObject},
		{`{"type": "object", "properties": {}, "additionalProperties": true, "title": "t"}`, fastObject},
		{`{"type":"object","additionalProperties":false}`, fastEmptyObject}, // a tool that declares none
		{`{"type": "object", "properties": {}, "additionalProperties": false}`, fastEmptyObject},
		{`{"additionalProperties": false}`, fastNone},
		{`{"type": "object", "properties": {"a": {}}}`, fastNone},
		{`{"type": "object", "required": ["a"]}`, fastNone},
		{`{"type": "object", "minProperties": 1}`, fastNone},
		{`{"type": ["object", "null"]}`, fastNone},
		{`{"type": "string"}`, fastNone},
		{`{"not": {}}`, fastNone},
		{`false`, fastNone},
	}
	docs := []string{`{}`, ` { } `, "{\t\r\n}", `{"a": 1}`, `[]`, `null`, `1`, `"x"`, `{`, `{}}`, `{} x`, ``, "{\v}", "{\u00a0}", `{"a":}`, `[{}]`}
	for _, sc := range schemas {
		s, err := CompileSchema(json.RawMessage(sc.doc))
		if err != nil {
			t.Fatal(sc.doc, err)
		}
		if s.fast != sc.want {
			t.Errorf("%s: fast check %d, want %d", sc.doc, s.fast, sc.want)
		}
		slow := &Schema{s: s.s}
		for _, d := range docs {
			got, want := s.Validate(json.RawMessage(d)), slow.Validate(json.RawMessage(d))
			if !slices.Equal(got, want) {
				t.Errorf("schema %s, arguments %q: %v, the validator says %v", sc.doc, d, got, want)
			}
		}
	}
}

// BenchmarkFastValidate measures validating the arguments of a tool that
// takes none, with the fast check and with the validator alone.
//
//	go test -run '^$' -bench FastValidate ./tools/
func BenchmarkFastValidate(b *testing.B) {
	for _, bc := range []struct {
		name, schema, doc string
		validator         bool
	}{
		{"no_arguments", `{"type":"object","additionalProperties":false}`, `{}`, false},
		{"no_arguments_validator", `{"type":"object","additionalProperties":false}`, `{}`, true},
	} {
		s, err := CompileSchema(json.RawMessage(bc.schema))
		if err != nil {
			b.Fatal(err)
		}
		if bc.validator {
			s = &Schema{s: s.s}
		}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if ps := s.Validate(json.RawMessage(bc.doc)); ps != nil {
					b.Fatal(fmt.Sprint(ps))
				}
			}
		})
	}
}
