package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/codecell/codecell/tools"
)

// CodeNoFixture is the error code of a catalogue tool called when it has
// no example result to return.
const CodeNoFixture = "no_fixture"

// FixtureNote is appended to the notes of every catalogue tool.
const FixtureNote = "Fixture: this tool has no backend. A call returns the recorded result of the example whose arguments equal the call's, or else of the first example."

// Catalog is a loaded catalogue, ready to register.
type Catalog struct {
	Categories []Category
}

// Category is one category file of a catalogue.
type Category struct {
	Name        string
	Description string
	// File is the path the category was read from, for messages.
	File  string
	Tools []tools.Tool
}

// Error is a problem in a catalogue file: it names the file and, when the
// problem is in one tool, the tool.
type Error struct {
	File string
	Tool string // short or qualified name; "" for file-level problems
	Err  error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("catalog ")
	b.WriteString(e.File)
	if e.Tool != "" {
		b.WriteString(": tool ")
		b.WriteString(e.Tool)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// file is the JSON form of one category file.
type file struct {
	Category    string                     `json:"category"`
	Description string                     `json:"description"`
	Defs        map[string]json.RawMessage `json:"$defs"`
	Tools       []toolJSON                 `json:"tools"`
}

type toolJSON struct {
	Name         string            `json:"name"`
	Summary      string            `json:"summary"`
	Description  string            `json:"description"`
	InputSchema  json.RawMessage   `json:"inputSchema"`
	OutputSchema json.RawMessage   `json:"outputSchema"`
	Annotations  tools.Annotations `json:"annotations"`
	Positional   []string          `json:"positional"`
	Related      []string          `json:"related"`
	Examples     []tools.Example   `json:"examples"`
	Errors       []tools.ErrorDoc  `json:"errors"`
	Notes        string            `json:"notes"`
}

// Load reads a catalogue from path: a directory of <category>.json files
// (read in name order, other files ignored) or a single such file.
func Load(p string) (*Catalog, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("load catalog: %w", err)
	}
	if st.IsDir() {
		return LoadFS(os.DirFS(p), ".")
	}
	return LoadFS(os.DirFS(filepath.Dir(p)), filepath.Base(p))
}

// LoadFS reads a catalogue from fsys: name is a directory of
// <category>.json files or a single file.
func LoadFS(fsys fs.FS, name string) (*Catalog, error) {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("load catalog: %w", err)
	}
	var files []string
	if st.IsDir() {
		ents, err := fs.ReadDir(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("load catalog: %w", err)
		}
		for _, e := range ents {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
				files = append(files, path.Join(name, e.Name()))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("load catalog %s: no .json files", name)
		}
	} else {
		files = []string{name}
	}
	c := &Catalog{}
	seen := map[string]string{} // category → file
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, fmt.Errorf("load catalog: %w", err)
		}
		cat, err := parseFile(f, data)
		if err != nil {
			return nil, err
		}
		if prev, ok := seen[cat.Name]; ok {
			return nil, &Error{File: f, Err: fmt.Errorf("category %q already defined in %s", cat.Name, prev)}
		}
		seen[cat.Name] = f
		c.Categories = append(c.Categories, cat)
	}
	if err := c.checkRelated(); err != nil {
		return nil, err
	}
	return c, nil
}

// Parse reads one category file's content; name is used in messages.
func Parse(name string, data []byte) (Category, error) {
	return parseFile(name, data)
}

func parseFile(name string, data []byte) (Category, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return Category{}, &Error{File: name, Err: decodeError(data, err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return Category{}, &Error{File: name, Err: errors.New("unexpected data after the category object")}
	}
	if !tools.ValidCategory(f.Category) {
		return Category{}, &Error{File: name, Err: fmt.Errorf("category name %q: want a lower-case identifier", f.Category)}
	}
	if strings.TrimSpace(f.Description) == "" || strings.ContainsAny(f.Description, "\r\n") {
		return Category{}, &Error{File: name, Err: errors.New("description must be one non-empty line")}
	}
	if len(f.Tools) == 0 {
		return Category{}, &Error{File: name, Err: errors.New("no tools")}
	}
	for d, raw := range f.Defs {
		if !json.Valid(raw) {
			return Category{}, &Error{File: name, Err: fmt.Errorf("$defs/%s is not valid JSON", d)}
		}
	}
	cat := Category{Name: f.Category, Description: f.Description, File: name}
	seen := map[string]bool{}
	for i, tj := range f.Tools {
		label := tj.Name
		if label == "" {
			label = fmt.Sprintf("#%d", i)
		}
		if seen[tj.Name] {
			return Category{}, &Error{File: name, Tool: label, Err: errors.New("defined twice")}
		}
		seen[tj.Name] = true
		t, err := buildTool(f.Category, f.Defs, tj)
		if err != nil {
			return Category{}, &Error{File: name, Tool: label, Err: err}
		}
		cat.Tools = append(cat.Tools, t)
	}
	return cat, nil
}

// decodeError adds the line and column to a JSON syntax or type error.
func decodeError(data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return fmt.Errorf("parse: %w", err)
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := int(off) - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Errorf("parse: line %d, column %d: %w", line, col, err)
}

func buildTool(category string, defs map[string]json.RawMessage, tj toolJSON) (tools.Tool, error) {
	t := tools.Tool{
		Name:        category + "." + tj.Name,
		Summary:     tj.Summary,
		Description: tj.Description,
		Annotations: tj.Annotations,
		Positional:  tj.Positional,
		Examples:    tj.Examples,
		Errors:      tj.Errors,
	}
	if !tools.ValidName(t.Name) {
		return t, fmt.Errorf("name %q: want a lower-case identifier", tj.Name)
	}
	if strings.TrimSpace(tj.Description) == "" {
		return t, errors.New("empty description")
	}
	var err error
	if t.InputSchema, err = withDefs(tj.InputSchema, defs); err != nil {
		return t, fmt.Errorf("input schema: %w", err)
	}
	if t.OutputSchema, err = withDefs(tj.OutputSchema, defs); err != nil {
		return t, fmt.Errorf("output schema: %w", err)
	}
	for _, r := range tj.Related {
		if !strings.Contains(r, ".") {
			r = category + "." + r
		}
		t.Related = append(t.Related, r)
	}
	t.Notes = strings.TrimSpace(tj.Notes)
	if t.Notes != "" {
		t.Notes += "\n\n"
	}
	t.Notes += FixtureNote
	if err := checkExamples(&t); err != nil {
		return t, err
	}
	t.Handler = fixtureHandler(t.Name, t.Examples)
	return t, nil
}

// checkExamples compiles the tool's schemas and checks each example
// against them, and that positional parameters are input properties.
func checkExamples(t *tools.Tool) error {
	in := t.InputSchema
	if len(in) == 0 {
		in = json.RawMessage(`{"type":"object","additionalProperties":false}`)
	}
	is, err := tools.CompileSchema(in)
	if err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	var outS *tools.Schema
	if len(t.OutputSchema) > 0 {
		if outS, err = tools.CompileSchema(t.OutputSchema); err != nil {
			return fmt.Errorf("output schema: %w", err)
		}
	}
	if len(t.Positional) > 0 {
		var props struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(in, &props); err != nil {
			return fmt.Errorf("input schema: %w", err)
		}
		for _, p := range t.Positional {
			if _, ok := props.Properties[p]; !ok {
				return fmt.Errorf("positional parameter %q is not a property of the input schema", p)
			}
		}
	}
	for i, ex := range t.Examples {
		if len(ex.Args) == 0 {
			return fmt.Errorf("example %d: no args", i)
		}
		if ps := is.Validate(ex.Args); len(ps) > 0 {
			return fmt.Errorf("example %d: args do not match the input schema: %s", i, problems(ps))
		}
		if outS != nil && len(ex.Result) > 0 {
			if ps := outS.Validate(ex.Result); len(ps) > 0 {
				return fmt.Errorf("example %d: result does not match the output schema: %s", i, problems(ps))
			}
		}
	}
	return nil
}

func problems(ps []tools.Problem) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = "at " + p.Path + ": " + p.Message
		if p.Path == "" {
			parts[i] = p.Message
		}
	}
	return strings.Join(parts, "; ")
}

// fixtureHandler returns the handler described in the package doc.
func fixtureHandler(name string, examples []tools.Example) tools.Handler {
	type recorded struct {
		args   any
		result json.RawMessage
	}
	var recs []recorded
	for _, ex := range examples {
		if len(ex.Result) == 0 {
			continue
		}
		var a any
		if err := json.Unmarshal(ex.Args, &a); err != nil {
			continue // checkExamples validated it; unreachable in practice
		}
		recs = append(recs, recorded{args: a, result: ex.Result})
	}
	return func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		if len(recs) == 0 {
			return nil, tools.Errorf(CodeNoFixture, "%s is a catalogue fixture with no recorded example result", name)
		}
		var a any
		if err := json.Unmarshal(args, &a); err == nil {
			for _, r := range recs {
				if reflect.DeepEqual(a, r.args) {
					return r.result, nil
				}
			}
		}
		return recs[0].result, nil
	}
}

// checkRelated checks that every related tool exists in the catalogue.
func (c *Catalog) checkRelated() error {
	names := map[string]bool{}
	for _, cat := range c.Categories {
		for _, t := range cat.Tools {
			names[t.Name] = true
		}
	}
	for _, cat := range c.Categories {
		for _, t := range cat.Tools {
			for _, r := range t.Related {
				if !names[r] {
					return &Error{File: cat.File, Tool: t.ShortName(), Err: fmt.Errorf("related tool %q is not in the catalogue", r)}
				}
			}
		}
	}
	return nil
}

// Tools returns every tool of the catalogue, in category then file order.
func (c *Catalog) Tools() []tools.Tool {
	var out []tools.Tool
	for _, cat := range c.Categories {
		out = append(out, cat.Tools...)
	}
	return out
}

// Register describes the catalogue's categories in r and registers its
// tools, all at once: if one is rejected, none is added.
func (c *Catalog) Register(r *tools.Registry) error {
	for _, cat := range c.Categories {
		if err := r.DescribeCategory(cat.Name, cat.Description); err != nil {
			return &Error{File: cat.File, Err: err}
		}
	}
	if err := r.Register(c.Tools()...); err != nil {
		return fmt.Errorf("register catalog: %w", err)
	}
	return nil
}

// LoadInto loads the catalogue at path and registers it into r.
func LoadInto(r *tools.Registry, path string) error {
	c, err := Load(path)
	if err != nil {
		return err
	}
	return c.Register(r)
}

// withDefs returns schema with the shared definitions it refers to
// ("#/$defs/Name", transitively) copied into its own "$defs". Definitions
// the schema already has win. Other keys keep their order.
func withDefs(schema json.RawMessage, defs map[string]json.RawMessage) (json.RawMessage, error) {
	if len(schema) == 0 {
		return nil, nil
	}
	var top any
	if err := json.Unmarshal(schema, &top); err != nil {
		return nil, err
	}
	obj, ok := top.(map[string]any)
	if !ok {
		return schema, nil
	}
	own := map[string]bool{}
	if d, ok := obj["$defs"].(map[string]any); ok {
		for k := range d {
			own[k] = true
		}
	}
	need := map[string]bool{}
	queue := refs(top, nil)
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if need[n] || own[n] {
			continue
		}
		raw, ok := defs[n]
		if !ok {
			return nil, fmt.Errorf("$ref to #/$defs/%s: no such definition in the file or the schema", n)
		}
		need[n] = true
		var d any
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("$defs/%s: %w", n, err)
		}
		queue = refs(d, queue)
	}
	if len(need) == 0 {
		return schema, nil
	}
	kvs, err := splitObject(schema)
	if err != nil {
		return nil, err
	}
	merged := map[string]json.RawMessage{}
	for n := range need {
		merged[n] = compact(defs[n])
	}
	var out []kv
	for _, e := range kvs {
		if e.key == "$defs" {
			var local map[string]json.RawMessage
			if err := json.Unmarshal(e.val, &local); err != nil {
				return nil, fmt.Errorf("$defs: %w", err)
			}
			for k, v := range local {
				merged[k] = v
			}
			continue
		}
		out = append(out, e)
	}
	names := make([]string, 0, len(merged))
	for n := range merged {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range out {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(e.key)
		b.Write(key)
		b.WriteByte(':')
		b.Write(e.val)
	}
	if len(out) > 0 {
		b.WriteByte(',')
	}
	b.WriteString(`"$defs":{`)
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(n)
		b.Write(key)
		b.WriteByte(':')
		b.Write(merged[n])
	}
	b.WriteString("}}")
	return compact(b.Bytes()), nil
}

func compact(raw []byte) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// refs appends the names of the "#/$defs/..." references in v to acc.
func refs(v any, acc []string) []string {
	switch v := v.(type) {
	case map[string]any:
		if r, ok := v["$ref"].(string); ok {
			if n, ok := strings.CutPrefix(r, "#/$defs/"); ok && !strings.Contains(n, "/") {
				acc = append(acc, n)
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			acc = refs(v[k], acc)
		}
	case []any:
		for _, e := range v {
			acc = refs(e, acc)
		}
	}
	return acc
}

type kv struct {
	key string
	val json.RawMessage
}

// splitObject returns the members of a JSON object in their order.
func splitObject(raw json.RawMessage) ([]kv, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("schema is not an object")
	}
	var out []kv
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		out = append(out, kv{key: key, val: val})
	}
	return out, nil
}
