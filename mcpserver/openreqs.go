package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/codecell/codecell/tools"
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
	bodyBytes   map[string]int64 // bytes of bodies held, by principal
	bodyTotal   int64
}

func newOpenRequests(sessionsPerPrincipal int) *openRequests {
	if sessionsPerPrincipal <= 0 {
		sessionsPerPrincipal = 64 // engine.SessionLimits' default
	}
	return &openRequests{byPrincipal: map[string]int{}, bodyBytes: map[string]int64{}, perPrinc: openPerSession * sessionsPerPrincipal}
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

// Bodies of requests being read and served are held in the server's
// memory, each up to limits.max_body_bytes. A principal's bodies together
// hold at most bodiesPerPrincipal of those, every principal's
// bodiesTotal; a request whose body does not fit is refused with 429
// before a byte of it is read.
const (
	bodiesPerPrincipal = 8
	bodiesTotal        = 64
)

// A request body may hold at most maxJSONValues JSON values, and each
// is counted as decodedValueBytes more of its principal's body bytes
// while the request is served: the measured cost of a small value
// decoded twice (mcp-go's request, then the engine's arguments) was
// about 230 bytes.
const (
	maxJSONValues     = 1 << 16
	decodedValueBytes = 256
)

// reserveBody takes n bytes of body for principal, unless a bound is
// reached; the caller gives them back with giveBody once the request is
// answered. maxBody is limits.max_body_bytes.
func (o *openRequests) reserveBody(principal string, shared bool, n, maxBody int64) (ok bool, msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case shared && o.bodyBytes[principal]+n > bodiesPerPrincipal*maxBody:
		return false, fmt.Sprintf("too many request bytes being read at once for this principal (%d bytes: %d bodies of limits.max_body_bytes); wait for requests to finish", bodiesPerPrincipal*maxBody, bodiesPerPrincipal)
	case o.bodyTotal+n > bodiesTotal*maxBody:
		return false, fmt.Sprintf("too many request bytes being read at once on this server (%d bytes); retry shortly", bodiesTotal*maxBody)
	}
	o.bodyBytes[principal] += n
	o.bodyTotal += n
	return true, ""
}

func (o *openRequests) giveBody(principal string, n int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.bodyBytes[principal] -= n; o.bodyBytes[principal] <= 0 {
		delete(o.bodyBytes, principal)
	}
	o.bodyTotal -= n
}

// streamed counts a request already counted open as a stream, once its
// body shows it is one, unless the streams' bound is reached.
func (o *openRequests) streamed() (ok bool, msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.streams >= openStreams {
		return false, fmt.Sprintf("too many event streams open at once on this server (%d; the rest is kept for calls); retry the stream shortly", openStreams)
	}
	o.streams++
	return true, ""
}

// bounded serves r through next while it is counted open for its
// principal; shared says principals are told apart. The request is
// counted before its body is read, and the body's bytes (its
// Content-Length, or maxBody for a body of unknown length) are reserved
// before the first is read and given back once it is answered, so that
// uploads in progress are within the bounds as calls are. refused is
// told why a request was refused (a Refused metric's reason).
func (o *openRequests) bounded(w http.ResponseWriter, r *http.Request, principal string, shared bool, maxBody int64, refused func(reason string), next http.Handler) {
	tooMany := func(reason, msg string) {
		refused(reason)
		w.Header().Set("Retry-After", "5")
		httpError(w, http.StatusTooManyRequests, msg)
	}
	stream := r.Method == http.MethodGet
	ok, msg := o.enter(principal, shared, stream)
	if !ok {
		tooMany("open_requests", msg)
		return
	}
	defer func() { o.leave(principal, stream) }()
	var body []byte
	if r.Body != nil && r.Method == http.MethodPost {
		if r.ContentLength > maxBody {
			refused("body_size")
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is over the limit of %d", r.ContentLength, maxBody))
			return
		}
		held := maxBody
		if r.ContentLength >= 0 {
			held = r.ContentLength
		}
		if ok, msg := o.reserveBody(principal, shared, held, maxBody); !ok {
			// The body is not read: the connection cannot serve another
			// request.
			w.Header().Set("Connection", "close")
			tooMany("body_bytes", msg)
			return
		}
		defer func() { o.giveBody(principal, held) }()
		var err error
		body, err = readAll(http.MaxBytesReader(w, r.Body, maxBody), r.ContentLength)
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			refused("body_size")
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is over the limit of %d bytes", maxBody))
			return
		}
		if err != nil {
			// A body that stopped arriving (the read timeout) leaves
			// the connection unusable: close it.
			w.Header().Set("Connection", "close")
			httpError(w, http.StatusBadRequest, "read request body: "+err.Error())
			return
		}
		// A body of unknown length holds what it turned out to be.
		o.giveBody(principal, held-int64(len(body)))
		held = int64(len(body))
		// What a body decodes into is held too, and a JSON value takes
		// far more decoded than its bytes ("{}," is three bytes and
		// hundreds once mcp-go and the engine have decoded it): a body
		// of too many values is refused, and the rest reserve their
		// decoded size beside their bytes.
		values := tools.JSONValues(body, maxJSONValues)
		if values > maxJSONValues {
			refused("body_values")
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body holds more than %d JSON values (objects, arrays, strings, numbers); send bulk data as one string, or in several calls", maxJSONValues))
			return
		}
		decoded := int64(values) * decodedValueBytes
		if ok, msg := o.reserveBody(principal, shared, decoded, maxBody); !ok {
			tooMany("body_bytes", msg)
			return
		}
		defer func() { o.giveBody(principal, decoded) }()
		r.Body = newHeldBody(body)
	}
	if !stream && isStream(r, body) {
		if ok, msg := o.streamed(); !ok {
			tooMany("open_requests", msg)
			return
		}
		stream = true
	}
	next.ServeHTTP(w, r)
}

// isStream reports whether r opens an event stream: a GET (Streamable
// HTTP's or SSE's), or a 2026-07-28 subscriptions/listen — its method
// decoded, as mcp-go reads it: JSON may spell any character as an escape
// (attack10 E5). A body with neither the method's bytes nor an escape
// cannot name it.
func isStream(r *http.Request, body []byte) bool {
	if r.Method == http.MethodGet {
		return true
	}
	if !bytes.Contains(body, []byte(mcp.MethodSubscriptionsListen)) && bytes.IndexByte(body, '\\') < 0 {
		return false
	}
	var req struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &req) == nil && req.Method == string(mcp.MethodSubscriptionsListen)
}
