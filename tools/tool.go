package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Handler runs a tool. It receives arguments that already passed the tool's
// input schema and returns the result as JSON. An error it returns reaches
// the caller; return an *Error to choose the code the caller sees.
type Handler func(ctx context.Context, args json.RawMessage) (json.RawMessage, error)

// Matches reports whether glob (path.Match syntax) matches a name t
// answers to: its qualified name, or category.alias for one of its
// aliases. A policy — an approval, a data-flow rule, a toolset, a memoize
// rule — written with the name an upstream server or an OpenAPI document
// gives a tool (`orig.noteWrite`, `acct.createUser`) means that tool, as a
// call by that name does (attack27 T6).
func (t *Tool) Matches(glob string) bool {
	if ok, _ := path.Match(glob, t.Name); ok {
		return true
	}
	for _, a := range t.Aliases {
		if ok, _ := path.Match(glob, t.Category()+"."+a); ok {
			return true
		}
	}
	return false
}

// Tool is one operation in the catalogue.
type Tool struct {
	// Name is the qualified name, "category.name", both parts identifiers
	// of lower-case letters, digits and underscores.
	Name string
	// Aliases are other short names the tool answers to within its
	// category: category.alias resolves to the tool wherever a name is
	// looked up (Call, Validate, View.Get) and a program's namespace has
	// the alias too. A source whose tools have names that are not
	// identifiers keeps the original here (an upstream's "get-sum" beside
	// get_sum). A registered tool's own name wins over another's alias;
	// of two tools with the same alias, the one whose name sorts first
	// keeps it.
	Aliases []string
	// Title is a human-readable display name, when the source gives one.
	Title string
	// Summary is one line, shown in listings and search results.
	Summary string
	// Description is the full explanation, shown at the deepest level.
	Description string
	// InputSchema is the JSON Schema of the arguments, an object schema.
	// Nil means the tool takes no arguments ({"type":"object"}).
	InputSchema json.RawMessage
	// OutputSchema is the JSON Schema of the result; nil when undocumented.
	OutputSchema json.RawMessage
	// InputDefs and OutputDefs, when set, hold the definitions that
	// InputSchema and OutputSchema refer to as "#/$defs/NAME" without
	// carrying them, shared with other tools of the same source (see
	// Definitions). InputDocument and OutputDocument give the schemas
	// with their definitions, as one document each.
	InputDefs, OutputDefs *Definitions
	// InferredOutput is the shape of the tool's results as learned from
	// observed ones (see Inferrer), for a tool that declares no
	// OutputSchema; a declared one wins. The catalogue shows it marked as
	// inferred. It is a hint, never a contract: results are not checked
	// against it, and it is not an output schema to advertise (direct
	// mode leaves it out).
	InferredOutput *InferredSchema
	// Annotations are hints for callers.
	Annotations Annotations
	// Examples show calls with their results.
	Examples []Example
	// Errors documents the error codes the tool returns.
	Errors []ErrorDoc
	// Notes holds anything else a caller should know.
	Notes string
	// Related names other tools, qualified, that are often used with this one.
	Related []string
	// Positional names, in order, the arguments a program may also pass
	// positionally: with Positional ["path", "data"], workspace.write("a", "b")
	// is workspace.write({path: "a", data: "b"}). A call with a single plain
	// object argument is always the arguments object itself.
	Positional []string
	// Source is the code of tools whose implementation is a program (skills).
	Source string
	// Group places the tool under its category in the file tree, as a
	// path of up to MaxGroupDepth lower-case identifiers joined by "/"
	// ("issues", "repos/branches"), for sources too large for one
	// category index, such as an OpenAPI document's tags. Empty means
	// directly under the category. Search counts its words with the
	// category's.
	Group string
	// Route is the HTTP method and path template of a tool that calls an
	// HTTP API ("GET /repos/{owner}/{repo}/issues"), empty for others.
	// Search reads what the operation does and to what from it: the
	// method on a collection or an item, and the resources the path names.
	Route string
	// Deprecated marks a tool its source advises against using; listings
	// and declarations say so and search ranks it lower.
	Deprecated bool
	// Runtime marks a tool of the programs' runtime rather than of the
	// catalogue (llm.call, approval.request, cache.get): a program calls
	// it like any other, and the tree shows it under /runtime/ instead of
	// as a category of its own.
	Runtime bool
	// Gated marks a helper: a tool whose handler acts only by calling
	// other tools through the gate (CallThrough), such as an OpenAPI
	// source's paginate. Each of those calls is checked as a call of its
	// own — approved, planned, memoised, observed by the data-flow rules
	// and audited — so the helper's own call is validated and audited,
	// never approved, planned or memoised itself.
	Gated bool
	// MaxResultBytes is the most bytes one result of the tool can hold
	// as its source reads it — an upstream server's or an API's
	// max_response_bytes, a built-in's store's bound (a workspace file,
	// a cached value) — and 0 for a tool whose results are small. The
	// gate reserves it for each call in flight, so that the results a
	// run, and the server, wait on are bounded in bytes as well as in
	// number; every result, 0 or not, is held besides as what it decodes
	// into (HoldDecoded) until it is handed on.
	MaxResultBytes int64
	// Stored, set only on the server's own tools that return stored data
	// (memories, workspace files, cached values, skills), says where
	// their results carry the sources of that data, and what of it they
	// give back encoded. A run's data flow reads a result's sources
	// there alone: nil on every other tool, whose results name none,
	// whatever they hold (see StoredFields).
	Stored *StoredFields
	// Handler runs the tool.
	Handler Handler
}

// Annotations are hints about a tool's behaviour, as in MCP's ToolAnnotations.
type Annotations struct {
	ReadOnly    bool `json:"readOnly,omitempty"`
	Destructive bool `json:"destructive,omitempty"`
	Idempotent  bool `json:"idempotent,omitempty"`
	OpenWorld   bool `json:"openWorld,omitempty"`
	// Untrusted says the hints are the claims of a source codecell does
	// not trust to make them (an upstream MCP server without
	// trust_annotations): shown, never the ground of a decision. See
	// KnownReadOnly and MayDestroy.
	Untrusted bool `json:"-"`
}

// KnownReadOnly reports whether a call of the tool is known to change
// nothing: annotated read-only by a source codecell trusts. Read-only
// toolsets, dry runs, approvals of writes and memoisation decide by it.
func (a Annotations) KnownReadOnly() bool { return a.ReadOnly && !a.Untrusted }

// MayDestroy reports whether a call of the tool may destroy something:
// annotated destructive, or annotated by a source codecell does not trust,
// whatever it claims.
func (a Annotations) MayDestroy() bool { return a.Destructive || a.Untrusted }

// Example is one documented call of a tool.
type Example struct {
	Title  string          `json:"title,omitempty"`
	Args   json.RawMessage `json:"args"`
	Result json.RawMessage `json:"result,omitempty"`
}

// ErrorDoc documents one error code a tool can return.
type ErrorDoc struct {
	Code        string `json:"code"`
	Description string `json:"description"`
}

// InputDocument returns the input schema as one standalone document:
// InputSchema with the definitions of InputDefs it reaches, or
// InputSchema itself; nil when the tool declares none.
func (t *Tool) InputDocument() json.RawMessage { return document(t.InputSchema, t.InputDefs) }

// OutputDocument returns the output schema as one standalone document,
// as InputDocument does the input schema.
func (t *Tool) OutputDocument() json.RawMessage { return document(t.OutputSchema, t.OutputDefs) }

func document(root json.RawMessage, defs *Definitions) json.RawMessage {
	if defs == nil || len(root) == 0 {
		return root
	}
	return defs.Document(root)
}

// Category returns the part of the name before the dot.
func (t *Tool) Category() string {
	c, _, _ := strings.Cut(t.Name, ".")
	return c
}

// ShortName returns the part of the name after the dot.
func (t *Tool) ShortName() string {
	_, n, _ := strings.Cut(t.Name, ".")
	return n
}

var (
	identRE   = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	jsIdentRE = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)
)

// ValidName reports whether name is a valid qualified tool name.
func ValidName(name string) bool {
	c, n, ok := strings.Cut(name, ".")
	return ok && len(name) <= 128 && identRE.MatchString(c) && identRE.MatchString(n)
}

// MaxGroupDepth is the most levels a Tool.Group path has.
const MaxGroupDepth = 3

// ValidGroup reports whether g is a valid Tool.Group: empty, or up to
// MaxGroupDepth lower-case identifiers joined by "/", at most 128 bytes.
func ValidGroup(g string) bool {
	if g == "" {
		return true
	}
	parts := strings.Split(g, "/")
	if len(g) > 128 || len(parts) > MaxGroupDepth {
		return false
	}
	for _, p := range parts {
		if !identRE.MatchString(p) {
			return false
		}
	}
	return true
}

// ValidCategory reports whether name is a valid category name.
func ValidCategory(name string) bool {
	return len(name) <= 64 && identRE.MatchString(name)
}

func (t *Tool) check() error {
	if !ValidName(t.Name) {
		return fmt.Errorf("tool name %q: want category.name, each a lower-case identifier ([a-z][a-z0-9_]*)", t.Name)
	}
	if t.Handler == nil {
		return fmt.Errorf("tool %s: no handler", t.Name)
	}
	if strings.TrimSpace(t.Summary) == "" {
		return fmt.Errorf("tool %s: empty summary", t.Name)
	}
	if strings.ContainsAny(t.Summary, "\n\r") {
		return fmt.Errorf("tool %s: summary must be one line", t.Name)
	}
	if !ValidGroup(t.Group) {
		return fmt.Errorf("tool %s: group %q: want up to %d lower-case identifiers joined by /", t.Name, t.Group, MaxGroupDepth)
	}
	for _, p := range t.Positional {
		if !jsIdentRE.MatchString(p) {
			return fmt.Errorf("tool %s: positional parameter %q is not an identifier", t.Name, p)
		}
	}
	for i, a := range t.Aliases {
		switch {
		case a == "" || len(a) > 128 || strings.IndexFunc(a, func(r rune) bool { return r < ' ' || r == 0x7f }) >= 0:
			return fmt.Errorf("tool %s: alias %q: want 1 to 128 printable bytes", t.Name, a)
		case a == t.ShortName():
			return fmt.Errorf("tool %s: alias %q is its own name", t.Name, a)
		case slices.Contains(t.Aliases[:i], a):
			return fmt.Errorf("tool %s: alias %q given twice", t.Name, a)
		}
	}
	for _, sc := range []struct {
		what string
		doc  json.RawMessage
		defs *Definitions
	}{{"input", t.InputSchema, t.InputDefs}, {"output", t.OutputSchema, t.OutputDefs}} {
		if err := checkSchema(sc.doc, sc.defs); err != nil {
			return fmt.Errorf("tool %s: %s schema: %w", t.Name, sc.what, err)
		}
	}
	if io := t.InferredOutput; io != nil {
		if s := bytes.TrimSpace(io.Schema); len(s) == 0 || s[0] != '{' || !json.Valid(s) {
			return fmt.Errorf("tool %s: inferred output schema: want a JSON object", t.Name)
		}
		if io.Observed < 1 {
			return fmt.Errorf("tool %s: inferred output schema: observed %d results, want at least 1", t.Name, io.Observed)
		}
	}
	for _, r := range t.Related {
		if !ValidName(r) {
			return fmt.Errorf("tool %s: related tool name %q is not a qualified name", t.Name, r)
		}
	}
	return nil
}

// checkSchema checks what can be checked of a schema without compiling
// it: that it is a JSON object (or, without definitions, a boolean), and
// that a root with shared definitions has no "$defs" of its own.
// Compiling waits for the tool's first call.
func checkSchema(doc json.RawMessage, defs *Definitions) error {
	doc = bytes.TrimSpace(doc)
	if len(doc) == 0 {
		return nil
	}
	if !json.Valid(doc) {
		return fmt.Errorf("not valid JSON")
	}
	if defs == nil {
		if doc[0] != '{' && !bytes.Equal(doc, []byte("true")) && !bytes.Equal(doc, []byte("false")) {
			return fmt.Errorf("want a JSON object")
		}
		return nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return fmt.Errorf("want a JSON object")
	}
	if _, ok := top["$defs"]; ok {
		return fmt.Errorf(`has "$defs" of its own beside its shared definitions`)
	}
	return nil
}
