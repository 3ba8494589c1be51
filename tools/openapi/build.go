package openapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/codecell/codecell/tools"
)

// maxGroupSize is the most tools a tag keeps at its own level: a larger
// tag is split into subgroups by the resource its paths name.
const maxGroupSize = 40

// minSubgroup is the fewest tools a subgroup holds; smaller ones stay at
// their tag's level.
const minSubgroup = 3

// PaginateTool is the short name of the tool a source registers when some
// of its operations page: tools.paginate in a program calls it.
const PaginateTool = "paginate"

// artifactSchema is the output schema of an operation whose response is
// binary: the program gets a handle, not the bytes.
var artifactSchema = json.RawMessage(`{"type":"object","description":"A binary response, kept as an artifact the client can read at uri.","properties":{"type":{"enum":["image","audio","resource"]},"mimeType":{"type":"string"},"uri":{"type":"string"},"bytes":{"type":"integer"}},"required":["type","mimeType","uri","bytes"]}`)

// built is what a document makes: its tools, the definitions their
// schemas share, and what it could not make. It holds nothing of the
// parsed document, so that it can be kept as a snapshot (see
// snapshot.go) and made again from one.
type built struct {
	title    string // the document's title
	version  string // the document's OpenAPI version
	tools    []tools.Tool
	ops      map[string]*operation // by tool short name
	problems []Problem
	// defs are the converted definitions of each direction (input,
	// output), shared by the tools whose schemas refer to them: those
	// have InputDefs or OutputDefs set.
	defs [2]map[string]json.RawMessage
	// refers says, for each tool, whether its input and output schemas
	// refer to the definitions.
	refers [][2]bool
	paged  int // operations that page: the paginate tool serves them
	// over is how many operations the source's bound (max_operations,
	// maxOps) left out, after the first maxOps.
	over, maxOps int
	// credHost is the host of the document's own server (not an
	// operation's), lower-cased, when the configuration names no
	// base_url: credentials go there (and to base_url's host and
	// allowed_hosts), never to a host only an operation names.
	credHost string
}

// link gives the tools their shared definitions and handlers, calling
// through s: what a snapshot does not hold.
func (b *built) link(s *Source) error {
	var defs [2]*tools.Definitions
	for dir := range defs {
		d, err := tools.NewDefinitions(b.defs[dir])
		if err != nil {
			return err
		}
		defs[dir] = d
	}
	for i := range b.tools {
		t := &b.tools[i]
		o := b.ops[t.ShortName()]
		if o == nil { // the paginate tool; no operation has its name
			t.Handler = s.paginateHandler
			continue
		}
		if b.refers[i][input] {
			t.InputDefs = defs[input]
		}
		if b.refers[i][output] {
			t.OutputDefs = defs[output]
		}
		t.Handler = s.handler(o)
		t.MaxResultBytes = s.set.maxResponse
	}
	return nil
}

// build turns the document's operations into tools of the source's
// category, whose handlers call through s.
func (s *Source) build(d *Document) (*built, error) {
	ops, problems, over := collect(d.doc, s.set)
	if over > 0 {
		// Not an ordinary gap of a document: say so where it shows.
		s.log.Warn("openapi operations left out: the source registers at most max_operations", "source", s.category,
			"max_operations", s.set.maxOps, "left_out", over)
		problems = append(problems, Problem{Operation: fmt.Sprintf("%d operations", over), Message: overMessage(s.category, s.set.maxOps, over)})
	}
	if len(ops) == 0 {
		if len(problems) > 0 {
			return nil, fmt.Errorf("%w: none of its operations can be called; the first: %s", ErrDocument, problems[0])
		}
		return nil, fmt.Errorf("%w: the configuration selects none of its operations (include, exclude, tags, methods, read_only)", ErrDocument)
	}
	groupOperations(ops)
	sc := newSchemas(d.doc, toolBudget(d.size))
	out := &built{title: d.Title, version: d.Version, ops: map[string]*operation{}, problems: problems, over: over, maxOps: s.set.maxOps}
	if s.set.base == nil {
		if u, err := s.baseFor(d, &operation{}); err == nil {
			out.credHost = strings.ToLower(u.Host)
		}
	}
	for _, o := range ops {
		base, err := s.baseFor(d, o)
		if err != nil {
			out.problems = append(out.problems, Problem{Operation: o.label(), Message: err.Error()})
			continue
		}
		o.base = base
		t, refs, err := s.tool(d, sc, o)
		if err == nil {
			err = sc.charge(textBytes(&t))
		}
		if err != nil {
			if errors.Is(err, errSchemaTooLarge) || errors.Is(err, errDocumentTooLarge) || errors.Is(err, errSchemaBytes) || errors.As(err, new(*budgetError)) {
				// Not an ordinary gap of a document: say so where it shows.
				s.log.Warn("openapi operation left out: its schema expands too far", "source", s.category, "operation", o.label(), "bytes", sc.spent)
			}
			out.problems = append(out.problems, Problem{Operation: o.label(), Message: err.Error()})
			continue
		}
		if o.linked || o.cursor != nil {
			out.paged++
		}
		o.op = nil // the document is not needed once the tool is made
		o.servers = nil
		for _, p := range o.params {
			p.def = nil
		}
		out.tools = append(out.tools, t)
		out.refers = append(out.refers, refs)
		out.ops[o.name] = o
	}
	if len(out.tools) == 0 {
		return nil, fmt.Errorf("%w: none of its operations can be called; the first: %s", ErrDocument, out.problems[0])
	}
	if out.paged > 0 {
		out.tools = append(out.tools, s.paginateTool())
		out.refers = append(out.refers, [2]bool{})
	}
	out.defs = [2]map[string]json.RawMessage{sc.definitions(input), sc.definitions(output)}
	if err := out.link(s); err != nil {
		return nil, err
	}
	return out, nil
}

// overMessage says that the bound on a source's operations left some
// out, and what to change.
func overMessage(category string, limit, over int) string {
	return fmt.Sprintf("left out: the source registers at most %d operations (max_operations), and the configuration selects %d more; "+
		"select fewer with include, exclude, tags or methods in [openapi.%s], or raise max_operations", limit, over, category)
}

// tool makes the tool of one operation, without its handler and shared
// definitions (see built.link), and says whether its input and output
// schemas refer to definitions.
func (s *Source) tool(d *Document, sc *schemas, o *operation) (tools.Tool, [2]bool, error) {
	op := o.op
	var refs [2]bool
	in, inRefs, err := inputSchema(sc, o)
	if err != nil {
		return tools.Tool{}, refs, fmt.Errorf("input: %w", err)
	}
	out, outRefs, err := outputSchema(sc, op)
	if err != nil {
		return tools.Tool{}, refs, fmt.Errorf("output: %w", err)
	}
	refs[input], refs[output] = inRefs, outRefs
	t := tools.Tool{
		Name:         s.category + "." + o.name,
		Aliases:      aliasesOf(o),
		Summary:      summaryOf(o),
		Description:  descriptionOf(o),
		InputSchema:  in,
		OutputSchema: out,
		Annotations:  annotationsOf(o.method),
		Errors:       errorsOf(op),
		Notes:        s.notesOf(d, o),
		Group:        o.group,
		Route:        o.method + " " + o.path,
		Deprecated:   op.Deprecated,
	}
	return t, refs, nil
}

// inputSchema merges the operation's parameters and body into one object
// schema: a parameter per property, then the body's properties when it is
// a plain object (see mergeable), else the body under its own property.
// It reports whether the schema refers to shared definitions.
func inputSchema(sc *schemas, o *operation) (json.RawMessage, bool, error) {
	c := sc.newConv(input)
	props := newObj()
	var req []any
	for _, p := range o.params {
		def := p.def
		var v any = newObj()
		if def != nil {
			switch {
			case def.Schema != nil:
				v = sc.value(c, def.Schema, 1)
			case len(def.Content) > 0:
				if _, mt := preferredMedia(def.Content); mt != nil && mt.Schema != nil {
					v = sc.value(c, mt.Schema, 1)
				}
			}
			v = annotate(v, def.Description, def.Deprecated)
			if def.Example != nil && small(def.Example) {
				if ob, ok := v.(*obj); ok && !ob.has("examples") {
					ob.set("examples", []any{def.Example})
				}
			}
		}
		props.set(p.prop, v)
		if p.required {
			req = append(req, p.prop)
		}
	}
	if b := o.body; b != nil {
		rb := o.op.RequestBody.Value
		mt := rb.Content[b.mediaType]
		switch {
		case b.merged != nil:
			bs := mt.Schema.Value
			for _, k := range b.merged {
				props.set(k, sc.value(c, bs.Properties[k], 1))
			}
			if b.required {
				for _, r := range bs.Required {
					if slices.Contains(b.merged, r) {
						req = append(req, r)
					}
				}
			}
		default:
			var v any
			switch {
			case b.kind == bodyText || b.kind == bodyRaw:
				v = newObj().set("type", "string")
			case mt.Schema != nil:
				v = sc.value(c, mt.Schema, 1)
			default:
				v = newObj()
			}
			desc := rb.Description
			if desc == "" {
				desc = "The request body (" + b.mediaType + ")."
			}
			props.set(b.prop, annotate(v, desc, false))
			if b.required {
				req = append(req, b.prop)
			}
		}
	}
	root := newObj().set("type", "object").set("properties", props)
	if len(req) > 0 {
		root.set("required", req)
	}
	root.set("additionalProperties", false)
	return sc.document(c, root)
}

// textBytes are the bytes of what a tool holds besides its schemas.
func textBytes(t *tools.Tool) int {
	n := len(t.Name) + len(t.Summary) + len(t.Description) + len(t.Notes) + len(t.Group) + len(t.Route)
	for _, e := range t.Errors {
		n += len(e.Code) + len(e.Description)
	}
	return n
}

// annotate adds a description (when the schema has none) and the
// deprecated mark to a converted schema.
func annotate(v any, desc string, deprecated bool) any {
	desc = strings.TrimSpace(desc)
	if desc == "" && !deprecated {
		return v
	}
	o, ok := v.(*obj)
	if !ok {
		o = newObj().set("allOf", []any{v})
	}
	if desc != "" && !o.has("description") {
		o.set("description", cut(desc))
	}
	if deprecated {
		o.set("deprecated", true)
	}
	return o
}

// outputSchema is the schema of the success response: its JSON schema, a
// string for text, an artifact handle for anything else, null when it
// has no body; nil when the document does not say. It reports whether
// the schema refers to shared definitions.
func outputSchema(sc *schemas, op *openapi3.Operation) (json.RawMessage, bool, error) {
	_, resp := successResponse(op)
	if resp == nil {
		return nil, false, nil
	}
	if len(resp.Content) == 0 {
		return json.RawMessage(`{"type":"null"}`), false, nil
	}
	mt, m := preferredMedia(resp.Content)
	switch mediaKind(mt) {
	case bodyJSON:
		if m.Schema == nil {
			return nil, false, nil
		}
		c := sc.newConv(output)
		return sc.document(c, sc.value(c, m.Schema, 0))
	case bodyText:
		return json.RawMessage(`{"type":"string"}`), false, nil
	}
	return artifactSchema, false, nil
}

// annotationsOf derives hints from the method: GET and HEAD read, PUT and
// DELETE may be repeated, PUT, PATCH and DELETE change what exists.
func annotationsOf(method string) tools.Annotations {
	a := tools.Annotations{OpenWorld: true}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, "QUERY":
		a.ReadOnly, a.Idempotent = true, true
	case http.MethodPut, http.MethodDelete:
		a.Idempotent, a.Destructive = true, true
	case http.MethodPatch:
		a.Destructive = true
	}
	return a
}

// oneLine collapses whitespace.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// summaryOf is the operation's summary, else the first sentence of its
// description, else its method and path.
func summaryOf(o *operation) string {
	if s := oneLine(o.op.Summary); s != "" {
		return shorten(s, 160)
	}
	if d := oneLine(o.op.Description); d != "" {
		if i := strings.Index(d, ". "); i > 0 {
			d = d[:i+1]
		}
		return shorten(d, 160)
	}
	return o.method + " " + o.path
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := s[:n]
	for len(cut) > 0 && cut[len(cut)-1]&0xc0 == 0x80 {
		cut = cut[:len(cut)-1]
	}
	if i := strings.LastIndexByte(cut, ' '); i > n/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:.") + "…"
}

// descriptionOf is the operation's description followed by its method
// and path, which search reads too.
func descriptionOf(o *operation) string {
	d := strings.TrimSpace(o.op.Description)
	line := "`" + o.method + " " + o.path + "`"
	if d == "" {
		return line
	}
	return d + "\n\n" + line
}

// errorsOf documents the error responses the document lists.
func errorsOf(op *openapi3.Operation) []tools.ErrorDoc {
	if op.Responses == nil {
		return nil
	}
	var out []tools.ErrorDoc
	m := op.Responses.Map()
	for _, k := range sortedKeysOf(m) {
		if len(k) != 3 || (k[0] != '4' && k[0] != '5') {
			continue
		}
		desc := ""
		if r := m[k]; r != nil && r.Value != nil && r.Value.Description != nil {
			desc = oneLine(*r.Value.Description)
		}
		if desc == "" {
			desc = http.StatusText(atoi(k))
		}
		if desc == "" {
			desc = "HTTP " + k
		}
		out = append(out, tools.ErrorDoc{Code: "http_" + strings.ToLower(k), Description: shorten(desc, 200)})
	}
	return out
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// notesOf says where the tool comes from in the document and how it
// fails and pages.
func (s *Source) notesOf(d *Document, o *operation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP `%s %s`", o.method, o.path)
	if o.id != "" {
		fmt.Fprintf(&b, ", operationId `%s`", o.id)
	}
	if len(o.op.Tags) > 0 {
		fmt.Fprintf(&b, ", tags %s", strings.Join(o.op.Tags, ", "))
	}
	title := d.Title
	if title == "" {
		title = "the OpenAPI document"
	}
	fmt.Fprintf(&b, ", from %s.", shorten(title, 1<<10))
	if ed := o.op.ExternalDocs; ed != nil && ed.URL != "" {
		fmt.Fprintf(&b, " Docs: %s", ed.URL)
	}
	b.WriteString("\n\nAn HTTP error throws a ToolError with code http_<status> (http_404, http_429, …) whose message holds the API's error body and, when the API sent one, how long to wait before retrying.")
	switch {
	case o.linked:
		fmt.Fprintf(&b, " Its results come in pages: `await tools.paginate(%s.%s, {...}, {max: 500})` follows the Link header's rel=\"next\" and returns the items.", s.category, o.name)
	case o.cursor != nil:
		fmt.Fprintf(&b, " Its results come in pages: `await tools.paginate(%s.%s, {...}, {max: 500})` follows the response's cursor and returns the items.", s.category, o.name)
	}
	return b.String()
}

// groupOperations places each operation in the tree: under its first tag,
// and when a tag holds more than maxGroupSize operations, in a subgroup
// named for the resource its path names (see subgroups). Operations
// without a tag are grouped by resource alone when they are many.
func groupOperations(ops []*operation) {
	byTag := map[string][]*operation{}
	for _, o := range ops {
		tag := ""
		if len(o.op.Tags) > 0 {
			tag = identifier(o.op.Tags[0])
		}
		byTag[tag] = append(byTag[tag], o)
	}
	for tag, list := range byTag {
		sub := map[*operation]string{}
		if len(list) > maxGroupSize {
			sub = subgroups(tag, list)
		}
		for _, o := range list {
			parts := []string{}
			if tag != "" {
				parts = append(parts, tag)
			}
			if s := sub[o]; s != "" {
				parts = append(parts, s)
			}
			o.group = strings.Join(parts, "/")
		}
	}
}

// subgroups names the resource of each operation of a large tag: the
// first static segment of its path that is not the tag's name and not
// common to most of the tag's paths (so /repos/{owner}/{repo}/branches/…
// of the tag repos is "branches"). Subgroups smaller than minSubgroup are
// dropped: their operations stay at the tag's level.
func subgroups(tag string, ops []*operation) map[*operation]string {
	count := map[string]int{}
	segs := make([][]string, len(ops))
	for i, o := range ops {
		seen := map[string]bool{}
		for _, s := range strings.Split(strings.Trim(o.path, "/"), "/") {
			if s == "" || strings.HasPrefix(s, "{") {
				continue
			}
			s = identifier(s)
			if s == "" {
				continue
			}
			segs[i] = append(segs[i], s)
			if !seen[s] {
				seen[s] = true
				count[s]++
			}
		}
	}
	common := func(s string) bool { return s == tag || count[s]*10 >= len(ops)*3 }
	name := map[*operation]string{}
	size := map[string]int{}
	for i, o := range ops {
		for _, s := range segs[i] {
			if !common(s) {
				name[o] = s
				size[s]++
				break
			}
		}
	}
	for o, s := range name {
		if size[s] < minSubgroup {
			delete(name, o)
		}
	}
	return name
}

// baseFor is the URL an operation's requests start from: base_url from
// the configuration, else the operation's or path's servers, else the
// document's, with their variables at their defaults. A relative server
// URL is resolved against the document's URL when it was fetched.
func (s *Source) baseFor(d *Document, o *operation) (*url.URL, error) {
	if s.set.base != nil {
		return s.set.base, nil
	}
	servers := o.servers
	if len(servers) == 0 {
		servers = d.doc.Servers
	}
	if len(servers) == 0 || servers[0] == nil {
		return nil, fmt.Errorf("the document names no server; set base_url in the source's configuration")
	}
	srv := servers[0]
	raw := srv.URL
	for name, v := range srv.Variables {
		if v != nil {
			raw = strings.ReplaceAll(raw, "{"+name+"}", v.Default)
		}
	}
	u, err := url.Parse(raw)
	if err != nil || strings.ContainsAny(u.Host, "{}") {
		return nil, fmt.Errorf("server URL %q is not a URL; set base_url", srv.URL)
	}
	if !u.IsAbs() {
		if s.docURL == nil {
			return nil, fmt.Errorf("server URL %q is relative and the document was read from a file; set base_url", srv.URL)
		}
		u = s.docURL.ResolveReference(u)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("server URL %q is not http or https; set base_url", srv.URL)
	}
	return u, nil
}
