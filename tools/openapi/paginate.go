package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/codecell/codecell/tools"
)

// Bounds of the paginate tool.
const (
	DefaultPaginateItems = 1000
	MaxPaginateItems     = 10000
	maxPages             = 500
)

// pageSizeParams are the query parameters that set a page's size; the
// paginate tool sets the one an operation has to the most its schema
// allows (or to max), unless the program did.
var pageSizeParams = []string{"per_page", "page_size", "pageSize", "limit", "max_results", "maxResults", "count"}

// paginateHandler calls an operation page after page and returns the
// items of all pages: it follows the Link header's rel="next" (to
// allowed hosts only), else the cursor the document declares, and stops
// at max items, at a page without a next one, or at an error.
func (s *Source) paginateHandler(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var in struct {
		Tool string          `json:"tool"`
		Args json.RawMessage `json:"args"`
		Max  int             `json:"max"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, tools.DecodeError(err)
	}
	name := strings.TrimPrefix(in.Tool, s.category+".")
	s.mu.RLock()
	o := s.ops[name]
	if o == nil {
		// The document's own name for it, as a program may call it.
		for _, op := range s.ops {
			if op.id != "" && op.id == name {
				o = op
				break
			}
		}
	}
	s.mu.RUnlock()
	if o != nil {
		name = o.name
	}
	if o == nil {
		return nil, &tools.Error{Code: tools.CodeUnknownTool, Message: fmt.Sprintf("%s has no operation %q to paginate", s.category, in.Tool)}
	}
	if !o.linked && o.cursor == nil && o.method != http.MethodGet {
		return nil, &tools.Error{Code: tools.CodeInvalidArguments, Message: fmt.Sprintf("%s.%s does not return pages; call it directly", s.category, name)}
	}
	limit := in.Max
	if limit <= 0 {
		limit = DefaultPaginateItems
	}
	limit = min(limit, MaxPaginateItems)
	args := in.Args
	if len(bytes.TrimSpace(args)) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	args, err := withPageSize(o, args, limit)
	if err != nil {
		return nil, err
	}
	tool := s.category + "." + name
	var items []json.RawMessage
	var next *url.URL
	for page := 1; page <= maxPages && len(items) < limit; page++ {
		if next == nil {
			// Each call of the operation is checked as a direct call is.
			if err := s.validate(ctx, tool, args); err != nil {
				return nil, err
			}
		}
		resp, err := s.call(ctx, o, args, next)
		if err != nil {
			return nil, pageError(tool, page, err)
		}
		got, err := itemsOf(resp.body, o.cursor)
		if err != nil {
			return nil, &tools.Error{Code: tools.CodeToolFailed, Message: fmt.Sprintf("%s, page %d: %v", tool, page, err)}
		}
		items = append(items, got[:min(len(got), limit-len(items))]...)
		next = nil
		if link := nextLink(resp.header, resp.url); link != nil {
			next = link
			continue
		}
		if o.cursor == nil || len(got) == 0 {
			break
		}
		cur, u := nextCursor(resp.body, o.cursor, got)
		switch {
		case u != "":
			if next, err = resp.url.Parse(u); err != nil {
				return nil, &tools.Error{Code: tools.CodeToolFailed, Message: fmt.Sprintf("%s, page %d: the next page's URL %q is not a URL", tool, page, u)}
			}
		case cur != "":
			if args, err = setArg(args, o, o.cursor.param, cur); err != nil {
				return nil, err
			}
		default:
			page = maxPages // no next page
		}
	}
	if items == nil {
		items = []json.RawMessage{}
	}
	return json.Marshal(items)
}

// validate checks args against the operation's own input schema, as the
// registry checks a direct call.
func (s *Source) validate(ctx context.Context, tool string, args json.RawMessage) error {
	s.mu.RLock()
	reg := s.reg
	s.mu.RUnlock()
	if reg == nil {
		return nil
	}
	return reg.View(tools.CallerFrom(ctx)).Validate(tool, args)
}

// pageError names the page of a failed call, keeping its code.
func pageError(tool string, page int, err error) error {
	te, ok := err.(*tools.Error)
	if !ok {
		return err
	}
	cp := *te
	cp.Message = fmt.Sprintf("page %d: %s", page, te.Message)
	if cp.Tool == "" {
		cp.Tool = tool
	}
	return &cp
}

// withPageSize sets the operation's page-size parameter, unless args do,
// to the most its schema allows, or to limit when that is smaller.
func withPageSize(o *operation, args json.RawMessage, limit int) (json.RawMessage, error) {
	for _, name := range pageSizeParams {
		for _, p := range o.params {
			if p.in != "query" || p.name != name || p.maxValue <= 0 {
				continue
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(args, &m); err != nil {
				return nil, &tools.Error{Code: tools.CodeInvalidArguments, Message: "args must be an object: " + err.Error()}
			}
			if _, set := m[p.prop]; set {
				return args, nil
			}
			m[p.prop] = json.RawMessage(fmt.Sprint(min(int(p.maxValue), limit)))
			return json.Marshal(m)
		}
	}
	return args, nil
}

// setArg sets the argument that carries the query parameter name.
func setArg(args json.RawMessage, o *operation, name, value string) (json.RawMessage, error) {
	prop := name
	for _, p := range o.params {
		if p.in == "query" && p.name == name {
			prop = p.prop
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, &tools.Error{Code: tools.CodeInvalidArguments, Message: "args must be an object: " + err.Error()}
	}
	v, _ := json.Marshal(value)
	m[prop] = v
	return json.Marshal(m)
}

// itemNames are the properties that commonly hold a page's items.
var itemNames = []string{"items", "data", "results", "values", "entries", "records", "nodes", "list"}

// itemsOf returns the items of a page: the body when it is an array; else
// the array at the cursor's items path; else the body's one array
// property, or the first of itemNames it has.
func itemsOf(body []byte, c *cursor) ([]json.RawMessage, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, nil
	}
	if body[0] == '[' {
		var items []json.RawMessage
		err := json.Unmarshal(body, &items)
		return items, err
	}
	if body[0] != '{' {
		return nil, fmt.Errorf("the page is not a JSON array or object")
	}
	if c != nil && len(c.items) > 0 {
		v, ok := at(body, c.items)
		if !ok {
			return nil, nil
		}
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, fmt.Errorf("%s is not an array", strings.Join(c.items, "."))
		}
		return items, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	var arrays []string
	for k, v := range m {
		if v = bytes.TrimSpace(v); len(v) > 0 && v[0] == '[' {
			arrays = append(arrays, k)
		}
	}
	pick := ""
	switch {
	case len(arrays) == 1:
		pick = arrays[0]
	default:
		for _, n := range itemNames {
			if _, ok := m[n]; ok && strings.HasPrefix(strings.TrimSpace(string(m[n])), "[") {
				pick = n
				break
			}
		}
	}
	if pick == "" {
		return nil, fmt.Errorf("the page has no one list of items (it has %d arrays); call the operation directly", len(arrays))
	}
	var items []json.RawMessage
	err := json.Unmarshal(m[pick], &items)
	return items, err
}

// at returns the value at a path of member names.
func at(body []byte, path []string) (json.RawMessage, bool) {
	cur := json.RawMessage(body)
	for _, k := range path {
		var m map[string]json.RawMessage
		if json.Unmarshal(cur, &m) != nil {
			return nil, false
		}
		v, ok := m[k]
		if !ok {
			return nil, false
		}
		cur = v
	}
	return cur, true
}

// nextCursor reads the next page's cursor, or the next page's URL, from a
// page; both empty when there is no next page.
func nextCursor(body []byte, c *cursor, items []json.RawMessage) (cur, nextURL string) {
	str := func(path []string) string {
		v, ok := at(body, path)
		if !ok {
			return ""
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
		var n json.Number
		if json.Unmarshal(v, &n) == nil {
			return n.String()
		}
		return ""
	}
	switch {
	case len(c.nextURL) > 0:
		return "", str(c.nextURL)
	case c.lastID:
		more, ok := at(body, c.hasMore)
		if !ok || strings.TrimSpace(string(more)) != "true" {
			return "", ""
		}
		var last struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(items[len(items)-1], &last) != nil || len(last.ID) == 0 {
			return "", ""
		}
		var id string
		if json.Unmarshal(last.ID, &id) != nil {
			id = string(last.ID)
		}
		return id, ""
	}
	return str(c.next), ""
}

// nextLink returns the target of a Link header's rel="next", resolved
// against the page's URL (RFC 8288).
func nextLink(h http.Header, base *url.URL) *url.URL {
	for _, v := range h.Values("Link") {
		for _, link := range splitLinks(v) {
			target, params, ok := strings.Cut(link, ">")
			target = strings.TrimSpace(target)
			if !ok || !strings.HasPrefix(target, "<") {
				continue
			}
			target = target[1:]
			for _, p := range strings.Split(params, ";") {
				k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
				if !strings.EqualFold(strings.TrimSpace(k), "rel") {
					continue
				}
				for _, rel := range strings.Fields(strings.Trim(strings.TrimSpace(val), `"`)) {
					if strings.EqualFold(rel, "next") {
						u, err := base.Parse(target)
						if err != nil {
							return nil
						}
						return u
					}
				}
			}
		}
	}
	return nil
}

// splitLinks splits a Link header's value at the commas between links,
// not those inside <…> or quotes.
func splitLinks(v string) []string {
	var out []string
	depth, quoted, start := 0, false, 0
	for i, r := range v {
		switch {
		case r == '"':
			quoted = !quoted
		case quoted:
		case r == '<':
			depth++
		case r == '>':
			depth--
		case r == ',' && depth == 0:
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	return append(out, v[start:])
}
