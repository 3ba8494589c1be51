package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled JSON Schema that validates tool arguments.
type Schema struct {
	s *jsonschema.Schema
}

var printer = message.NewPrinter(language.English)

// CompileSchema compiles a JSON Schema document (draft 2020-12 unless it
// names another with $schema).
func CompileSchema(doc json.RawMessage) (*Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const loc = "codecell:///schema.json"
	if err := c.AddResource(loc, v); err != nil {
		return nil, fmt.Errorf("load schema: %w", err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	return &Schema{s: s}, nil
}

// Validate checks a JSON document against the schema and returns the
// problems found, each naming the offending value by JSON Pointer, or nil.
// A document that is not JSON is one problem at the root.
func (s *Schema) Validate(doc json.RawMessage) []Problem {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return []Problem{{Path: "", Message: "arguments are not valid JSON: " + err.Error()}}
	}
	err = s.s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Problem{{Path: "", Message: err.Error()}}
	}
	var out []Problem
	collect(ve, &out)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return dedupe(out)
}

// collect gathers the leaves of a validation error tree: they name the
// keyword that failed at the deepest location, which is the useful part.
func collect(e *jsonschema.ValidationError, out *[]Problem) {
	if len(e.Causes) == 0 {
		*out = append(*out, Problem{
			Path:    pointer(e.InstanceLocation),
			Message: e.ErrorKind.LocalizedString(printer),
		})
		return
	}
	for _, c := range e.Causes {
		collect(c, out)
	}
}

func dedupe(ps []Problem) []Problem {
	out := ps[:0]
	for i, p := range ps {
		if i > 0 && p == ps[i-1] {
			continue
		}
		out = append(out, p)
	}
	return out
}

func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return ""
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}

// DescribeProblems renders problems as one line for an error message:
// "arguments/text: got number, want string; arguments: missing property 'x'".
func DescribeProblems(ps []Problem) string {
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		where := "arguments"
		if p.Path != "" {
			where = "arguments" + p.Path
		}
		parts = append(parts, where+": "+p.Message)
	}
	return strings.Join(parts, "; ")
}
