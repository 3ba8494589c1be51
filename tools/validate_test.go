package tools_test

import (
	"encoding/json"
	"errors"
	"fmt"
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

// anyOfChain is a schema whose anyOf branches refer to the same
// definition, level after level: validating a value that matches no
// branch applies 2^n subschemas.
func anyOfChain(n int) string {
	defs := []string{`"a0":{"type":"string"}`}
	for i := 1; i <= n; i++ {
		defs = append(defs, fmt.Sprintf(`"a%d":{"anyOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d","title":"x"}]}`, i, i-1, i-1))
	}
	return fmt.Sprintf(`{"type":"object","properties":{"v":{"$ref":"#/$defs/a%d"}},"$defs":{%s}}`, n, strings.Join(defs, ","))
}

// TestValidationIsBounded (issue 19, a8): a skill's inputSchema or
// llm.extract's schema, written by any program, whose anyOf branches
// double at each level made validating one argument take 2^n steps in
// the server, past the run's deadline. A document whose validation would
// take more than MaxValidationSteps is one problem, found in bounded
// work; schemas whose cost grows with the document, not the schema's
// shape, still validate documents of ordinary size.
func TestValidationIsBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, schema, doc, want string
	}{
		{"anyOf chain", anyOfChain(24), `{"v": 1}`, "more than 100064 steps"},
		{"oneOf chain", strings.ReplaceAll(anyOfChain(24), "anyOf", "oneOf"), `{"v": 1}`, "more than 100064 steps"},
		{"not over anyOf", notChain(24), `{"v": 1}`, "more than 100064 steps"},
		{"chain under items", anyOfChain(24), `{"v": [1]}`, "more than 100096 steps"},
		{"matching chain", anyOfChain(10), `{"v": "x"}`, "ok"},
		{"failing chain", anyOfChain(10), `{"v": 1}`, "got number, want string"},
		{"recursive tree", `{"$ref":"#/$defs/n","$defs":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/n"}},"id":{"type":"integer"}}}}}`,
			tree(6, 5), "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tools.CompileSchema(json.RawMessage(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			ps := s.Validate(json.RawMessage(tc.doc))
			got := tools.DescribeProblems(ps)
			if tc.want == "ok" {
				if len(ps) > 0 {
					t.Errorf("problems: %s", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("problems %q lack %q", got, tc.want)
			}
		})
	}
}

// notChain is anyOfChain with each level under two nots, where the
// validator wants only a yes or no.
func notChain(n int) string {
	defs := []string{`"a0":{"type":"string"}`}
	for i := 1; i <= n; i++ {
		defs = append(defs, fmt.Sprintf(`"a%d":{"not":{"not":{"anyOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d","title":"x"}]}}}`, i, i-1, i-1))
	}
	return fmt.Sprintf(`{"type":"object","properties":{"v":{"$ref":"#/$defs/a%d"}},"$defs":{%s}}`, n, strings.Join(defs, ","))
}

// tree is a document of nested objects, fanout kids at each of depth
// levels.
func tree(depth, fanout int) string {
	if depth == 0 {
		return `{"id":1}`
	}
	kids := make([]string, fanout)
	for i := range kids {
		kids[i] = tree(depth-1, fanout)
	}
	return `{"id":1,"kids":[` + strings.Join(kids, ",") + `]}`
}

// TestHugeNumbersRefused (issue 19, attack26 T6): the validator reads a
// number as a big.Rat from its text, at a cost that grows faster than its
// digits and with its exponent — a number of a million digits in
// execute_code's arguments took 9 s of server CPU, twenty of 1e999999
// 4.4 s. Such a number is a problem, named, before the validator reads
// it; numbers a float64 or a 64-bit integer holds, and digits in
// strings, are not.
func TestHugeNumbersRefused(t *testing.T) {
	ints, err := tools.CompileSchema(json.RawMessage(`{"type":"array","items":{"type":"integer","minimum":0}}`))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := tools.CompileSchema(json.RawMessage(`{"type":"object","properties":{"n":{"type":"number","maximum":1e300}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		schema *tools.Schema
		doc    string
		want   string // in the problem; "" for none
	}{
		{"a million digits", obj, `{"n":1.` + strings.Repeat("0", 1_000_000) + `}`, "a number of more than 64 characters"},
		{"exponents", ints, "[" + strings.TrimSuffix(strings.Repeat("1e999999,", 20), ",") + "]", "(1e999999)"},
		{"a negative exponent", obj, `{"n":1E-401}`, "exponent past ±400"},
		{"a long integer", ints, "[" + strings.Repeat("9", 65) + "]", "send it as a string"},
		{"ordinary numbers", ints, "[18446744073709551615, 0, 1e300, 12345678901234567890123456789012345678901234567890123456789012]", ""},
		{"floats", obj, `{"n":-1.2345678901234567e-308}`, ""},
		{"digits in a string", obj, `{"n":1, "s":"` + strings.Repeat("9", 1000) + `e9999 \" 1e9999"}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := c.schema.Validate(json.RawMessage(c.doc))
			got := tools.DescribeProblems(ps)
			if c.want == "" && len(ps) > 0 || c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("%.200s", got)
			}
		})
	}
}

// BenchmarkValidate is the cost of validating arguments, the count of
// steps before it included: a typical call's few arguments, and a
// document of 19,531 objects against a recursive schema.
func BenchmarkValidate(b *testing.B) {
	for _, bc := range []struct{ name, schema, doc string }{
		{"small", `{"type":"object","properties":{"owner":{"type":"string"},"repo":{"type":"string"},"per_page":{"type":"integer","maximum":100},"state":{"enum":["open","closed","all"]}},"required":["owner","repo"]}`,
			`{"owner":"octo","repo":"hello","per_page":50,"state":"open"}`},
		{"tree", `{"$ref":"#/$defs/n","$defs":{"n":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/n"}},"id":{"type":"integer"}}}}}`,
			tree(6, 5)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := tools.CompileSchema(json.RawMessage(bc.schema))
			if err != nil {
				b.Fatal(err)
			}
			doc := json.RawMessage(bc.doc)
			for b.Loop() {
				if ps := s.Validate(doc); len(ps) > 0 {
					b.Fatal(ps)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/op")
		})
	}
}
