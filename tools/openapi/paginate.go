package openapi

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/codecell/codecell/tools"
)

// Pagination. The paginate tool is a helper (tools.Tool.Gated): each call
// fetches one page, as a call of the operation itself through the gate
// (tools.CallThrough) — checked, approved, planned, memoised, observed by
// the data-flow rules and audited as any call of it — and returns that
// page's items with a sealed continuation for the next. tools.paginate in
// a program follows the continuations and gathers the items, so pages go
// to the program one at a time and never pile up in the server. A
// pagination is bounded by items, pages and bytes; the continuation
// carries the count, and is sealed so that a program can neither forge
// the next page's URL nor reset its counts.

// Bounds of the paginate tool.
const (
	DefaultPaginateItems = 1000
	MaxPaginateItems     = 10000
	// DefaultPaginateBytes bounds the bytes of the pages one pagination
	// hands the program (as the API sent them); MaxPaginateBytes is the
	// most a program may ask for. The run's heap bounds what it holds.
	DefaultPaginateBytes = 8 << 20
	MaxPaginateBytes     = 256 << 20
	maxPages             = 500
)

// CodePaginationLimit is the error of a pagination whose pages reach its
// byte bound.
const CodePaginationLimit = "pagination_limit"

// pageSizeParams are the query parameters that set a page's size; the
// paginate tool sets the one an operation has to the most its schema
// allows (or to max), unless the program did.
var pageSizeParams = []string{"per_page", "page_size", "pageSize", "limit", "max_results", "maxResults", "count"}

// paginateTool is the source's tool behind tools.paginate. Its text
// counts no operations: a caller's toolset may hide some, which do not
// exist for it (issue 19, attack27 T3).
func (s *Source) paginateTool() tools.Tool {
	in := fmt.Sprintf(`{"type":"object","properties":{`+
		`"tool":{"type":"string","description":"The short name of an operation of %[1]s whose results come in pages, such as the one tools.paginate was given."},`+
		`"args":{"type":"object","description":"The operation's arguments, the same for every page."},`+
		`"max":{"type":"integer","minimum":1,"maximum":%[2]d,"default":%[3]d,"description":"The most items of the whole pagination."},`+
		`"max_bytes":{"type":"integer","minimum":1,"maximum":%[4]d,"default":%[5]d,"description":"The most bytes of pages of the whole pagination."},`+
		`"next":{"type":"string","description":"The continuation the previous page returned; absent for the first page."}},`+
		`"required":["tool"],"additionalProperties":false}`,
		s.category, MaxPaginateItems, DefaultPaginateItems, MaxPaginateBytes, DefaultPaginateBytes)
	return tools.Tool{
		Name:    s.category + "." + PaginateTool,
		Summary: fmt.Sprintf("Fetch one page of a list operation of %s, with the continuation to the next (what tools.paginate follows).", s.category),
		Description: fmt.Sprintf("Fetches the next page of a list operation of %s — following the Link header (rel=\"next\") or the cursor the document declares — and returns its items and, unless it was the last, next: the continuation to pass back for the page after. "+
			"A program writes `await tools.paginate(%s.<tool>, {...}, {max: 500, maxBytes: 8e6})`, which follows the continuations and returns every item. "+
			"Each page is a call of the operation itself: approvals, data-flow rules, dry runs and memoisation apply to it page by page. The page size is raised to the most the operation's schema allows (per_page, limit, …) when it states a maximum; otherwise pass it in args for fewer requests.", s.category, s.category),
		InputSchema:  json.RawMessage(in),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"items":{"type":"array","description":"The page's items."},"next":{"type":"string","description":"The continuation to the next page; absent after the last."},"page":{"type":"integer"},"bytes":{"type":"integer","description":"Bytes of the pages so far."},"planned":{"type":"object","description":"In a dry run, the placeholder of the recorded call of an operation that is not read-only: there are no pages."}}}`),
		Annotations:  tools.Annotations{ReadOnly: true, Idempotent: true, OpenWorld: true},
		Errors: []tools.ErrorDoc{
			{Code: CodePaginationLimit, Description: "The pages reached the pagination's max_bytes; ask for fewer items or more bytes."},
			{Code: tools.CodeInvalidArguments, Description: "The operation does not page, its arguments do not fit, or next is not a continuation of this operation."},
		},
		Gated:   true,
		Handler: s.paginateHandler,
	}
}

// pageState is a pagination between two pages: what the continuation
// holds, sealed.
type pageState struct {
	Tool     string `json:"t"`
	Page     int    `json:"p"`
	Items    int    `json:"i"`
	Bytes    int64  `json:"b"`
	Max      int    `json:"m"`
	MaxBytes int64  `json:"mb"`
	Next     string `json:"n,omitempty"` // the next page's URL
	Cursor   string `json:"c,omitempty"` // or the cursor to send for it
}

// pageSealer seals continuations under a key of the source's own, made
// when the source is: a continuation serves only the server that made it,
// for the operation and the principal it was made for.
type pageSealer struct {
	aead cipher.AEAD
}

func newPageSealer() (*pageSealer, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &pageSealer{aead: a}, nil
}

func (p *pageSealer) seal(st pageState, bound string) (string, error) {
	plain, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, p.aead.NonceSize(), p.aead.NonceSize()+len(plain)+p.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(p.aead.Seal(nonce, nonce, plain, []byte(bound))), nil
}

func (p *pageSealer) open(next, bound, tool string) (pageState, bool) {
	box, err := base64.RawURLEncoding.DecodeString(next)
	if err != nil || len(box) < p.aead.NonceSize() {
		return pageState{}, false
	}
	plain, err := p.aead.Open(nil, box[:p.aead.NonceSize()], box[p.aead.NonceSize():], []byte(bound))
	if err != nil {
		return pageState{}, false
	}
	var st pageState
	if json.Unmarshal(plain, &st) != nil || st.Tool != tool {
		return pageState{}, false
	}
	return st, true
}

// pageOut is a page as the paginate tool returns it.
type pageOut struct {
	Items   []json.RawMessage `json:"items"`
	Next    string            `json:"next,omitempty"`
	Page    int               `json:"page"`
	Bytes   int64             `json:"bytes"`
	Planned json.RawMessage   `json:"planned,omitempty"`
}

// paginateHandler fetches one page of an operation, through the gate, and
// returns its items and the continuation to the next: the Link header's
// rel="next" (to allowed hosts only), else the cursor the document
// declares. A pagination ends at max items, at a page without a next
// one, or after maxPages pages; its pages may not pass max_bytes.
func (s *Source) paginateHandler(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var in struct {
		Tool     string          `json:"tool"`
		Args     json.RawMessage `json:"args"`
		Max      int             `json:"max"`
		MaxBytes int64           `json:"max_bytes"`
		Next     string          `json:"next"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, tools.DecodeError(err)
	}
	o := s.operationNamed(strings.TrimPrefix(in.Tool, s.category+"."))
	if o != nil && !s.visible(ctx, o) {
		// An operation the caller's toolset hides does not exist for
		// it, here too: the same answer as a name of nothing, before
		// anything about the operation is told (issue 19, attack27 T3).
		o = nil
	}
	if o == nil {
		return nil, &tools.Error{Code: tools.CodeUnknownTool, Message: fmt.Sprintf("%s has no operation %q to paginate", s.category, in.Tool)}
	}
	if !o.linked && o.cursor == nil && o.method != http.MethodGet {
		return nil, &tools.Error{Code: tools.CodeInvalidArguments, Message: fmt.Sprintf("%s.%s does not return pages; call it directly", s.category, o.name)}
	}
	tool := s.category + "." + o.name
	bound := tool + "\x00" + tools.CallerFrom(ctx).Principal
	st := pageState{Tool: tool, Max: in.Max, MaxBytes: in.MaxBytes}
	if in.Next != "" {
		var ok bool
		if st, ok = s.pages.open(in.Next, bound, tool); !ok {
			return nil, &tools.Error{Code: tools.CodeInvalidArguments, Message: fmt.Sprintf("next is not a continuation of a pagination of %s by this server for this caller: pass back the next of the previous page as it came", tool)}
		}
	}
	if st.Max <= 0 {
		st.Max = DefaultPaginateItems
	}
	st.Max = min(st.Max, MaxPaginateItems)
	if st.MaxBytes <= 0 {
		st.MaxBytes = DefaultPaginateBytes
	}
	st.MaxBytes = min(st.MaxBytes, MaxPaginateBytes)

	args := in.Args
	if len(bytes.TrimSpace(args)) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var err error
	if st.Cursor != "" {
		if args, err = setArg(args, o, o.cursor.param, st.Cursor); err != nil {
			return nil, err
		}
	}
	if args, err = withPageSize(o, args, st.Max-st.Items); err != nil {
		return nil, err
	}
	page := st.Page + 1
	out, err := tools.CallThrough(tools.WithPage(ctx, tools.PageRequest{Tool: tool, Next: st.Next}), tool, args)
	if err != nil {
		return nil, pageError(tool, page, err)
	}
	var pr tools.PageResult
	if err := json.Unmarshal(out, &pr); err != nil || pr.Result == nil {
		// A dry run recorded the call of an operation that is not
		// read-only instead of making it: there is no page.
		var placeholder struct {
			Planned bool `json:"planned"`
		}
		if json.Unmarshal(out, &placeholder) == nil && placeholder.Planned {
			return json.Marshal(pageOut{Items: []json.RawMessage{}, Page: page, Planned: out})
		}
		return nil, &tools.Error{Code: tools.CodeToolFailed, Message: fmt.Sprintf("%s, page %d: the operation did not answer with a page", tool, page)}
	}
	st.Bytes += int64(len(pr.Result))
	if st.Bytes > st.MaxBytes {
		return nil, &tools.Error{Code: CodePaginationLimit, Tool: s.category + "." + PaginateTool,
			Message: fmt.Sprintf("the pages of %s reached %d bytes at page %d, more than the %d this pagination may hand the program (maxBytes); ask for fewer items ({max}), narrow the arguments, or raise maxBytes up to %d — the run's heap (sandbox.memory_limit_mib) bounds what a program can hold", tool, st.Bytes, page, st.MaxBytes, MaxPaginateBytes)}
	}
	got, err := itemsOf(pr.Result, o.cursor)
	if err != nil {
		return nil, &tools.Error{Code: tools.CodeToolFailed, Message: fmt.Sprintf("%s, page %d: %v", tool, page, err)}
	}
	items := got[:min(len(got), st.Max-st.Items)]
	st.Items += len(items)
	st.Page = page
	res := pageOut{Items: items, Page: page, Bytes: st.Bytes}
	if items == nil {
		res.Items = []json.RawMessage{}
	}
	if st.Items < st.Max && page < maxPages && s.nextPage(&st, o, pr, got) {
		if res.Next, err = s.pages.seal(st, bound); err != nil {
			return nil, fmt.Errorf("seal the continuation: %w", err)
		}
	}
	return json.Marshal(res)
}

// nextPage sets where the page after pr is, and reports whether there is
// one: the URL the response gave, else the cursor in its body.
func (s *Source) nextPage(st *pageState, o *operation, pr tools.PageResult, items []json.RawMessage) bool {
	st.Next, st.Cursor = "", ""
	if pr.Next != "" {
		st.Next = pr.Next
		return true
	}
	if o.cursor == nil || len(items) == 0 || len(o.cursor.nextURL) > 0 {
		return false
	}
	st.Cursor, _ = nextCursor(pr.Result, o.cursor, items)
	return st.Cursor != ""
}

// visible reports whether the caller of ctx sees the operation o: its
// tool is in the caller's view of the registry (its toolset). Without a
// registry (a source not opened in one) every operation is.
func (s *Source) visible(ctx context.Context, o *operation) bool {
	if s.reg == nil {
		return true
	}
	_, ok := s.reg.View(tools.CallerFrom(ctx)).Get(s.category + "." + o.name)
	return ok
}

// operationNamed returns the operation of a short name, or of the
// document's own name for it (its operationId), or nil.
func (s *Source) operationNamed(name string) *operation {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if o := s.ops[name]; o != nil {
		return o
	}
	for _, op := range s.ops {
		if op.id != "" && op.id == name {
			return op
		}
	}
	return nil
}

// page answers a call of o asked for a page (tools.PageRequest): the
// request goes to the page's URL when the previous page gave one, and the
// answer is the page's envelope, with the URL of the next page when the
// response says where it is (its Link header, or the URL the document
// says its body holds).
func (s *Source) page(ctx context.Context, o *operation, args json.RawMessage, p tools.PageRequest) (json.RawMessage, error) {
	var next *url.URL
	if p.Next != "" {
		u, err := url.Parse(p.Next)
		if err != nil || !u.IsAbs() {
			return nil, &tools.Error{Code: tools.CodeToolFailed, Message: fmt.Sprintf("the next page's URL %q is not a URL", p.Next)}
		}
		next = u
	}
	resp, err := s.call(ctx, o, args, next)
	if err != nil {
		return nil, err
	}
	body := bytes.TrimSpace(resp.body)
	if len(body) == 0 {
		body = []byte("null")
	}
	if !json.Valid(body) {
		return nil, &tools.Error{Code: tools.CodeToolFailed, Message: fmt.Sprintf("%s %s answered with a page that is not JSON (%s)", o.method, o.path, resp.mime)}
	}
	pr := tools.PageResult{Result: body}
	if link := nextLink(resp.header, resp.url); link != nil {
		pr.Next = link.String()
	} else if o.cursor != nil && len(o.cursor.nextURL) > 0 {
		if _, u := nextCursor(body, o.cursor, nil); u != "" {
			nu, err := resp.url.Parse(u)
			if err != nil {
				return nil, &tools.Error{Code: tools.CodeToolFailed, Message: fmt.Sprintf("the next page's URL %q is not a URL", u)}
			}
			pr.Next = nu.String()
		}
	}
	return json.Marshal(pr)
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
			m[p.prop] = json.RawMessage(fmt.Sprint(max(1, min(int(p.maxValue), limit))))
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
	if len(body) == 0 || string(body) == "null" {
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
		if !ok || strings.TrimSpace(string(more)) != "true" || len(items) == 0 {
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
