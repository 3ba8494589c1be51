package tools

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"weak"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled JSON Schema that validates tool arguments.
type Schema struct {
	s *jsonschema.Schema
	// fast says what the schema accepts when that needs no validator:
	// any JSON, any object, only the empty object (a tool that takes no
	// arguments). flat, for an object of strings, integers and booleans,
	// accepts arguments by a scan of their top level.
	fast fastCheck
	flat *flatSchema

	prepOnce sync.Once // what costly needs of the schema, once
	anchors  *anchors
	unfolded int
}

// printer renders the validator's messages that hold no numbers; those
// that do are written by problemMessage, since a message.Printer writes
// numbers for people of a locale (10,000 and 1×10⁰⁷), not as JSON.
var printer = message.NewPrinter(language.English)

// CompileSchema compiles a JSON Schema document (draft 2020-12 unless it
// names another with $schema). References stay within the document: a
// $ref to a file, a URL or any other document is an error
// (ErrExternalRef), never a read; only the JSON Schema drafts' own
// metaschemas, built in, are known. A schema beyond the bounds
// (MaxSchemaValues, MaxSchemaDepth, MaxDocumentSchemas) is refused with
// ErrSchemaTooLarge before any work that grows with it: its values are
// counted before it is decoded.
func CompileSchema(doc json.RawMessage) (*Schema, error) {
	v, err := parseSchema(doc, "the schema")
	if err != nil {
		return nil, err
	}
	if err := measure(v).check("the schema"); err != nil {
		return nil, err
	}
	c := newCompiler()
	const loc = "codecell:///schema.json"
	if err := c.AddResource(loc, v); err != nil {
		return nil, fmt.Errorf("load schema: %w", err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		return nil, compileError(err)
	}
	return newSchema(s, v), nil
}

// ErrExternalRef is wrapped by the error of a schema that refers to
// another document than itself.
var ErrExternalRef = errors.New("references to other documents are not followed")

// noLoader is the compiler's loader: it loads nothing. The compiler's
// default reads file:// URLs, which let a schema from a remote MCP server
// or an API description read a local file.
type noLoader struct{}

func (noLoader) Load(string) (any, error) { return nil, ErrExternalRef }

// compileError says what the compiler refused; a reference to another
// document wraps ErrExternalRef.
func compileError(err error) error {
	var le *jsonschema.LoadURLError
	if errors.As(err, &le) {
		return fmt.Errorf("compile schema: $ref to %s: %w; a schema must be one document, its $ref to its own #/$defs", le.URL, ErrExternalRef)
	}
	return fmt.Errorf("compile schema: %w", err)
}

// newCompiler returns a compiler of draft 2020-12 by default that loads
// no document.
func newCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	return c
}

// Validate checks a JSON document against the schema and returns the
// problems found, each naming the offending value by JSON Pointer, or nil.
// A document that is not JSON is one problem at the root, and so is one
// whose validation would take more than MaxValidationSteps.
func (s *Schema) Validate(doc json.RawMessage) []Problem {
	ps, _ := s.validate(doc, nil)
	return ps
}

// validate is Validate, which first calls hold, when not nil, with what
// doc decodes into (DecodedSize) if it must be decoded, and returns
// hold's error as it is.
func (s *Schema) validate(doc json.RawMessage, hold func(n int64) error) ([]Problem, error) {
	if s.fast != fastNone && s.fast.accepts(doc) || s.flat != nil && s.flat.accepts(doc) {
		return nil, nil // what they reject, the validator says why
	}
	if hold != nil {
		if err := hold(DecodedSize(int64(len(doc)), JSONValues(doc, math.MaxInt))); err != nil {
			return nil, err
		}
	}
	if n, ok := hugeNumber(doc); ok {
		return []Problem{{Path: "", Message: fmt.Sprintf("a number of more than %d characters, or with an exponent past ±%d (%s), which no tool needs and the validator reads at a cost that grows with its digits: send it as a string", maxNumberBytes, maxNumberExponent, n)}}, nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return []Problem{{Path: "", Message: "arguments are not valid JSON: " + err.Error()}}, nil
	}
	if p, ok := s.costly(v, len(doc)); ok {
		return []Problem{{Path: "", Message: p}}, nil
	}
	err = s.s.Validate(v)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Problem{{Path: "", Message: err.Error()}}, nil
	}
	var out []Problem
	collect(ve, &out)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return dedupe(out), nil
}

// The validator reads a number as a big.Rat from its text (to check an
// integer, a minimum, a multipleOf), and Go's decimal conversion costs
// more than linearly in the digits and grows with the exponent: a number
// of a million digits in execute_code's arguments took 9 s of server CPU
// before any run or rate limit, and twenty of 1e999999 4.4 s (issue 19,
// attack26 T6). A document with a number of more than maxNumberBytes
// characters, or an exponent past ±maxNumberExponent, is refused before
// it is decoded: a float64 needs 24 characters and exponents within
// ±324, and a JavaScript program cannot write more.
const (
	maxNumberBytes    = 64
	maxNumberExponent = 400
)

// hugeNumber returns the start of the first number of doc, JSON, past
// maxNumberBytes or maxNumberExponent, if there is one. Text in strings
// is skipped; doc need not be valid JSON (the decoder says what is wrong
// with it).
func hugeNumber(doc []byte) (string, bool) {
	for i := 0; i < len(doc); i++ {
		switch c := doc[i]; {
		case c == '"':
			for i++; i < len(doc) && doc[i] != '"'; i++ {
				if doc[i] == '\\' {
					i++
				}
			}
		case c == '-' || c >= '0' && c <= '9':
			j := i
			for j < len(doc) && isNumberByte(doc[j]) {
				j++
			}
			if n := doc[i:j]; len(n) > maxNumberBytes || exponentPast(n, maxNumberExponent) {
				if len(n) > 40 {
					return fmt.Sprintf("%s… (%d characters)", n[:40], len(n)), true
				}
				return string(n), true
			}
			i = j - 1
		}
	}
	return "", false
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// exponentPast reports whether the exponent of number n is past ±limit.
func exponentPast(n []byte, limit int) bool {
	i := bytes.IndexAny(n, "eE")
	if i < 0 {
		return false
	}
	e := 0
	for _, c := range n[i+1:] {
		if c >= '0' && c <= '9' {
			if e = e*10 + int(c-'0'); e > limit {
				return true
			}
		}
	}
	return false
}

// newSchema returns the Schema of s, compiled from doc, decoded.
func newSchema(s *jsonschema.Schema, doc any) *Schema {
	out := &Schema{s: s, fast: fastCheckOf(doc)}
	if out.fast == fastNone {
		out.flat = flatSchemaOf(doc)
	}
	return out
}

// fastCheck is a schema that accepts documents by their shape alone.
type fastCheck uint8

const (
	fastNone        fastCheck = iota
	fastAny                   // true, {}
	fastObject                // {"type": "object"}
	fastEmptyObject           // {"type": "object", "additionalProperties": false}
)

// fastCheckOf returns the fastCheck of a schema document, decoded: only
// schemas made of "type": "object", empty "properties",
// "additionalProperties" and annotations have one.
func fastCheckOf(doc any) fastCheck {
	if doc == true {
		return fastAny
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return fastNone
	}
	object, closed := false, false
	for k, v := range m {
		switch k {
		case "title", "description", "$comment":
		case "type":
			if v != "object" {
				return fastNone
			}
			object = true
		case "properties":
			if p, ok := v.(map[string]any); !ok || len(p) > 0 {
				return fastNone
			}
		case "additionalProperties":
			switch v {
			case true:
			case false:
				closed = true
			default:
				return fastNone
			}
		default:
			return fastNone
		}
	}
	switch {
	case object && closed:
		return fastEmptyObject
	case object:
		return fastObject
	case closed:
		return fastNone // objects must be empty, anything else goes
	}
	return fastAny
}

// accepts reports whether doc is valid JSON that the schema accepts.
func (f fastCheck) accepts(doc []byte) bool {
	t := bytes.Trim(doc, jsonSpace)
	switch f {
	case fastAny:
		return json.Valid(t)
	case fastObject:
		return len(t) > 0 && t[0] == '{' && json.Valid(t)
	case fastEmptyObject:
		return len(t) >= 2 && t[0] == '{' && t[len(t)-1] == '}' && len(bytes.Trim(t[1:len(t)-1], jsonSpace)) == 0
	}
	return false
}

// jsonSpace is the white space JSON allows between tokens.
const jsonSpace = " \t\r\n"

// collect gathers the leaves of a validation error tree: they name the
// keyword that failed at the deepest location, which is the useful part.
func collect(e *jsonschema.ValidationError, out *[]Problem) {
	if len(e.Causes) == 0 {
		*out = append(*out, Problem{
			Path:    pointer(e.InstanceLocation),
			Message: problemMessage(e.ErrorKind),
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

// problemMessage renders one failed keyword. Messages with numbers print
// them as JSON would (10000000, 0.5, 1e+21), in the validator's own words.
func problemMessage(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Minimum:
		return "minimum: got " + ratString(k.Got) + ", want " + ratString(k.Want)
	case *kind.Maximum:
		return "maximum: got " + ratString(k.Got) + ", want " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		return "exclusiveMinimum: got " + ratString(k.Got) + ", want " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		return "exclusiveMaximum: got " + ratString(k.Got) + ", want " + ratString(k.Want)
	case *kind.MultipleOf:
		return "multipleOf: got " + ratString(k.Got) + ", want " + ratString(k.Want)
	case *kind.MinLength:
		return fmt.Sprintf("minLength: got %d, want %d", k.Got, k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("maxLength: got %d, want %d", k.Got, k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("minItems: got %d, want %d", k.Got, k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("maxItems: got %d, want %d", k.Got, k.Want)
	case *kind.MinProperties:
		return fmt.Sprintf("minProperties: got %d, want %d", k.Got, k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("maxProperties: got %d, want %d", k.Got, k.Want)
	case *kind.AdditionalItems:
		return fmt.Sprintf("last %d additionalItem(s) not allowed", k.Count)
	case *kind.UniqueItems:
		return fmt.Sprintf("items at %d and %d are equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.MinContains:
		if len(k.Got) == 0 {
			return fmt.Sprintf("min %d items required to match contains schema, but none matched", k.Want)
		}
		return fmt.Sprintf("min %d items required to match contains schema, but matched %d items at %s", k.Want, len(k.Got), ints(k.Got))
	case *kind.MaxContains:
		return fmt.Sprintf("max %d items required to match contains schema, but matched %d items at %s", k.Want, len(k.Got), ints(k.Got))
	case *kind.OneOf:
		if len(k.Subschemas) == 2 {
			return fmt.Sprintf("'oneOf' failed, subschemas %d, %d matched", k.Subschemas[0], k.Subschemas[1])
		}
	}
	return k.LocalizedString(printer)
}

// ratString writes a number as JSON would: integers below 1e21 in full,
// other values as the shortest float64 that reads back the same, with an
// exponent only when JSON uses one (below 1e-6 or from 1e21).
func ratString(r *big.Rat) string {
	if r == nil {
		return "null"
	}
	f, _ := r.Float64()
	if r.IsInt() && math.Abs(f) < 1e21 {
		return r.Num().String()
	}
	if math.IsInf(f, 0) {
		return r.FloatString(0)
	}
	b, err := json.Marshal(f)
	if err != nil {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return string(b)
}

func ints(is []int) string {
	parts := make([]string, len(is))
	for i, n := range is {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, " ")
}

// schemaCache holds compiled standalone schemas by their hash for as long
// as a tool holds them, so that tools with the same schema share one
// compilation.
type schemaCache struct {
	mu sync.Mutex
	m  map[[32]byte]weak.Pointer[Schema]
}

func (c *schemaCache) compile(doc json.RawMessage) (*Schema, error) {
	key := sha256.Sum256(doc)
	c.mu.Lock()
	if s := c.m[key].Value(); s != nil {
		c.mu.Unlock()
		return s, nil
	}
	c.mu.Unlock()
	s, err := CompileSchema(doc)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[key].Value(); old != nil {
		return old, nil // compiled meanwhile by another call
	}
	if c.m == nil {
		c.m = map[[32]byte]weak.Pointer[Schema]{}
	}
	c.m[key] = weak.Make(s)
	runtime.AddCleanup(s, func(key [32]byte) {
		c.mu.Lock()
		if c.m[key].Value() == nil {
			delete(c.m, key)
		}
		c.mu.Unlock()
	}, key)
	return s, nil
}

// lazySchema is a tool's input schema, compiled when the tool is first
// called or validated, once.
type lazySchema struct {
	once    sync.Once
	compile func() (*Schema, error)
	s       *Schema
	err     error
}

func (l *lazySchema) get() (*Schema, error) {
	l.once.Do(func() {
		l.s, l.err = l.compile()
		l.compile = nil
	})
	return l.s, l.err
}
