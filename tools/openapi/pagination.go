package openapi

import (
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// cursor says how a document pages an operation through its body: the
// query parameter that takes a cursor, and where the response holds the
// next one.
type cursor struct {
	param string
	// next is the path to the next cursor in the response body; empty
	// with lastID.
	next []string
	// nextURL is the path to the URL of the next page in the body.
	nextURL []string
	// lastID pages Stripe's way: the cursor is the id of the last item,
	// while hasMore says there are more.
	lastID  bool
	hasMore []string
	// items is the path to the page's items; empty means found at run
	// time (see itemsOf).
	items []string
}

// cursorPairs are the query parameters that take a cursor, each with the
// response properties that commonly hold the next one.
var cursorPairs = []struct {
	param string
	next  []string
}{
	{"cursor", []string{"next_cursor", "nextCursor", "cursor", "next"}},
	{"page_token", []string{"next_page_token"}},
	{"pageToken", []string{"nextPageToken"}},
	{"next_token", []string{"next_token"}},
	{"nextToken", []string{"nextToken"}},
	{"continuation_token", []string{"continuation_token", "next_continuation_token"}},
	{"continuationToken", []string{"continuationToken", "nextContinuationToken"}},
	{"pagination_token", []string{"next_token", "pagination_token"}},
	{"after", []string{"end_cursor", "endCursor", "after", "next_cursor"}},
	{"marker", []string{"next_marker", "nextMarker"}},
}

// pagination finds how an operation pages: whether its success response
// declares a Link header (GitHub's rel="next"), and the cursor its body
// carries — from the x-speakeasy-pagination extension when the document
// has one, else from the names of its query parameters and response
// properties (cursorPairs, and Stripe's starting_after with has_more).
func pagination(op *openapi3.Operation) (linked bool, c *cursor) {
	_, resp := successResponse(op)
	if resp == nil {
		return false, nil
	}
	for h := range resp.Headers {
		if strings.EqualFold(h, "Link") {
			linked = true
		}
	}
	var query []string
	for _, r := range op.Parameters {
		if r != nil && r.Value != nil && r.Value.In == "query" {
			query = append(query, r.Value.Name)
		}
	}
	if c := speakeasy(op, query); c != nil {
		return linked, c
	}
	_, mt := preferredMedia(resp.Content)
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return linked, nil
	}
	props := mt.Schema.Value.Properties
	find := func(names []string) []string {
		for _, n := range names {
			if props[n] != nil {
				return []string{n}
			}
		}
		// One level down: meta.next_cursor, response_metadata.next_cursor.
		for _, k := range sortedSchemaKeys(props) {
			if p := props[k]; p != nil && p.Value != nil {
				for _, n := range names {
					if p.Value.Properties[n] != nil {
						return []string{k, n}
					}
				}
			}
		}
		return nil
	}
	for _, pair := range cursorPairs {
		if !slices.Contains(query, pair.param) {
			continue
		}
		if next := find(pair.next); next != nil {
			return linked, &cursor{param: pair.param, next: next}
		}
	}
	if slices.Contains(query, "starting_after") && props["has_more"] != nil && props["data"] != nil {
		return linked, &cursor{param: "starting_after", lastID: true, hasMore: []string{"has_more"}, items: []string{"data"}}
	}
	return linked, nil
}

// speakeasy reads the x-speakeasy-pagination extension: type cursor,
// with an input of type cursor among the parameters and outputs
// nextCursor and results as simple JSONPaths ($.a.b); or type url, with
// outputs nextUrl.
func speakeasy(op *openapi3.Operation, query []string) *cursor {
	ext, ok := op.Extensions["x-speakeasy-pagination"].(map[string]any)
	if !ok {
		return nil
	}
	outputs, _ := ext["outputs"].(map[string]any)
	results := jsonPath(outputs["results"])
	switch ext["type"] {
	case "cursor":
		inputs, _ := ext["inputs"].([]any)
		for _, in := range inputs {
			m, _ := in.(map[string]any)
			name, _ := m["name"].(string)
			if m["type"] == "cursor" && m["in"] == "parameters" && slices.Contains(query, name) {
				if next := jsonPath(outputs["nextCursor"]); next != nil {
					return &cursor{param: name, next: next, items: results}
				}
			}
		}
	case "url":
		if next := jsonPath(outputs["nextUrl"]); next != nil {
			return &cursor{nextURL: next, items: results}
		}
	}
	return nil
}

// jsonPath reads a JSONPath of plain member names, such as
// "$.meta.next_cursor"; anything else gives nil.
func jsonPath(v any) []string {
	s, _ := v.(string)
	rest, ok := strings.CutPrefix(s, "$.")
	if !ok || rest == "" {
		return nil
	}
	parts := strings.Split(rest, ".")
	for _, p := range parts {
		if p == "" || strings.ContainsAny(p, "[]*()?@ ") {
			return nil
		}
	}
	return parts
}
