package openapi

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Problem is an operation of a document that could not become a tool, or
// a part of one that was left out, and why.
type Problem struct {
	// Operation is "METHOD /path" and the operationId when there is one.
	Operation string `json:"operation"`
	Message   string `json:"message"`
}

func (p Problem) String() string { return p.Operation + ": " + p.Message }

// operation is one callable operation of a document: how to turn a tool
// call's arguments into a request.
type operation struct {
	id      string // operationId; "" when none
	name    string // the tool's short name
	method  string
	path    string
	servers openapi3.Servers // the operation's or path's own, else nil
	base    *url.URL         // where requests go (baseFor)
	params  []*param
	body    *body
	cursor  *cursor // how the document pages this operation, if it says
	linked  bool    // a success response declares a Link header
	group   string
	// op is the document's operation, kept until the tool is made.
	op *openapi3.Operation
}

func (o *operation) label() string {
	l := o.method + " " + o.path
	if o.id != "" {
		l += " (" + o.id + ")"
	}
	return l
}

// param is one parameter: where it goes and how it is written.
type param struct {
	name     string // as the document names it
	in       string // path, query, header or cookie
	prop     string // the property of the tool's arguments that holds it
	style    string
	explode  bool
	reserved bool // allowReserved: reserved characters are not escaped
	required bool
	json     bool    // content application/json: the value is written as JSON
	maxValue float64 // the schema's maximum, 0 when none (page sizes)
	// def is the document's parameter, kept until the tool is made.
	def *openapi3.Parameter
}

// body is an operation's request body.
type body struct {
	mediaType string
	kind      bodyKind
	required  bool
	// merged lists the properties of the body that are arguments of their
	// own, beside the parameters; nil when the body is the one argument
	// prop.
	merged   []string
	prop     string
	encoding map[string]*openapi3.Encoding
	// binary names the fields of a form or multipart body that are
	// files: sent as parts of their own, with a file name.
	binary map[string]bool
}

type bodyKind int

const (
	bodyJSON bodyKind = iota
	bodyForm
	bodyMultipart
	bodyText
	bodyRaw
)

// mediaKind sorts a media type for bodies and responses.
func mediaKind(mt string) bodyKind {
	base, _, err := mime.ParseMediaType(mt)
	if err != nil {
		base = strings.ToLower(strings.TrimSpace(strings.Split(mt, ";")[0]))
	}
	switch {
	case base == "application/json" || strings.HasSuffix(base, "+json"),
		strings.HasPrefix(base, "application/") && strings.Contains(base, "json"):
		return bodyJSON
	case base == "application/x-www-form-urlencoded":
		return bodyForm
	case base == "multipart/form-data" || base == "multipart/mixed":
		return bodyMultipart
	case strings.HasPrefix(base, "text/") || base == "application/xml" || strings.HasSuffix(base, "+xml") ||
		base == "application/yaml" || base == "application/x-yaml" || base == "application/javascript":
		return bodyText
	}
	return bodyRaw
}

// preferredMedia picks the media type of a body or response: JSON first,
// then forms, then text, then anything.
func preferredMedia(content openapi3.Content) (string, *openapi3.MediaType) {
	keys := sortedKeysOf(content)
	for _, want := range []bodyKind{bodyJSON, bodyForm, bodyMultipart, bodyText, bodyRaw} {
		for _, k := range keys {
			if mediaKind(k) == want && content[k] != nil {
				return k, content[k]
			}
		}
	}
	return "", nil
}

// ignoredHeaders are header parameters OpenAPI says to ignore: the client
// sets them.
var ignoredHeaders = map[string]bool{"accept": true, "content-type": true, "authorization": true}

// collect walks the document's operations in a fixed order (paths sorted,
// then methods in the order of methods), keeps those the settings select,
// at most the settings' bound (maxOps), and prepares each: its name,
// parameters and body. Operations it cannot call are returned as
// problems; over is how many it left out for the bound.
func collect(d *openapi3.T, set *settings) (ops []*operation, problems []Problem, over int) {
	limit := DefaultMaxOperations
	if set != nil && set.maxOps > 0 {
		limit = set.maxOps
	}
	paths := d.Paths.Keys()
	slices.Sort(paths)
	for _, path := range paths {
		item := d.Paths.Value(path)
		if item == nil {
			continue
		}
		all := item.Operations()
		for _, method := range methods {
			op := all[method]
			if op == nil {
				continue
			}
			o := &operation{id: op.OperationID, method: method, path: path, op: op}
			if !selected(o, set) {
				continue
			}
			if len(ops) >= limit {
				over++
				continue
			}
			switch {
			case op.Servers != nil && len(*op.Servers) > 0:
				o.servers = *op.Servers
			case len(item.Servers) > 0:
				o.servers = item.Servers
			}
			if err := o.prepare(item, op); err != nil {
				problems = append(problems, Problem{Operation: o.label(), Message: err.Error()})
				continue
			}
			ops = append(ops, o)
		}
	}
	nameOperations(ops)
	return ops, problems, over
}

// selected applies the configuration's filters.
func selected(o *operation, set *settings) bool {
	if set == nil {
		return true
	}
	if set.readOnly && o.method != http.MethodGet && o.method != http.MethodHead {
		return false
	}
	if set.methods != nil && !set.methods[o.method] {
		return false
	}
	tags := o.op.Tags
	if set.tags != nil && !slices.ContainsFunc(tags, func(t string) bool { return set.tags[t] }) {
		return false
	}
	if slices.ContainsFunc(tags, func(t string) bool { return set.excludeTags[t] }) {
		return false
	}
	name := ToolName(o.id, o.method, o.path)
	match := func(globs []string) bool {
		return slices.ContainsFunc(globs, func(g string) bool { return (o.id != "" && glob(g, o.id)) || glob(g, name) })
	}
	if len(set.include) > 0 && !match(set.include) {
		return false
	}
	return !match(set.exclude)
}

// nameOperations gives each operation its tool name; a name already
// taken gets _2, _3, … in the order of the operations.
func nameOperations(ops []*operation) {
	taken := map[string]bool{"paginate": true} // the source's own tool
	for _, o := range ops {
		base := ToolName(o.id, o.method, o.path)
		n := base
		for i := 2; taken[n]; i++ {
			n = fmt.Sprintf("%s_%d", base, i)
		}
		taken[n] = true
		o.name = n
	}
}

// prepare reads an operation's parameters and body.
func (o *operation) prepare(item *openapi3.PathItem, op *openapi3.Operation) error {
	// Path-level parameters apply unless the operation redefines them.
	var refs []*openapi3.ParameterRef
	own := map[string]bool{}
	for _, r := range op.Parameters {
		if r != nil && r.Value != nil {
			own[r.Value.In+"\x00"+r.Value.Name] = true
		}
	}
	for _, r := range item.Parameters {
		if r != nil && r.Value != nil && !own[r.Value.In+"\x00"+r.Value.Name] {
			refs = append(refs, r)
		}
	}
	refs = append(refs, op.Parameters...)
	props := map[string]bool{}
	for _, r := range refs {
		if r == nil || r.Value == nil {
			return fmt.Errorf("a parameter reference %q does not resolve", refOf(r))
		}
		p := r.Value
		if p.Name == "" {
			return fmt.Errorf("a parameter has no name")
		}
		in := p.In
		switch in {
		case "path", "query", "header", "cookie":
		default:
			return fmt.Errorf("parameter %q: \"in\" is %q, not path, query, header or cookie", p.Name, p.In)
		}
		if in == "header" && ignoredHeaders[strings.ToLower(p.Name)] {
			continue
		}
		pa := &param{name: p.Name, in: in, required: p.Required || in == "path", reserved: p.AllowReserved, def: p}
		pa.style = p.Style
		if pa.style == "" {
			pa.style = map[string]string{"path": "simple", "query": "form", "header": "simple", "cookie": "form"}[in]
		}
		pa.explode = pa.style == "form"
		if p.Explode != nil {
			pa.explode = *p.Explode
		}
		if p.Schema != nil && p.Schema.Value != nil && p.Schema.Value.Max != nil {
			pa.maxValue = *p.Schema.Value.Max
		}
		if p.Schema == nil && len(p.Content) > 0 {
			mt, _ := preferredMedia(p.Content)
			pa.json = mediaKind(mt) == bodyJSON
		}
		pa.prop = p.Name
		if props[pa.prop] {
			pa.prop = p.Name + "_" + in
			for i := 2; props[pa.prop]; i++ {
				pa.prop = fmt.Sprintf("%s_%s%d", p.Name, in, i)
			}
		}
		props[pa.prop] = true
		o.params = append(o.params, pa)
	}
	// Every {name} of the path needs a path parameter.
	for _, name := range templateNames(o.path) {
		if !slices.ContainsFunc(o.params, func(p *param) bool { return p.in == "path" && p.name == name }) {
			return fmt.Errorf("the path names {%s} but no path parameter %q is defined", name, name)
		}
	}
	if rb := op.RequestBody; rb != nil {
		if rb.Value == nil {
			return fmt.Errorf("the request body reference %q does not resolve", rb.Ref)
		}
		mt, m := preferredMedia(rb.Value.Content)
		if m != nil {
			b := &body{mediaType: mt, kind: mediaKind(mt), required: rb.Value.Required, encoding: m.Encoding, binary: map[string]bool{}}
			if m.Schema != nil && m.Schema.Value != nil && (b.kind == bodyMultipart || b.kind == bodyForm) {
				for k, p := range m.Schema.Value.Properties {
					if p == nil || p.Value == nil {
						continue
					}
					v := p.Value
					if v.Items != nil && v.Items.Value != nil && v.Type != nil && v.Type.Is("array") {
						v = v.Items.Value
					}
					enc := m.Encoding[k]
					if v.Format == "binary" || v.ContentMediaType != "" || (enc != nil && enc.ContentType != "" && mediaKind(enc.ContentType) == bodyRaw) {
						b.binary[k] = true
					}
				}
			}
			if mergeable(m.Schema, props) {
				for _, k := range sortedSchemaKeys(m.Schema.Value.Properties) {
					if p := m.Schema.Value.Properties[k]; p != nil && p.Value != nil && p.Value.ReadOnly {
						continue
					}
					b.merged = append(b.merged, k)
					props[k] = true
				}
			} else {
				b.prop = "body"
				for _, alt := range []string{"request_body", "body_"} {
					if !props[b.prop] {
						break
					}
					b.prop = alt
				}
				props[b.prop] = true
			}
			o.body = b
		}
	}
	o.linked, o.cursor = pagination(op)
	return nil
}

func refOf(r *openapi3.ParameterRef) string {
	if r == nil {
		return ""
	}
	return r.Ref
}

// mergeable reports whether a body schema is a plain object whose
// properties can be arguments of their own: it names its properties,
// allows no others and has none named like a parameter.
func mergeable(sr *openapi3.SchemaRef, props map[string]bool) bool {
	if sr == nil || sr.Value == nil {
		return false
	}
	s := sr.Value
	if len(s.Properties) == 0 || len(s.OneOf) > 0 || len(s.AnyOf) > 0 || len(s.AllOf) > 0 || s.Not != nil || s.Discriminator != nil {
		return false
	}
	if s.Type != nil && !s.Type.Is("object") {
		return false
	}
	if s.AdditionalProperties.Schema != nil || (s.AdditionalProperties.Has != nil && *s.AdditionalProperties.Has) || len(s.PatternProperties) > 0 {
		return false
	}
	for k := range s.Properties {
		if props[k] {
			return false
		}
	}
	return true
}

// templateNames returns the names in a path template's braces.
func templateNames(path string) []string {
	var out []string
	for {
		i := strings.IndexByte(path, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(path[i:], '}')
		if j < 0 {
			return out
		}
		out = append(out, path[i+1:i+j])
		path = path[i+j+1:]
	}
}

// successResponse picks the response a successful call most likely gets:
// 200, then 201, 202, 203, 206, 2XX and any other 2xx.
func successResponse(op *openapi3.Operation) (code string, r *openapi3.Response) {
	if op.Responses == nil {
		return "", nil
	}
	m := op.Responses.Map()
	order := []string{"200", "201", "202", "203", "206", "2XX", "2xx"}
	for _, k := range sortedKeysOf(m) {
		if len(k) == 3 && k[0] == '2' && !slices.Contains(order, k) {
			order = append(order, k)
		}
	}
	for _, k := range order {
		if rr := m[k]; rr != nil && rr.Value != nil {
			return k, rr.Value
		}
	}
	return "", nil
}
