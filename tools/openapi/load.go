package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/codecell/codecell/tools"
	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
)

// MaxDocumentBytes is the largest OpenAPI document Parse reads. GitHub's
// REST description, among the largest there are, is 13 MB.
const MaxDocumentBytes = 64 << 20

// MaxDocumentValues is the most JSON values (objects, arrays, strings,
// numbers, …) an OpenAPI document may hold. A document is decoded whole,
// and what it decodes into is in proportion to its values, not its
// bytes: 60 MB of [{},{},…] under an x- extension took the server to
// 2 GiB (issue 19, attack9 D5). Real descriptions hold 27–50 bytes a
// value: GitHub's 13 MB about 258,000 values, Microsoft Graph's beta
// (47 MB, among the largest there are) 1.53 million.
const MaxDocumentValues = 2 << 20

// ErrDocument is wrapped by every error Parse returns for a document it
// cannot use: the message names the problem and, where it can, where in
// the document it is.
var ErrDocument = errors.New("invalid OpenAPI document")

// Document is a parsed OpenAPI document, held as OpenAPI 3 whatever
// version it was written in (Swagger 2.0 is converted).
type Document struct {
	// Version is the version the document declares: "2.0", "3.0.3",
	// "3.1.0", ….
	Version string
	// Title is info.title.
	Title string
	doc   *openapi3.T
	size  int // the document's bytes as UTF-8 (see toolBudget)
}

// Parse reads an OpenAPI document, JSON or YAML: OpenAPI 3.0 or 3.1, or
// Swagger 2.0, which it converts to OpenAPI 3. References must stay
// within the document (a reference to another file or URL is refused:
// bundle the document first). Every error wraps ErrDocument and names the
// problem; a document that makes the parser fail in any other way is
// refused as well, never a panic.
func Parse(data []byte) (doc *Document, err error) {
	if len(data) > MaxDocumentBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than the %d this reads", ErrDocument, len(data), MaxDocumentBytes)
	}
	defer func() {
		if p := recover(); p != nil {
			doc, err = nil, fmt.Errorf("%w: the parser failed on it (%v); check that every $ref points at an object of the right kind", ErrDocument, p)
		}
	}()
	if data, err = utf8Text(data); err != nil {
		return nil, err
	}
	size := len(data)
	if size > MaxDocumentBytes { // UTF-16 may grow by half as UTF-8
		return nil, fmt.Errorf("%w: %d bytes as UTF-8, more than the %d this reads", ErrDocument, len(data), MaxDocumentBytes)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%w: the document is empty", ErrDocument)
	}
	if trimmed[0] != '{' {
		// YAML is counted before it is parsed, from above: a value of a
		// block collection takes a line, one of a flow collection a
		// comma or a bracket.
		if n := tools.JSONValues(data, MaxDocumentValues) + bytes.Count(data, []byte("\n")); n > MaxDocumentValues {
			return nil, tooManyValues()
		}
		if yamlNodes(data, maxYAMLNodes) > maxYAMLNodes {
			return nil, tooManyYAMLNodes()
		}
		if yamlTagDirective(data) {
			return nil, fmt.Errorf("%w: it declares a YAML tag handle (%%TAG), which codecell does not read: its prefix would be copied into every node that uses it. Write the tags out, or convert the document to JSON", ErrDocument)
		}
		j, err := yamlToJSON(data)
		if err != nil {
			return nil, err
		}
		if len(j) > MaxDocumentBytes {
			return nil, fmt.Errorf("%w: as JSON it is %d bytes, more than the %d this reads", ErrDocument, len(j), MaxDocumentBytes)
		}
		data = j
	}
	if tools.JSONValues(data, MaxDocumentValues) > MaxDocumentValues {
		return nil, tooManyValues()
	}
	var head struct {
		Swagger any `json:"swagger"`
		OpenAPI any `json:"openapi"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrDocument, jsonProblem(data, err))
	}
	swagger, _ := head.Swagger.(string)
	version, _ := head.OpenAPI.(string)
	loader := openapi3.NewLoader()
	loader.Context = context.Background()
	loader.IsExternalRefsAllowed = false
	var t *openapi3.T
	switch {
	case head.Swagger != nil:
		if swagger != "2.0" {
			return nil, fmt.Errorf("%w: swagger version %s is not supported; Swagger 2.0, OpenAPI 3.0 and 3.1 are", ErrDocument, describe(head.Swagger))
		}
		var d2 openapi2.T
		if err := json.Unmarshal(data, &d2); err != nil {
			return nil, fmt.Errorf("%w: %s", ErrDocument, jsonProblem(data, err))
		}
		if t, err = openapi2conv.ToV3WithLoader(&d2, loader, nil); err != nil {
			return nil, fmt.Errorf("%w: Swagger 2.0: %s", ErrDocument, refProblem(err))
		}
		version = "2.0"
	case head.OpenAPI == nil:
		return nil, fmt.Errorf("%w: no \"openapi\" or \"swagger\" field says which version it is", ErrDocument)
	case !strings.HasPrefix(version, "3.0") && !strings.HasPrefix(version, "3.1"):
		return nil, fmt.Errorf("%w: openapi version %s is not supported; OpenAPI 3.0, 3.1 and Swagger 2.0 are", ErrDocument, describe(head.OpenAPI))
	default:
		// The lean decoder reads most documents; kin-openapi, part by
		// part (decode3) or whole, the rest, and reports what is wrong.
		if t, err = decodeLean(data); err == nil {
			break
		}
		if t, err = decode3(data); err != nil {
			// What encoding/json says of the whole, where it can, as
			// kin-openapi's LoadFromData tries first. LoadFromData then
			// decodes the same text again as YAML: a node tree of a few
			// hundred bytes a value, and yaml.v3's decoder, which keeps
			// an error string for each pair of equal keys of an object
			// (issue 19, attack26 T1) — and which read none of 2,758 real
			// descriptions that encoding/json refused.
			t = &openapi3.T{}
			if err := json.Unmarshal(data, t); err != nil {
				return nil, fmt.Errorf("%w: %s", ErrDocument, jsonProblem(data, err))
			}
		}
		if err = loader.ResolveRefsIn(t, nil); err != nil {
			return nil, fmt.Errorf("%w: %s", ErrDocument, refProblem(err))
		}
	}
	if t.Paths == nil || t.Paths.Len() == 0 {
		if len(t.Webhooks) > 0 {
			return nil, fmt.Errorf("%w: it has no paths, only webhooks, which the API calls rather than its clients", ErrDocument)
		}
		return nil, fmt.Errorf("%w: it has no paths, so no operations to call", ErrDocument)
	}
	d := &Document{Version: version, doc: t, size: size}
	if t.Info != nil {
		d.Title = t.Info.Title
	}
	return d, nil
}

// tooManyValues is the error of a document of more than
// MaxDocumentValues values.
func tooManyYAMLNodes() error {
	return fmt.Errorf("%w: as YAML it may make more than %d pairs of nodes as it is parsed (counted before, from the commas, brackets, colons, dashes, question marks and comments that may start one, since the parser's memory follows them); the largest real API descriptions written as YAML count about 1.2 million. Convert it to JSON, which is counted exactly, or remove what codecell does not need (x- extensions, examples, comments)", ErrDocument, maxYAMLNodes)
}

func tooManyValues() error {
	return fmt.Errorf("%w: it holds more than %d JSON values (objects, arrays, strings, numbers), the most a document may hold; the largest real API descriptions hold about 1.5 million. Remove what codecell does not need (x- extensions, examples) from the document", ErrDocument, MaxDocumentValues)
}

// describe quotes a version as the document wrote it.
func describe(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// jsonProblem says what is wrong with a document the JSON decoder
// refused, with the line and column of a syntax error.
func jsonProblem(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := position(data, se.Offset)
		return fmt.Sprintf("not valid JSON at line %d, column %d: %s", line, col, se.Error())
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := te.Field
		if where == "" {
			where = "the document"
		}
		return fmt.Sprintf("%s: got a JSON %s, want %s", where, te.Value, te.Type)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func position(data []byte, off int64) (line, col int) {
	line, col = 1, 1
	for i := int64(0); i < off && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

// refProblem rewords the loader's errors about references.
func refProblem(err error) string {
	msg := err.Error()
	if strings.Contains(msg, "encountered disallowed external reference") {
		return msg + " (references to other files or URLs are not followed: bundle the document into one file first)"
	}
	return msg
}

// decode3 decodes an OpenAPI 3 document into kin-openapi's model, as its
// Loader.LoadFromData does before resolving references, with the same
// decoder for each part — but each path item and each component on its
// own, on as many goroutines as there are CPUs. kin-openapi decodes every
// level twice, the second time whole into a map for its extensions, so
// the document's top level, its components and its paths cost a pass
// over almost all of it each (and its paths a marshalling more); GitHub's
// 13 MB took 2.3 s. A part that fails to decode makes decode3 fail; the
// caller then decodes with kin-openapi, whose error it reports.
func decode3(data []byte) (*openapi3.T, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, err
	}
	t := &openapi3.T{}
	var jobs []func() error
	// field finds a known key as encoding/json does: the exact name, else
	// one that differs in case only.
	field := func(name string) (json.RawMessage, bool) {
		if raw, ok := top[name]; ok {
			return raw, true
		}
		for k, raw := range top {
			if strings.EqualFold(k, name) {
				return raw, true
			}
		}
		return nil, false
	}
	known := map[string]bool{}
	for _, f := range []struct {
		name string
		dst  any
	}{
		{"openapi", &t.OpenAPI}, {"info", &t.Info}, {"security", &t.Security}, {"servers", &t.Servers},
		{"tags", &t.Tags}, {"externalDocs", &t.ExternalDocs}, {"webhooks", &t.Webhooks}, {"jsonSchemaDialect", &t.JSONSchemaDialect},
	} {
		known[f.name] = true
		if raw, ok := field(f.name); ok {
			if err := json.Unmarshal(raw, f.dst); err != nil {
				return nil, err
			}
		}
	}
	known["paths"], known["components"] = true, true
	if raw, ok := field("paths"); ok && !isNull(raw) {
		var items map[string]json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, err
		}
		t.Paths = openapi3.NewPathsWithCapacity(len(items))
		t.Paths.Extensions = map[string]any{}
		decoded := make([]*openapi3.PathItem, 0, len(items))
		keys := make([]string, 0, len(items))
		for k, item := range items {
			if strings.HasPrefix(k, "x-") {
				var v any
				if err := json.Unmarshal(item, &v); err != nil {
					return nil, err
				}
				t.Paths.Extensions[k] = v
				continue
			}
			pi := &openapi3.PathItem{}
			keys, decoded = append(keys, k), append(decoded, pi)
			jobs = append(jobs, func() error { return pi.UnmarshalJSON(item) })
		}
		defer func() {
			for i, k := range keys {
				t.Paths.Set(k, decoded[i])
			}
		}()
	}
	if raw, ok := field("components"); ok && !isNull(raw) {
		c, more, err := decodeComponents(raw)
		if err != nil {
			return nil, err
		}
		t.Components = c
		jobs = append(jobs, more...)
	}
	for k, raw := range top {
		if !known[k] {
			if t.Extensions == nil {
				t.Extensions = map[string]any{}
			}
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, err
			}
			t.Extensions[k] = v
		}
	}
	if err := runJobs(jobs); err != nil {
		return nil, err
	}
	return t, nil
}

// decodeComponents decodes the components object's sections, and returns
// the decoding of each component as a job.
func decodeComponents(raw json.RawMessage) (*openapi3.Components, []func() error, error) {
	var sections map[string]json.RawMessage
	if err := json.Unmarshal(raw, &sections); err != nil {
		return nil, nil, err
	}
	c := &openapi3.Components{}
	var jobs []func() error
	var errs []error
	section := func(name string, decode func(json.RawMessage) ([]func() error, error)) {
		raw, ok := sections[name]
		if !ok {
			for k, r := range sections {
				if strings.EqualFold(k, name) {
					raw, ok = r, true
				}
			}
		}
		if ok {
			js, err := decode(raw)
			errs = append(errs, err)
			jobs = append(jobs, js...)
		}
	}
	section("schemas", func(r json.RawMessage) ([]func() error, error) { return decodeEach(r, &c.Schemas) })
	section("parameters", func(r json.RawMessage) ([]func() error, error) { return decodeEach(r, &c.Parameters) })
	section("headers", func(r json.RawMessage) ([]func() error, error) { return decodeEach(r, &c.Headers) })
	section("requestBodies", func(r json.RawMessage) ([]func() error, error) { return decodeEach(r, &c.RequestBodies) })
	section("responses", func(r json.RawMessage) ([]func() error, error) { return decodeEach(r, &c.Responses) })
	section("securitySchemes", func(r json.RawMessage) ([]func() error, error) { return decodeEach(r, &c.SecuritySchemes) })
	section("examples", func(r json.RawMessage) ([]func() error, error) { return decodeEach(r, &c.Examples) })
	section("links", func(r json.RawMessage) ([]func() error, error) { return decodeEach(r, &c.Links) })
	section("callbacks", func(r json.RawMessage) ([]func() error, error) { return decodeEach(r, &c.Callbacks) })
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	for k, r := range sections {
		switch k {
		case "schemas", "parameters", "headers", "requestBodies", "responses", "securitySchemes", "examples", "links", "callbacks":
			continue
		}
		if c.Extensions == nil {
			c.Extensions = map[string]any{}
		}
		var v any
		if err := json.Unmarshal(r, &v); err != nil {
			return nil, nil, err
		}
		c.Extensions[k] = v
	}
	return c, jobs, nil
}

// decodeEach fills *dst, a map of components, with a job per component
// that decodes it as encoding/json would decode it in the map: null is a
// nil component.
func decodeEach[V any, M ~map[string]*V](raw json.RawMessage, dst *M) ([]func() error, error) {
	var items map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, err
	}
	if items == nil {
		return nil, nil
	}
	m := make(M, len(items))
	*dst = m
	jobs := make([]func() error, 0, len(items))
	for k, item := range items {
		if isNull(item) {
			m[k] = nil
			continue
		}
		v := new(V)
		m[k] = v
		jobs = append(jobs, func() error { return json.Unmarshal(item, v) })
	}
	return jobs, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// runJobs runs jobs on as many goroutines as there are CPUs and returns
// the first error.
func runJobs(jobs []func() error) error {
	var next atomic.Int64
	var first atomic.Pointer[error]
	var wg sync.WaitGroup
	for range min(len(jobs), runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(jobs) || first.Load() != nil {
					return
				}
				if err := jobs[i](); err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if e := first.Load(); e != nil {
		return *e
	}
	return nil
}
