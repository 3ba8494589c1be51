package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/tools/search"
)

// The progressive tool disclosure extension (experimental): the draft of
// SEP-2636 as it stood under the name "Progressive Tool Disclosure" —
// tools/catalog (each tool's name, summary, tags, annotations and the
// hash of its whole definition; a query ranks with search_tools' search)
// and tools/describe (whole definitions, by name). It is a view of
// tools/list: the same tools for the same caller, described the same way,
// so a client that adopts it learns codecell's catalogue without loading
// every schema. mcp-go knows neither method, so the transports answer
// them before mcp-go sees them (extensionMethod).
//
// What tools/list holds depends on --expose: in code mode the three
// code-mode tools; with direct or both, every catalogue tool the caller
// reaches, which is where a catalogue pays.

// ExtensionProgressiveDisclosure is the extension's identifier in the
// server's capabilities.extensions. The draft's own capability,
// tools.progressiveDisclosure, has no place in mcp-go's capability type.
const ExtensionProgressiveDisclosure = "io.github.codecell/progressive-tool-disclosure"

// The extension's methods and limits.
const (
	MethodToolsCatalog  = "tools/catalog"
	MethodToolsDescribe = "tools/describe"
	// catalogPage is how many entries a tools/catalog page holds.
	catalogPage = 100
	// catalogQueryLimit is the most catalogue tools a query keeps, best
	// first: enough to choose from, few enough to narrow.
	catalogQueryLimit = 20
	// maxDescribe is the most names one tools/describe may ask for.
	maxDescribe = 100
	// codeResourceNotAvailable is the draft's error for names the caller
	// cannot see (unknown or not allowed: the same answer).
	codeResourceNotAvailable = -32002
)

// extensionCapability is what the server advertises of the extension.
func extensionCapability() server.ServerOption {
	return server.WithExtensions(map[string]any{ExtensionProgressiveDisclosure: map[string]any{
		"methods": []string{MethodToolsCatalog, MethodToolsDescribe},
		"query":   true,
		"status":  "experimental",
	}})
}

// catalogEntry is one tool in tools/catalog.
type catalogEntry struct {
	Name        string              `json:"name"`
	Title       string              `json:"title,omitempty"`
	Summary     string              `json:"summary"`
	Tags        []string            `json:"tags,omitempty"`
	SchemaHash  string              `json:"schemaHash"`
	Annotations *mcp.ToolAnnotation `json:"annotations,omitempty"`
}

// rpcRequest is a JSON-RPC request as the extension reads it.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// isExtensionMethod reports whether body is a request of the extension.
// A body that does not hold either method's name is not decoded: every
// tools/call passes here, and decoding it was 2% of a loaded server's CPU.
func isExtensionMethod(body []byte) (rpcRequest, bool) {
	var r rpcRequest
	if !bytes.Contains(body, []byte(MethodToolsCatalog)) && !bytes.Contains(body, []byte(MethodToolsDescribe)) || json.Unmarshal(body, &r) != nil {
		return r, false
	}
	return r, r.Method == MethodToolsCatalog || r.Method == MethodToolsDescribe
}

// extensionMethod answers a request of the extension for the caller of
// ctx. It returns nil for a notification.
func (s *Server) extensionMethod(ctx context.Context, r rpcRequest) []byte {
	if len(r.ID) == 0 || string(r.ID) == "null" {
		return nil
	}
	var modern bool
	var meta struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(r.Params, &meta) == nil {
		v, _ := meta.Meta["io.modelcontextprotocol/protocolVersion"].(string)
		modern = mcp.IsModernProtocol(v)
	}
	var result any
	var rerr *rpcErr
	switch r.Method {
	case MethodToolsCatalog:
		result, rerr = s.toolsCatalog(ctx, r.Params, modern)
	case MethodToolsDescribe:
		result, rerr = s.toolsDescribe(ctx, r.Params, modern)
	}
	var out any
	if rerr != nil {
		out = map[string]any{"jsonrpc": "2.0", "id": r.ID, "error": rerr}
	} else {
		out = map[string]any{"jsonrpc": "2.0", "id": r.ID, "result": result}
	}
	b, _ := json.Marshal(out)
	return b
}

// rpcErr is a JSON-RPC error.
type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// listedTools are the tools tools/list gives the caller of ctx, by name.
func (s *Server) listedTools(ctx context.Context) []mcp.Tool {
	all := s.mcp.ListTools()
	list := make([]mcp.Tool, 0, len(all))
	for _, st := range all {
		list = append(list, st.Tool)
	}
	slices.SortFunc(list, func(a, b mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return s.filterDirectTools(ctx, list)
}

func (s *Server) toolsCatalog(ctx context.Context, params json.RawMessage, modern bool) (any, *rpcErr) {
	var p struct {
		Cursor string `json:"cursor"`
		Query  string `json:"query"`
	}
	if len(params) > 0 && json.Unmarshal(params, &p) != nil {
		return nil, &rpcErr{Code: mcp.INVALID_PARAMS, Message: "tools/catalog: params must be {cursor?, query?}"}
	}
	if n := utf8.RuneCountInString(p.Query); n > search.MaxQueryLength {
		return nil, &rpcErr{Code: mcp.INVALID_PARAMS, Message: fmt.Sprintf("tools/catalog: the query is %d characters, over the limit of %d: say the task in a few words", n, search.MaxQueryLength)}
	}
	list := s.listedTools(ctx)
	if q := strings.TrimSpace(p.Query); q != "" {
		list = s.queryCatalog(ctx, q, list)
	}
	start := 0
	if p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 || n > len(list) {
			return nil, &rpcErr{Code: mcp.INVALID_PARAMS, Message: "tools/catalog: invalid cursor; list again from the start"}
		}
		start = n
	}
	end := min(start+catalogPage, len(list))
	entries := make([]catalogEntry, 0, end-start)
	for _, t := range list[start:end] {
		entries = append(entries, s.catalogEntry(t))
	}
	res := map[string]any{"tools": entries}
	if end < len(list) {
		res["nextCursor"] = strconv.Itoa(end)
	}
	if modern {
		res["resultType"] = mcp.ResultTypeComplete
		res["ttlMs"] = ttlSources.Milliseconds()
		res["cacheScope"] = s.listScope(s.cfg.Expose != ExposeCode)
	}
	return res, nil
}

// queryCatalog keeps the tools of list that match q, best first: the
// catalogue's by search_tools' ranking, codecell's own by the words of
// their name and description.
func (s *Server) queryCatalog(ctx context.Context, q string, list []mcp.Tool) []mcp.Tool {
	byName := map[string]mcp.Tool{}
	for _, t := range list {
		byName[t.Name] = t
	}
	var out []mcp.Tool
	seen := map[string]bool{}
	hits, err := s.search.Search(search.Query{Caller: s.caller(ctx), Text: q, Limit: catalogQueryLimit, Detail: search.DetailName})
	if err == nil {
		for _, h := range hits {
			if t, ok := byName[DirectName(h.Name)]; ok && !seen[t.Name] {
				out = append(out, t)
				seen[t.Name] = true
			}
		}
	}
	words := strings.Fields(strings.ToLower(q))
	for _, t := range list {
		if seen[t.Name] || isDirect(t) {
			continue
		}
		text := strings.ToLower(t.Name + " " + t.Description)
		for _, w := range words {
			if strings.Contains(text, w) {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// isDirect reports whether t is a catalogue tool listed in direct mode
// (its title is its qualified name).
func isDirect(t mcp.Tool) bool {
	return t.Annotations.Title != "" && DirectName(t.Annotations.Title) == t.Name
}

// catalogEntry describes t for tools/catalog.
func (s *Server) catalogEntry(t mcp.Tool) catalogEntry {
	e := catalogEntry{Name: t.Name, Title: t.Title, SchemaHash: schemaHash(t)}
	ann := t.Annotations
	if ann != (mcp.ToolAnnotation{}) {
		e.Annotations = &ann
	}
	if isDirect(t) {
		if ct, ok := s.reg.Get(t.Annotations.Title); ok {
			e.Summary = ct.Summary
			e.Tags = []string{ct.Category()}
			if ct.Annotations.Untrusted {
				e.Tags = append(e.Tags, "annotations-untrusted")
			}
		}
	} else {
		e.Tags = []string{"codecell"}
	}
	if e.Summary == "" {
		e.Summary = firstSentence(t.Description, 200)
	}
	return e
}

// firstSentence is the first sentence of text, at most n bytes.
func firstSentence(text string, n int) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	if i := strings.Index(line, ". "); i >= 0 {
		line = line[:i+1]
	}
	if len(line) > n {
		line = strings.ToValidUTF8(line[:n-3], "") + "..."
	}
	return line
}

func (s *Server) toolsDescribe(ctx context.Context, params json.RawMessage, modern bool) (any, *rpcErr) {
	var p struct {
		Names []string `json:"names"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.Names) == 0 {
		return nil, &rpcErr{Code: mcp.INVALID_PARAMS, Message: "tools/describe: params must be {names: [one or more tool names]}"}
	}
	if len(p.Names) > maxDescribe {
		return nil, &rpcErr{Code: mcp.INVALID_PARAMS, Message: fmt.Sprintf("tools/describe: %d names, more than %d in one request (RequestTooLarge); ask in batches", len(p.Names), maxDescribe)}
	}
	byName := map[string]mcp.Tool{}
	for _, t := range s.listedTools(ctx) {
		byName[t.Name] = t
	}
	out := make([]mcp.Tool, 0, len(p.Names))
	var unknown []string
	for _, n := range p.Names {
		t, ok := byName[n]
		if !ok {
			unknown = append(unknown, n)
			continue
		}
		out = append(out, t)
	}
	if len(unknown) > 0 {
		return nil, &rpcErr{Code: codeResourceNotAvailable, Message: "tools/describe: tools not available: " + strings.Join(unknown, ", "),
			Data: map[string]any{"unknownNames": unknown}}
	}
	res := map[string]any{"tools": out}
	if modern {
		res["resultType"] = mcp.ResultTypeComplete
	}
	return res, nil
}

// schemaHash is the hex SHA-256 of t's canonical JSON: object keys
// sorted, no insignificant space, numbers in their shortest form, no
// HTML escaping (RFC 8785, but for U+2028 and U+2029, which Go's encoder
// escapes).
func schemaHash(t mcp.Tool) string {
	sum := sha256.Sum256(jcsJSON(t))
	return hex.EncodeToString(sum[:])
}

// jcsJSON encodes v canonically (see schemaHash): unlike memoKey's
// canonicalJSON, numbers are in their shortest form, not as written.
func jcsJSON(v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var tree any
	if json.Unmarshal(raw, &tree) != nil {
		return raw
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(tree) != nil { // maps encode with sorted keys
		return raw
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// extensionHTTP answers the extension's requests on Streamable HTTP and
// passes every other request to next. A request of protocol 2026-07-28
// must name its method in Mcp-Method, as for every other method.
func (s *Server) extensionHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := readBody(r)
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		req, ok := isExtensionMethod(body)
		tasks26, ok26 := isTasks26Method(body)
		if ok26 {
			req, ok = tasks26, true
		}
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if v := r.Header.Get(mcp.HeaderProtocolVersion); (ok26 || mcp.IsModernProtocol(v)) && r.Header.Get(mcp.HeaderMethod) != req.Method {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": rpcErr{Code: mcp.HEADER_MISMATCH, Message: "Mcp-Method header does not match the body's method " + req.Method}})
			w.Write(b)
			return
		}
		var out []byte
		if ok26 { // the 2026 tasks extension's methods (tasks2026.go)
			if bad := nameMismatch(r.Header, req); bad != nil {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				w.Write(bad)
				return
			}
			out = s.answer26(r.Context(), req)
		} else {
			out = s.extensionMethod(r.Context(), req)
		}
		if out == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
	})
}

// extensionSSE answers the extension's requests posted to an SSE
// session's message endpoint on the session's stream, as mcp-go answers
// the others.
func (s *Server) extensionSSE(sse *server.SSEServer, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("sessionId")
		if r.Method != http.MethodPost || id == "" || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := readBody(r)
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		req, ok := isExtensionMethod(body)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if out := s.extensionMethod(r.Context(), req); out != nil {
			if err := sse.SendEventToSession(id, json.RawMessage(out)); err != nil {
				httpError(w, http.StatusNotFound, "unknown or ended session; connect again")
				return
			}
		}
		w.WriteHeader(http.StatusAccepted)
	})
}

// readBody returns r's body, which the guard holds in memory, and puts it
// back, whole, for the next handler: the bytes the guard read, not a copy
// of them.
func readBody(r *http.Request) ([]byte, error) {
	if hb, ok := r.Body.(*heldBody); ok {
		hb.Reset(hb.data)
		return hb.data, nil
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(r.Body); err != nil {
		return nil, err
	}
	r.Body.Close()
	r.Body = newHeldBody(b.Bytes())
	return b.Bytes(), nil
}

// heldBody is a request body read into memory, which the handlers in
// front of mcp-go look at (readBody) before it reads it.
type heldBody struct {
	*bytes.Reader
	data []byte
}

func newHeldBody(data []byte) *heldBody { return &heldBody{bytes.NewReader(data), data} }

func (*heldBody) Close() error { return nil }
