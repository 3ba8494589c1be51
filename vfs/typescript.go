package vfs

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode"

	"github.com/codecell/codecell/tools"
)

// Declaration returns the TypeScript declaration of how a program calls
// t, generated from its input and output JSON Schemas:
//
//	declare namespace github {
//	  /** Summary. */
//	  function get_issue(args: GetIssueArgs): Promise<Issue>;
//	  function get_issue(owner: string, repo: string, issue_number: number): Promise<Issue>;
//	  interface GetIssueArgs { ... }
//	  interface Issue { ... }
//	}
//
// Descriptions become JSDoc; required properties are non-optional; enums
// and consts become literal unions; oneOf/anyOf become unions and allOf
// intersections; "null" in a type array makes the type nullable; $ref to
// $defs (or definitions) become named interfaces or type aliases, other
// local references are inlined; additionalProperties and
// patternProperties become index signatures; defaults and constraints
// (minimum, maxLength, pattern, format, ...) become JSDoc tags. The
// second overload exists when t.Positional is set. A tool without an
// output schema returns Promise<unknown>, unless it has an inferred one
// (t.InferredOutput): that is rendered the same way, its JSDoc saying it
// was inferred and from how many results (InferredNote).
//
// Names that are reserved words in TypeScript declarations get a trailing
// underscore, and the JSDoc says how to call them.
//
// A declaration longer than SummariseAbove whose result names other
// types is summarised: the types named through references keep their
// fields, but not their fields' documentation, which the tool's .md page
// has; a comment says so. A schema too large to show whole (more than
// maxRenderedProperties properties, or maxDeclarations named types) is
// cut, the declaration saying what was left out.
func Declaration(t *tools.Tool) (string, error) {
	s, err := parseSchemas(t)
	if err != nil {
		return "", err
	}
	d, g := declaration(t, s, false)
	if len(d) <= SummariseAbove || g.named == 0 {
		return d, nil
	}
	d, _ = declaration(t, s, true)
	return d, nil
}

// SummariseAbove is the size above which a declaration is summarised (see
// Declaration).
const SummariseAbove = 8 << 10

// Bounds of one declaration, so that a pathological schema (20,000
// properties, a thousand levels of references) renders a readable page in
// bounded time rather than megabytes.
const (
	maxRenderedProperties = 2000
	maxDeclarations       = 400
)

// schemas are a tool's input and output schemas, parsed once for both
// of Declaration's renderings; inferred is the note of an inferred
// output schema. Rendering does not modify them.
type schemas struct {
	in, out  any
	inferred string
}

func parseSchemas(t *tools.Tool) (schemas, error) {
	in, err := parseSchema(t.InputDocument(), `{"type":"object","additionalProperties":false}`)
	if err != nil {
		return schemas{}, fmt.Errorf("declare %s: input schema: %w", t.Name, err)
	}
	outSchema, inferred := t.OutputDocument(), ""
	if len(outSchema) == 0 && t.InferredOutput != nil {
		outSchema, inferred = t.InferredOutput.Schema, InferredNote(t.InferredOutput.Observed)
	}
	out, err := parseSchema(outSchema, "")
	if err != nil {
		return schemas{}, fmt.Errorf("declare %s: output schema: %w", t.Name, err)
	}
	return schemas{in: in, out: out, inferred: inferred}, nil
}

func declaration(t *tools.Tool, s schemas, summarise bool) (string, *tsgen) {
	in, out, inferred := s.in, s.out, s.inferred
	g := &tsgen{names: map[string]string{}, used: map[string]bool{"Promise": true, "Record": true, "Array": true}, summarise: summarise}
	cat, short := t.Category(), t.ShortName()
	base := pascal(short)
	argsName, resultName := g.unique(base+"Args"), g.unique(base+"Result")
	const ind = "  "

	// Arguments.
	inDoc := &schemaDoc{root: in, self: argsName, visiting: map[string]bool{}}
	argsDecl := g.declare(argsName, inDoc, in, ind)
	argsOptional := len(requiredOf(in)) == 0

	// Result: a bare $ref needs no alias of its own.
	resultType := "unknown"
	var resultDecl string
	if out != nil {
		outDoc := &schemaDoc{root: out, self: resultName, visiting: map[string]bool{}}
		if isBareRef(out) {
			resultType = g.typeOf(outDoc, out, ind)
		} else if typ := g.typeOf(outDoc, out, ind); typ != "unknown" {
			resultType = resultName
			var lead []string
			if inferred != "" {
				lead = []string{inferred}
			}
			resultDecl = g.declare(resultName, outDoc, out, ind, lead...)
		}
	}

	var b strings.Builder
	nsName := safeIdent(cat)
	if nsName != cat {
		fmt.Fprintf(&b, "/** %q is a reserved word: reach this namespace as globalThis[%q]. */\n", cat, cat)
	}
	fmt.Fprintf(&b, "declare namespace %s {\n", nsName)

	// Function documentation: the summary and what matters to a caller.
	fn := safeIdent(short)
	var docLines []string
	docLines = append(docLines, t.Summary)
	if h := hints(t.Annotations); h != "" {
		docLines = append(docLines, h)
	}
	if fn != short {
		docLines = append(docLines, fmt.Sprintf("%q is a reserved word: call it as %s.%s(...).", short, cat, short))
	}
	var identAliases []string
	for _, a := range t.Aliases {
		if jsIdent(a) {
			identAliases = append(identAliases, a)
		} else {
			docLines = append(docLines, fmt.Sprintf("Also %s(...).", memberCall(cat, a)))
		}
	}
	var fnTags []string
	if t.Deprecated {
		fnTags = append(fnTags, "@deprecated")
	}
	writeDoc(&b, ind, docLines, fnTags)
	argsParam := "args: "
	if argsOptional {
		argsParam = "args?: "
	}
	fmt.Fprintf(&b, "%sfunction %s(%s%s): Promise<%s>;\n", ind, fn, argsParam, argsName, resultType)
	if len(t.Positional) > 0 {
		fmt.Fprintf(&b, "%sfunction %s(%s): Promise<%s>;\n", ind, fn, g.positional(inDoc, in, t.Positional), resultType)
	}
	for _, a := range identAliases {
		writeDoc(&b, ind, []string{fmt.Sprintf("The same tool as %s.", fn)}, nil)
		fmt.Fprintf(&b, "%sfunction %s(%s%s): Promise<%s>;\n", ind, a, argsParam, argsName, resultType)
	}
	b.WriteString(argsDecl)
	b.WriteString(resultDecl)
	if summarise && len(g.decls) > 0 {
		fmt.Fprintf(&b, "%s// The types below are summarised: their fields, without the fields' docs (%s has them).\n", ind, FullPath(t.Name))
	}
	for _, d := range g.decls {
		b.WriteString(d)
	}
	if g.cut != "" {
		fmt.Fprintf(&b, "%s// %s\n", ind, g.cut)
	}
	b.WriteString("}\n")
	return b.String(), g
}

// InferredNote is the sentence that marks a result type inferred from
// observed results rather than declared by the tool.
func InferredNote(observed int) string {
	results := "results"
	if observed == 1 {
		results = "result"
	}
	return fmt.Sprintf("Inferred from %d observed %s, not declared by the tool: a hint, not a contract.", observed, results)
}

// isBareRef reports whether s is only a reference (with the definitions it
// carries), which needs no declaration of its own.
func isBareRef(s any) bool {
	o, ok := s.(*object)
	if !ok || o.str("$ref") == "" {
		return false
	}
	for _, k := range o.keys {
		switch k {
		case "$ref", "$defs", "definitions", "$schema", "$id", "$comment":
		default:
			return false
		}
	}
	return true
}

func parseSchema(raw json.RawMessage, dflt string) (any, error) {
	if len(raw) == 0 {
		if dflt == "" {
			return nil, nil
		}
		raw = json.RawMessage(dflt)
	}
	return parseJSON(raw)
}

// hints renders the annotations a caller should weigh before calling.
func hints(a tools.Annotations) string {
	var parts []string
	switch {
	case a.ReadOnly:
		parts = append(parts, "Read-only.")
	case a.Destructive:
		parts = append(parts, "Destructive: changes or deletes data.")
	}
	if a.Idempotent && !a.ReadOnly {
		parts = append(parts, "Idempotent.")
	}
	return strings.Join(parts, " ")
}

type tsgen struct {
	decls []string          // named declarations found through $ref, in order
	names map[string]string // definition key → declared name
	// keys are the definition keys' JSON, by definition: a definition is
	// referred to many times, and its JSON can be large (Stripe's).
	keys map[*object]string
	used map[string]bool
	// summarise leaves out the docs of the fields of the types named
	// through references (inRef > 0 while one is rendered).
	summarise bool
	inRef     int
	named     int // declarations made for references
	props     int // properties rendered
	cut       string
}

// keyOf is target's compact JSON, made once per object: the tree is
// not modified once parsed.
func (g *tsgen) keyOf(target any) string {
	o, ok := target.(*object)
	if !ok {
		return compactJSON(target)
	}
	if k, ok := g.keys[o]; ok {
		return k
	}
	if g.keys == nil {
		g.keys = map[*object]string{}
	}
	k := compactJSON(o)
	g.keys[o] = k
	return k
}

// quiet reports whether the docs being rendered are left out.
func (g *tsgen) quiet() bool { return g.summarise && g.inRef > 0 }

// schemaDoc is one schema document: the root that local references
// resolve in.
type schemaDoc struct {
	root     any
	self     string // the name the root is declared as, for "#" references
	visiting map[string]bool
}

// maxDepth bounds nesting so that pathological schemas still render.
const maxDepth = 24

func (g *tsgen) unique(name string) string {
	n := name
	for i := 2; g.used[n]; i++ {
		n = name + strconv.Itoa(i)
	}
	g.used[n] = true
	return n
}

// declare renders "interface Name {...}" for plain object schemas and
// "type Name = ...;" for everything else, with the schema's JSDoc after
// the lead lines.
func (g *tsgen) declare(name string, d *schemaDoc, s any, ind string, lead ...string) string {
	var b strings.Builder
	o, _ := s.(*object)
	if o != nil && g.quiet() {
		// A summarised type keeps the first line of its description.
		doc := descLines(o)
		if len(doc) > 0 {
			doc = []string{shorten(doc[0], 120)}
		}
		writeDoc(&b, ind, append(lead, doc...), nil)
	} else if o != nil {
		writeDoc(&b, ind, append(lead, descLines(o)...), append(tags(o), requiredSets(o)...))
	} else {
		writeDoc(&b, ind, lead, nil)
	}
	if o != nil && isPlainObject(o) {
		fmt.Fprintf(&b, "%sinterface %s %s\n", ind, name, g.objectBody(d, o, ind, 0))
		return b.String()
	}
	fmt.Fprintf(&b, "%stype %s = %s;\n", ind, name, g.typeAt(d, s, ind, 0))
	return b.String()
}

// isPlainObject reports whether s renders as one object literal with
// named properties and no index signature of another type.
func isPlainObject(s *object) bool {
	for _, k := range []string{"$ref", "const", "enum", "allOf", "prefixItems", "items"} {
		if s.has(k) {
			return false
		}
	}
	if hasShapedBranches(s, "oneOf") || hasShapedBranches(s, "anyOf") {
		return false
	}
	props, _ := s.vals["properties"].(*object)
	if props == nil || len(props.keys) == 0 {
		return false
	}
	switch t := s.vals["type"].(type) {
	case nil:
	case string:
		if t != "object" {
			return false
		}
	default:
		return false
	}
	if ap, ok := s.vals["additionalProperties"].(*object); ok && ap != nil {
		return false
	}
	return !s.has("patternProperties")
}

func (g *tsgen) typeOf(d *schemaDoc, s any, ind string) string {
	return g.typeAt(d, s, ind, 0)
}

func (g *tsgen) typeAt(d *schemaDoc, s any, ind string, depth int) string {
	if depth > maxDepth {
		return "unknown"
	}
	o, ok := s.(*object)
	if !ok {
		if b, ok := s.(bool); ok && !b {
			return "never"
		}
		return "unknown"
	}
	if ref := o.str("$ref"); ref != "" {
		return g.ref(d, ref, ind, depth)
	}
	if c, ok := o.get("const"); ok {
		return literal(c)
	}
	if e, ok := o.vals["enum"].([]any); ok && len(e) > 0 {
		lits := make([]string, 0, len(e))
		seen := map[string]bool{}
		for _, v := range e {
			l := literal(v)
			if !seen[l] {
				seen[l] = true
				lits = append(lits, l)
			}
		}
		return strings.Join(lits, " | ")
	}
	var parts []string
	if base := g.baseType(d, o, ind, depth); base != "" {
		parts = append(parts, base)
	}
	if all, ok := o.vals["allOf"].([]any); ok {
		for _, sub := range all {
			if t := g.typeAt(d, sub, ind, depth+1); t != "unknown" {
				parts = append(parts, t)
			}
		}
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		branches, _ := o.vals[k].([]any)
		var alts []string
		seen := map[string]bool{}
		for _, br := range branches {
			if !shaped(br) {
				continue
			}
			t := g.typeAt(d, br, ind, depth+1)
			if !seen[t] {
				seen[t] = true
				alts = append(alts, t)
			}
		}
		switch {
		case len(alts) == 1:
			parts = append(parts, alts[0])
		case len(alts) > 1:
			u := strings.Join(alts, " | ")
			if len(parts) > 0 {
				u = "(" + u + ")"
			}
			parts = append(parts, u)
		}
	}
	switch len(parts) {
	case 0:
		return "unknown"
	case 1:
		return parts[0]
	}
	for i, p := range parts {
		if compound(p, '|') {
			parts[i] = "(" + p + ")"
		}
	}
	return strings.Join(parts, " & ")
}

// shaped reports whether a schema says something about the type of a
// value, rather than only which properties are required.
func shaped(s any) bool {
	o, ok := s.(*object)
	if !ok {
		b, isBool := s.(bool)
		return isBool && !b
	}
	for _, k := range []string{"type", "properties", "items", "prefixItems", "$ref", "const", "enum", "oneOf", "anyOf", "allOf", "additionalProperties", "patternProperties"} {
		if o.has(k) {
			return true
		}
	}
	return false
}

func hasShapedBranches(o *object, k string) bool {
	bs, _ := o.vals[k].([]any)
	for _, b := range bs {
		if shaped(b) {
			return true
		}
	}
	return false
}

// baseType renders what "type" (or the keywords that imply one) says.
func (g *tsgen) baseType(d *schemaDoc, o *object, ind string, depth int) string {
	var types []string
	switch t := o.vals["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				types = append(types, s)
			}
		}
	case nil:
		switch {
		case o.has("properties") || o.has("additionalProperties") || o.has("patternProperties"):
			types = []string{"object"}
		case o.has("items") || o.has("prefixItems"):
			types = []string{"array"}
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, t := range types {
		var r string
		switch t {
		case "string":
			r = "string"
		case "integer", "number":
			r = "number"
		case "boolean":
			r = "boolean"
		case "null":
			r = "null"
		case "array":
			r = g.arrayType(d, o, ind, depth)
		case "object":
			r = g.objectType(d, o, ind, depth)
		default:
			r = "unknown"
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return strings.Join(out, " | ")
}

func (g *tsgen) arrayType(d *schemaDoc, o *object, ind string, depth int) string {
	if pre, ok := o.vals["prefixItems"].([]any); ok {
		elems := make([]string, 0, len(pre)+1)
		for _, p := range pre {
			elems = append(elems, g.typeAt(d, p, ind, depth+1))
		}
		if it, ok := o.vals["items"]; ok {
			if b, isBool := it.(bool); !isBool || b {
				elems = append(elems, "..."+arrayOf(g.typeAt(d, it, ind, depth+1)))
			}
		} else {
			elems = append(elems, "...unknown[]")
		}
		return "[" + strings.Join(elems, ", ") + "]"
	}
	it, ok := o.vals["items"]
	if !ok {
		return "unknown[]"
	}
	return arrayOf(g.typeAt(d, it, ind, depth+1))
}

func arrayOf(t string) string {
	if compound(t, '|') || compound(t, '&') {
		return "(" + t + ")[]"
	}
	return t + "[]"
}

func (g *tsgen) objectType(d *schemaDoc, o *object, ind string, depth int) string {
	props, _ := o.vals["properties"].(*object)
	index := g.indexType(d, o, ind, depth)
	if props == nil || len(props.keys) == 0 {
		if index == "" {
			if ap, ok := o.vals["additionalProperties"].(bool); ok && !ap {
				return "Record<string, never>"
			}
			index = "unknown"
		}
		return "{ [key: string]: " + index + " }"
	}
	body := g.objectBody(d, o, ind, depth)
	if index != "" && index != "unknown" {
		return body + " & { [key: string]: " + index + " }"
	}
	return body
}

// indexType is the value type of an index signature, or "" for none.
// additionalProperties true gives "unknown"; absent gives none, since a
// schema author who lists properties rarely means "anything else too".
func (g *tsgen) indexType(d *schemaDoc, o *object, ind string, depth int) string {
	var alts []string
	switch ap := o.vals["additionalProperties"].(type) {
	case bool:
		if ap {
			return "unknown"
		}
	case *object:
		alts = append(alts, g.typeAt(d, ap, ind, depth+1))
	}
	if pp, ok := o.vals["patternProperties"].(*object); ok {
		for _, k := range pp.keys {
			alts = append(alts, g.typeAt(d, pp.vals[k], ind, depth+1))
		}
	}
	if len(alts) == 0 {
		return ""
	}
	for _, a := range alts {
		if a == "unknown" {
			return "unknown"
		}
	}
	return strings.Join(dedupe(alts), " | ")
}

// objectBody renders "{ ...properties... }" over several lines.
func (g *tsgen) objectBody(d *schemaDoc, o *object, ind string, depth int) string {
	props, _ := o.vals["properties"].(*object)
	req := map[string]bool{}
	for _, r := range requiredOf(o) {
		req[r] = true
	}
	inner := ind + "  "
	var b strings.Builder
	b.WriteString("{\n")
	if props != nil {
		for i, name := range props.keys {
			if g.props >= maxRenderedProperties {
				left := len(props.keys) - i
				fmt.Fprintf(&b, "%s// … %d more %s left out: the schema is too large to declare whole.\n", inner, left, plural(left, "property", "properties"))
				fmt.Fprintf(&b, "%s[key: string]: unknown;\n", inner)
				g.cut = "Cut: the schema has more than " + fmt.Sprint(maxRenderedProperties) + " properties; those left out are typed unknown."
				break
			}
			g.props++
			ps := props.vals[name]
			if po, ok := ps.(*object); ok && !g.quiet() {
				writeDoc(&b, inner, descLines(po), append(tags(po), requiredSets(po)...))
			}
			opt := "?"
			if req[name] {
				opt = ""
			}
			fmt.Fprintf(&b, "%s%s%s: %s;\n", inner, propName(name), opt, g.typeAt(d, ps, inner, depth+1))
		}
	}
	if idx := g.indexType(d, o, inner, depth); idx == "unknown" && props != nil && len(props.keys) > 0 && !strings.HasSuffix(b.String(), "[key: string]: unknown;\n") {
		fmt.Fprintf(&b, "%s[key: string]: unknown;\n", inner)
	}
	b.WriteString(ind)
	b.WriteString("}")
	return b.String()
}

// ref renders a $ref: definitions become named declarations, "#" the
// root's own name, other local pointers are inlined.
func (g *tsgen) ref(d *schemaDoc, ref string, ind string, depth int) string {
	if ref == "#" && d.self != "" {
		return d.self
	}
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return "unknown" // an external document: not followed
	}
	target, ok := resolvePointer(d.root, frag)
	if !ok {
		return "unknown"
	}
	for _, prefix := range []string{"/$defs/", "/definitions/"} {
		defName, ok := strings.CutPrefix(frag, prefix)
		if !ok || strings.Contains(defName, "/") {
			continue
		}
		defName = unescapePointer(defName)
		key := defName + "\x00" + g.keyOf(target)
		if n, ok := g.names[key]; ok {
			return n
		}
		if g.named >= maxDeclarations {
			g.cut = "Cut: the schema names more than " + fmt.Sprint(maxDeclarations) + " types; those left out are typed unknown."
			return "unknown"
		}
		n := g.unique(pascal(defName))
		g.names[key] = n
		g.named++
		// The declaration is rendered at namespace level whatever the
		// depth of the reference, in the order references are met.
		slot := len(g.decls)
		g.decls = append(g.decls, "")
		g.inRef++
		g.decls[slot] = g.declare(n, d, target, "  ")
		g.inRef--
		return n
	}
	if d.visiting[frag] {
		return "unknown"
	}
	d.visiting[frag] = true
	defer delete(d.visiting, frag)
	return g.typeAt(d, target, ind, depth+1)
}

// positional renders the parameter list of the positional overload. Once
// a parameter is optional, the ones after it are too.
func (g *tsgen) positional(d *schemaDoc, in any, names []string) string {
	o, _ := in.(*object)
	var props *object
	if o != nil {
		props, _ = o.vals["properties"].(*object)
	}
	req := map[string]bool{}
	for _, r := range requiredOf(in) {
		req[r] = true
	}
	parts := make([]string, 0, len(names))
	optional := false
	for _, n := range names {
		var ps any = true
		if props != nil {
			if v, ok := props.vals[n]; ok {
				ps = v
			}
		}
		optional = optional || !req[n]
		opt := ""
		if optional {
			opt = "?"
		}
		parts = append(parts, safeIdent(n)+opt+": "+g.typeAt(d, ps, "  ", 1))
	}
	return strings.Join(parts, ", ")
}

func requiredOf(s any) []string {
	o, ok := s.(*object)
	if !ok {
		return nil
	}
	arr, _ := o.vals["required"].([]any)
	out := make([]string, 0, len(arr))
	for _, r := range arr {
		if s, ok := r.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// requiredSets describes oneOf/anyOf branches that only add required
// properties ("give an email or a user_id"), which a type cannot say
// compactly.
func requiredSets(o *object) []string {
	var out []string
	for _, k := range []string{"oneOf", "anyOf"} {
		bs, _ := o.vals[k].([]any)
		var sets []string
		for _, b := range bs {
			if shaped(b) {
				continue
			}
			if r := requiredOf(b); len(r) > 0 {
				sets = append(sets, strings.Join(r, " and "))
			}
		}
		if len(sets) == 0 {
			continue
		}
		what := "exactly one of"
		if k == "anyOf" {
			what = "at least one of"
		}
		out = append(out, "@remarks Give "+what+": "+strings.Join(sets, "; ")+".")
	}
	return out
}

func descLines(o *object) []string {
	text := o.str("description")
	if text == "" {
		text = o.str("title")
	}
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSpace(text), "\n")
}

// tags renders defaults and constraints as JSDoc tags.
func tags(o *object) []string {
	var out []string
	add := func(tag, key string) {
		if v, ok := o.get(key); ok {
			out = append(out, "@"+tag+" "+compactJSON(v))
		}
	}
	addRaw := func(tag, key string) {
		if v := o.str(key); v != "" {
			out = append(out, "@"+tag+" "+v)
		}
	}
	add("default", "default")
	add("minimum", "minimum")
	add("exclusiveMinimum", "exclusiveMinimum")
	add("maximum", "maximum")
	add("exclusiveMaximum", "exclusiveMaximum")
	add("multipleOf", "multipleOf")
	add("minLength", "minLength")
	add("maxLength", "maxLength")
	addRaw("pattern", "pattern")
	addRaw("format", "format")
	add("minItems", "minItems")
	add("maxItems", "maxItems")
	if v, _ := o.vals["uniqueItems"].(bool); v {
		out = append(out, "@uniqueItems")
	}
	add("minProperties", "minProperties")
	add("maxProperties", "maxProperties")
	addRaw("contentEncoding", "contentEncoding")
	addRaw("contentMediaType", "contentMediaType")
	if ex, ok := o.vals["examples"].([]any); ok && len(ex) > 0 {
		out = append(out, "@example "+compactJSON(ex[0]))
	}
	if v, _ := o.vals["deprecated"].(bool); v {
		out = append(out, "@deprecated")
	}
	return out
}

// writeDoc writes a JSDoc comment: on one line when it is short, else the
// text lines followed by one line of tags.
func writeDoc(b *strings.Builder, ind string, lines, tagList []string) {
	if len(lines) == 0 && len(tagList) == 0 {
		return
	}
	for i := range lines {
		lines[i] = commentSafe(strings.TrimRight(lines[i], " \t\r"))
	}
	tagLine := commentSafe(strings.Join(tagList, " "))
	if len(lines) <= 1 {
		one := strings.TrimSpace(strings.Join(append(lines, tagLine), " "))
		if len(ind)+len(one) <= 96 {
			fmt.Fprintf(b, "%s/** %s */\n", ind, one)
			return
		}
	}
	fmt.Fprintf(b, "%s/**\n", ind)
	for _, l := range lines {
		if l == "" {
			fmt.Fprintf(b, "%s *\n", ind)
			continue
		}
		fmt.Fprintf(b, "%s * %s\n", ind, l)
	}
	if tagLine != "" {
		fmt.Fprintf(b, "%s * %s\n", ind, tagLine)
	}
	fmt.Fprintf(b, "%s */\n", ind)
}

func commentSafe(s string) string {
	return strings.ReplaceAll(s, "*/", "*\\/")
}

// literal renders a JSON value as a TypeScript literal type.
func literal(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool, json.Number, string:
		return compactJSON(v)
	}
	return "unknown" // object and array constants: not worth a literal type
}

// compound reports whether t has op at its top level, outside brackets,
// braces, parentheses and string literals.
func compound(t string, op byte) bool {
	depth := 0
	inStr := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '(', '[', '{', '<':
			depth++
		case ')', ']', '}', '>':
			depth--
		default:
			if c == op && depth == 0 {
				return true
			}
		}
	}
	return false
}

func resolvePointer(root any, frag string) (any, bool) {
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	if frag == "" {
		return root, true
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, false
	}
	cur := root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = unescapePointer(tok)
		switch c := cur.(type) {
		case *object:
			v, ok := c.vals[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || r == '$' || (r < 128 && unicode.IsLetter(r)) || (i > 0 && r < 128 && unicode.IsDigit(r)) {
			continue
		}
		return false
	}
	return true
}

// propName renders a property name, quoted when it is not an identifier.
// Reserved words are fine as property names.
func propName(n string) string {
	if isIdent(n) {
		return n
	}
	return quote(n)
}

// reserved lists words that cannot name a function, namespace or
// parameter in a TypeScript declaration.
var reserved = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`break case catch class const continue debugger default delete do else
		enum export extends false finally for function if import in instanceof new null return super
		switch this throw true try typeof var void while with implements interface let package private
		protected public static yield await arguments eval`) {
		m[w] = true
	}
	return m
}()

// safeIdent returns n, with an underscore appended when it is reserved.
func safeIdent(n string) string {
	if reserved[n] {
		return n + "_"
	}
	return n
}

// pascal turns a name such as "search_issues" or "issue-key" into
// "SearchIssues", a valid type name.
func pascal(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		switch {
		case r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if up {
				r = unicode.ToUpper(r)
				up = false
			}
			b.WriteRune(r)
		default:
			up = true
		}
	}
	out := b.String()
	if out == "" || unicode.IsDigit(rune(out[0])) {
		out = "T" + out
	}
	return out
}

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	out := ss[:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
