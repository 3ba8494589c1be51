package tools

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Definitions are named JSON Schemas that the schemas of many tools share,
// such as an OpenAPI document's components. A tool whose InputDefs or
// OutputDefs is set has an InputSchema or OutputSchema that refers to them
// as "#/$defs/NAME" without carrying them, so that a catalogue holds each
// shared schema once rather than once per tool.
//
// The registry compiles a definition once for every tool that reaches it,
// when the first of those tools is called, and never one that no called
// tool reaches. InputDocument and OutputDocument give a tool's schema as
// one standalone document, with the definitions it reaches, for readers
// that want one.
//
// Definitions are immutable once made and safe for concurrent use.
type Definitions struct {
	id   string // names the compiler's resources
	defs map[string]json.RawMessage

	mu       sync.Mutex
	refs     map[string][]string // definitions each one refers to, as found
	sizes    map[string]schemaSize
	parsed   map[string]any // parsed, measured, not yet handed to the compiler
	compiler *jsonschema.Compiler
	done     map[string]bool      // definitions compiled
	roots    map[[32]byte]*Schema // compiled tool schemas by their hash
}

// defName is what a definition may be called: a name that needs no
// escaping in a JSON Pointer, a URI or a JSON string.
var defName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

var defsSeq atomic.Uint64

// NewDefinitions returns the definitions defs, each a JSON Schema named by
// letters, digits, '_', '.' and '-'. It checks names and that each schema
// is JSON, not that it compiles: that is learnt when a tool that reaches
// it is first called.
func NewDefinitions(defs map[string]json.RawMessage) (*Definitions, error) {
	for _, n := range slices.Sorted(maps.Keys(defs)) {
		if len(n) > 1024 || !defName.MatchString(n) {
			return nil, fmt.Errorf("definition %q: want a name of letters, digits, '_', '.' and '-'", n)
		}
		if !json.Valid(defs[n]) {
			return nil, fmt.Errorf("definition %s: not valid JSON", n)
		}
	}
	return &Definitions{
		id:     fmt.Sprintf("d%d", defsSeq.Add(1)),
		defs:   defs,
		refs:   map[string][]string{},
		sizes:  map[string]schemaSize{},
		parsed: map[string]any{},
		done:   map[string]bool{},
		roots:  map[[32]byte]*Schema{},
	}, nil
}

// Len returns the number of definitions.
func (d *Definitions) Len() int { return len(d.defs) }

// Names returns the names of the definitions, sorted.
func (d *Definitions) Names() []string { return slices.Sorted(maps.Keys(d.defs)) }

// Get returns the named definition.
func (d *Definitions) Get(name string) (json.RawMessage, bool) {
	s, ok := d.defs[name]
	return s, ok
}

// refPrefix starts a reference to a definition.
const refPrefix = "#/$defs/"

// refsIn returns the names of the definitions a schema refers to
// ("#/$defs/NAME", or a pointer below it), sorted, each once. It reads
// the bytes, not the structure, so a description quoting such a
// reference counts too: a definition too many, never one too few.
func refsIn(raw []byte) []string {
	var out []string
	for {
		i := bytes.Index(raw, []byte(refPrefix))
		if i < 0 {
			break
		}
		raw = raw[i+len(refPrefix):]
		end := bytes.IndexAny(raw, `"/`)
		if end <= 0 {
			continue
		}
		out = append(out, string(raw[:end]))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// refsOf returns the definitions definition n refers to. d.mu is held.
func (d *Definitions) refsOf(n string) []string {
	r, ok := d.refs[n]
	if !ok {
		r = refsIn(d.defs[n])
		d.refs[n] = r
	}
	return r
}

// reach returns the definitions that root reaches, directly or through
// other definitions, in the order found. Names that are not defined are
// left out: a reference to one fails to compile, and one that only a
// description quotes does no harm. d.mu is held.
func (d *Definitions) reach(root []byte) []string {
	seen := map[string]bool{}
	queue := refsIn(root)
	var out []string
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if seen[n] {
			continue
		}
		seen[n] = true
		if _, ok := d.defs[n]; ok {
			out = append(out, n)
			queue = append(queue, d.refsOf(n)...)
		}
	}
	return out
}

// defined returns the names of names that are defined.
func (d *Definitions) defined(names []string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { _, ok := d.defs[n]; return !ok })
}

// Document returns root with the definitions it reaches under "$defs": a
// standalone JSON Schema document. root must be a JSON object without
// "$defs" of its own (Tool.check holds it).
func (d *Definitions) Document(root json.RawMessage) json.RawMessage {
	d.mu.Lock()
	names := d.reach(root)
	d.mu.Unlock()
	if len(names) == 0 {
		return root
	}
	slices.Sort(names)
	body := bytes.TrimSpace(root)
	body = bytes.TrimSpace(body[:len(body)-1]) // without its closing brace
	size := len(body) + 16
	for _, n := range names {
		size += len(n) + len(d.defs[n]) + 4
	}
	out := make([]byte, 0, size)
	out = append(out, body...)
	if len(body) > 1 {
		out = append(out, ',')
	}
	out = append(out, `"$defs":{`...)
	for i, n := range names {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, n...)
		out = append(out, `":`...)
		out = append(out, d.defs[n]...)
	}
	return append(out, "}}"...)
}

// url is where the compiler finds definition n.
func (d *Definitions) url(n string) string { return "codecell:///" + d.id + "/defs/" + n + ".json" }

// stubs gives a parsed document the definitions it refers to as
// references to their own resources, so that its "#/$defs/NAME" resolves
// to the one compiled copy of NAME.
func (d *Definitions) stubs(doc any, refs []string) {
	m, ok := doc.(map[string]any)
	if !ok || len(refs) == 0 {
		return
	}
	own, _ := m["$defs"].(map[string]any)
	defs := map[string]any{}
	for k, v := range own {
		defs[k] = v
	}
	for _, n := range refs {
		if _, ok := defs[n]; !ok {
			defs[n] = map[string]any{"$ref": d.url(n)}
		}
	}
	m["$defs"] = defs
}

// defsLoader serves the compiler the definitions, and nothing else. It
// runs within compile, d.mu held.
type defsLoader struct{ d *Definitions }

func (l defsLoader) Load(url string) (any, error) {
	d := l.d
	rest, ok := strings.CutPrefix(url, "codecell:///"+d.id+"/defs/")
	n, json := strings.CutSuffix(rest, ".json")
	if !ok || !json || d.parsed[n] == nil {
		return nil, ErrExternalRef
	}
	doc := d.parsed[n]
	delete(d.parsed, n) // the compiler keeps it now
	return doc, nil
}

// size parses and measures definition n once. d.mu is held.
func (d *Definitions) size(n string) (schemaSize, error) {
	if sz, ok := d.sizes[n]; ok {
		return sz, nil
	}
	v, err := parseSchema(d.defs[n], "the definition")
	if err != nil {
		return schemaSize{}, fmt.Errorf("definition %s: %w", n, err)
	}
	sz := measure(v)
	d.stubs(v, d.defined(d.refsOf(n)))
	d.sizes[n] = sz
	if !d.done[n] {
		d.parsed[n] = v
	}
	return sz, nil
}

// compile compiles a tool's schema root, whose references are to these
// definitions: each definition it reaches is compiled once, before the
// root, and shared with every other tool's schema that reaches it.
func (d *Definitions) compile(root json.RawMessage) (*Schema, error) {
	key := sha256.Sum256(root)
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.roots[key]; ok {
		return s, nil
	}
	v, err := parseSchema(root, "the schema")
	if err != nil {
		return nil, err
	}
	if err := measure(v).check("the schema"); err != nil {
		return nil, err
	}
	direct, err := d.compileDefs(root, measure(v).schemas)
	if err != nil {
		return nil, err
	}
	d.stubs(v, direct)
	loc := "codecell:///" + d.id + "/schemas/" + hex.EncodeToString(key[:16]) + ".json"
	if err := d.compiler.AddResource(loc, v); err != nil {
		return nil, fmt.Errorf("load schema: %w", err)
	}
	s, err := d.compiler.Compile(loc)
	if err != nil {
		return nil, compileError(err)
	}
	out := newSchema(s, v)
	d.roots[key] = out
	return out, nil
}

// Prepare compiles, of the roots given (tools' schemas), the definitions
// that the one reaching the most definitions reaches, and not the root
// itself: a source calls it once loaded, so that the first call of any
// of its tools compiles the tool's own schema and little else. (A large
// API's largest schemas share their definitions: the first call of
// Kubernetes' stateful set compiled 727 subschemas, 50–100 ms on a busy
// machine, and then that of a deployment took 1.5 ms.) It returns what
// compiling them returned; a definition that does not compile is left
// for the call that reaches it to report.
func (d *Definitions) Prepare(roots ...json.RawMessage) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var best json.RawMessage
	most := 0
	for _, r := range roots {
		if n := len(d.reach(r)); n > most {
			best, most = r, n
		}
	}
	if best == nil {
		return nil
	}
	_, err := d.compileDefs(best, 0)
	return err
}

// compileDefs compiles the definitions root reaches, each once, and
// returns those it refers to directly. rootSchemas is the number of
// subschemas of root, counted against MaxSchemas with theirs. d.mu is
// held.
func (d *Definitions) compileDefs(root json.RawMessage, rootSchemas int) ([]string, error) {
	names := d.reach(root)
	total := rootSchemas
	for _, n := range names {
		sz, err := d.size(n)
		if err != nil {
			return nil, err
		}
		if err := sz.check("definition " + n); err != nil {
			return nil, err
		}
		if total += sz.schemas; total > MaxSchemas {
			return nil, fmt.Errorf("%w: it reaches more than %d subschemas through its definitions", ErrSchemaTooLarge, MaxSchemas)
		}
	}
	if d.compiler == nil {
		d.compiler = newCompiler()
		d.compiler.UseLoader(defsLoader{d})
	}
	// Definitions first, those they refer to before them, so that each
	// compilation holds one definition: the compiler's work grows faster
	// than the number of subschemas it compiles at once.
	visiting := map[string]bool{}
	var order []string
	var visit func(n string)
	visit = func(n string) {
		if d.done[n] || visiting[n] {
			return
		}
		visiting[n] = true
		for _, r := range d.defined(d.refsOf(n)) {
			visit(r)
		}
		order = append(order, n)
	}
	direct := d.defined(refsIn(root))
	for _, n := range direct {
		visit(n)
	}
	for _, n := range order {
		if _, err := d.compiler.Compile(d.url(n)); err != nil {
			return nil, fmt.Errorf("definition %s: %w", n, compileError(err))
		}
		d.done[n] = true
	}
	return direct, nil
}
