package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// Requests that stay open — event streams (a Streamable HTTP GET, a
// 2026-07-28 subscriptions/listen, an SSE connection) and calls in flight
// — each hold a descriptor and some memory of the server for as long as
// the client keeps them. Where tokens or OAuth tell principals apart, one
// principal may hold openPerSession of them for each session it may have
// (sessions_per_principal); all together openTotal, well below a
// process's descriptor limit. Streams together may hold openStreams of
// them and no more: the rest is kept for calls, which end, so that
// principals enough to hold every stream (32 of 256 each by default)
// cannot make every call of everyone 429. Past any of these, a request
// is refused with 429 before it is served.
const (
	openPerSession = 4
	openTotal      = 8192
	openStreams    = openTotal - openTotal/4
)

// openRequests counts the requests open per principal, and the streams
// among them.
type openRequests struct {
	mu          sync.Mutex
	byPrincipal map[string]int
	total       int
	streams     int
	perPrinc    int
}

func newOpenRequests(sessionsPerPrincipal int) *openRequests {
	if sessionsPerPrincipal <= 0 {
		sessionsPerPrincipal = 64 // engine.SessionLimits' default
	}
	return &openRequests{byPrincipal: map[string]int{}, perPrinc: openPerSession * sessionsPerPrincipal}
}

// enter counts a request of principal open, unless a bound is reached;
// the caller calls leave once it is answered. stream says the request is
// an event stream.
func (o *openRequests) enter(principal string, shared, stream bool) (ok bool, msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case shared && o.byPrincipal[principal] >= o.perPrinc:
		return false, fmt.Sprintf("too many requests open at once for this principal (%d: event streams and calls in flight); close some streams or wait for calls to finish", o.perPrinc)
	case o.total >= openTotal:
		return false, fmt.Sprintf("too many requests open at once on this server (%d); retry shortly", openTotal)
	case stream && o.streams >= openStreams:
		return false, fmt.Sprintf("too many event streams open at once on this server (%d; the rest is kept for calls); retry the stream shortly", openStreams)
	}
	o.byPrincipal[principal]++
	o.total++
	if stream {
		o.streams++
	}
	return true, ""
}

func (o *openRequests) leave(principal string, stream bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byPrincipal[principal]--; o.byPrincipal[principal] <= 0 {
		delete(o.byPrincipal, principal)
	}
	o.total--
	if stream {
		o.streams--
	}
}

// bounded serves r through next while it is counted open for its
// principal; shared says principals are told apart, body is r's body as
// read (nil for a request without one).
func (o *openRequests) bounded(w http.ResponseWriter, r *http.Request, body []byte, principal string, shared bool, refused func(), next http.Handler) {
	stream := isStream(r, body)
	ok, msg := o.enter(principal, shared, stream)
	if !ok {
		refused()
		w.Header().Set("Retry-After", "5")
		httpError(w, http.StatusTooManyRequests, msg)
		return
	}
	defer o.leave(principal, stream)
	next.ServeHTTP(w, r)
}

// isStream reports whether r opens an event stream: a GET (Streamable
// HTTP's or SSE's), or a 2026-07-28 subscriptions/listen.
func isStream(r *http.Request, body []byte) bool {
	if r.Method == http.MethodGet {
		return true
	}
	if !bytes.Contains(body, []byte(mcp.MethodSubscriptionsListen)) {
		return false
	}
	var req struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &req) == nil && req.Method == string(mcp.MethodSubscriptionsListen)
}
