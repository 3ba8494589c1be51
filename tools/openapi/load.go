package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oasdiff/yaml"
)

// MaxDocumentBytes is the largest OpenAPI document Parse reads. GitHub's
// REST description, among the largest there are, is 13 MB.
const MaxDocumentBytes = 64 << 20

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
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%w: the document is empty", ErrDocument)
	}
	if trimmed[0] != '{' {
		j, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("%w: neither JSON nor YAML: %s", ErrDocument, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		data = j
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
		if t, err = loader.LoadFromData(data); err != nil {
			return nil, fmt.Errorf("%w: %s", ErrDocument, refProblem(err))
		}
	}
	if t.Paths == nil || t.Paths.Len() == 0 {
		if len(t.Webhooks) > 0 {
			return nil, fmt.Errorf("%w: it has no paths, only webhooks, which the API calls rather than its clients", ErrDocument)
		}
		return nil, fmt.Errorf("%w: it has no paths, so no operations to call", ErrDocument)
	}
	d := &Document{Version: version, doc: t}
	if t.Info != nil {
		d.Title = t.Info.Title
	}
	return d, nil
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
