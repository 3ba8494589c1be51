package tools_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
)

// TestProblemNumbers checks that numbers in validation messages read as
// JSON writes them, not as a locale does (10,000 or 1×10⁰⁷).
func TestProblemNumbers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, doc, want string
	}{
		{"maximum, large", `{"type":"integer","maximum":10000000}`, `20000000`, "maximum: got 20000000, want 10000000"},
		{"minimum, fraction", `{"type":"number","minimum":0.5}`, `0.25`, "minimum: got 0.25, want 0.5"},
		{"exclusiveMaximum", `{"type":"number","exclusiveMaximum":1}`, `1`, "exclusiveMaximum: got 1, want 1"},
		{"exclusiveMinimum, negative", `{"type":"number","exclusiveMinimum":-2.5}`, `-3`, "exclusiveMinimum: got -3, want -2.5"},
		{"huge", `{"type":"number","maximum":1e21}`, `2e21`, "maximum: got 2e+21, want 1e+21"},
		{"tiny", `{"type":"number","minimum":1e-7}`, `1e-8`, "minimum: got 1e-8, want 1e-7"},
		{"exact integer above 2^53", `{"type":"integer","maximum":9007199254740992}`, `9007199254740993`, "maximum: got 9007199254740993, want 9007199254740992"},
		{"multipleOf", `{"type":"number","multipleOf":0.1}`, `0.25`, "multipleOf: got 0.25, want 0.1"},
		{"maxLength", `{"type":"string","maxLength":10000}`, `"` + strings.Repeat("x", 10001) + `"`, "maxLength: got 10001, want 10000"},
		{"minItems", `{"type":"array","minItems":1000}`, `[1]`, "minItems: got 1, want 1000"},
		{"maxProperties", `{"type":"object","maxProperties":1}`, `{"a":1,"b":2}`, "maxProperties: got 2, want 1"},
		{"uniqueItems", `{"type":"array","uniqueItems":true}`, `[1,2,1]`, "items at 0 and 2 are equal"},
		{"enum of numbers", `{"enum":[1000000,2]}`, `3`, "value must be one of 1000000, 2"},
		{"const", `{"const":12345}`, `3`, "value must be 12345"},
		{"type (no numbers)", `{"type":"string"}`, `1`, "got number, want string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tools.CompileSchema(json.RawMessage(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			ps := s.Validate(json.RawMessage(tt.doc))
			if len(ps) != 1 || ps[0].Message != tt.want {
				t.Errorf("problems %+v, want one with message %q", ps, tt.want)
			}
		})
	}
}

// TestSchemaReadsNoOtherDocument: a schema's $ref to a file or a URL is
// refused, never followed; the compiler's default loader read local
// files, so a remote MCP server's schema could make codecell read one.
func TestSchemaReadsNoOtherDocument(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "local.json")
	if err := os.WriteFile(file, []byte(`{"type":"integer"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, schema := range map[string]string{
		"file":             `{"$ref": "file://` + file + `"}`,
		"file in property": `{"type":"object","properties":{"a":{"$ref":"file://` + file + `#"}}}`,
		"relative file":    `{"$id": "file://` + filepath.Dir(file) + `/root.json", "$ref": "local.json"}`,
		"https":            `{"$ref": "https://example.com/schema.json"}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := tools.CompileSchema(json.RawMessage(schema))
			if !errors.Is(err, tools.ErrExternalRef) {
				t.Fatalf("CompileSchema(%s): %v, want ErrExternalRef", schema, err)
			}
		})
	}
	// The drafts' own metaschemas are built in, and references within
	// the document work.
	for _, schema := range []string{
		`{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string"}`,
		`{"$schema": "http://json-schema.org/draft-07/schema#", "type": "string"}`,
		`{"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s"}`,
	} {
		s, err := tools.CompileSchema(json.RawMessage(schema))
		if err != nil {
			t.Fatalf("CompileSchema(%s): %v", schema, err)
		}
		if ps := s.Validate(json.RawMessage(`1`)); len(ps) != 1 {
			t.Errorf("%s: validating 1 gave %v, want one problem", schema, ps)
		}
	}
}
