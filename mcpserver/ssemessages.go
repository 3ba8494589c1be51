package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/tools"
)

// The SSE transport answers a POST to /message with 202 at once and
// handles the message on a goroutine of mcp-go's, which queues the answer
// for the session's event stream and, when the stream's queue is full,
// waits for room as long as the stream is open, holding the message. A
// client that stops reading its stream so kept any number of messages —
// posted one at a time, each 4 MiB — in the server's memory (issue 19,
// fourth round, A6). So a request posted to a session stays counted open
// for its principal, with its body's bytes, until its answer is written
// to the stream or the stream ends; and a stream that cannot take an
// event within sseWriteTimeout is ended.
const sseWriteTimeout = 30 * time.Second

// sseMessages follows the requests posted to each SSE session until
// their answers are written to its stream.
//
// The stream tells an answer from another only by its id, which the
// client chose: a request is followed under its id as mcp-go will write
// it in the answer (idKey: 1.0 and 1e0 are answered as 1), and a request
// whose id is already awaiting its answer on the session is refused —
// JSON-RPC ids are unique among a session's requests in flight. So an
// answer releases its own request's reservation, never another's (issue
// 19, attack8 C2: a quick request reusing a slow one's id released the
// slow one's bytes, and an id spelled 1.0 stayed held while its answer
// released the request with id 1).
//
// A request is released once its answer is written, or will never be
// (refused, or its stream ended) — and, if mcp-go began handling it, once
// that handling is over too: mcp-go handles a posted message on a
// goroutine of its own with a context the stream's end does not cancel
// (sse.go handleMessage: context.WithoutCancel), which goes on after the
// stream ended. Released at the stream's end, 4 × 60 reads of an 8 MB
// file posted to sessions whose streams closed at once were each read,
// filtered and encoded held by nothing, and the next session's were
// admitted at once: the server grew by 5 GiB (issue 19, attack22 P3). A
// request mcp-go had not begun when its stream ended is refused when it
// would begin (sseHooks), and a resource or prompt handler's context ends
// with the stream (untilStreamEnds).
type sseMessages struct {
	mu sync.Mutex
	// bySession holds, for each open stream, the requests awaiting their
	// answers.
	bySession map[string]*sseFollowed
}

// sseFollowed is what sseMessages follows of one session's stream.
type sseFollowed struct {
	ended context.Context // ends with the stream
	end   context.CancelFunc
	byID  map[string]*awaited // the request awaiting its answer under each id
}

// awaited is a request posted to a session, until its answer is written
// and mcp-go's handling of it is over.
type awaited struct {
	release func()
	ended   context.Context // its session's stream's

	mu       sync.Mutex
	settled  bool // its answer was written, or never will be
	begun    bool // mcp-go began handling it (begin)
	finished bool // mcp-go's handling of it is over: the answer queued or dropped
}

// errStreamEnded refuses a request whose SSE stream ended before mcp-go
// began handling it: its answer would have nowhere to go.
var errStreamEnded = errors.New("the SSE stream this request was posted to has ended: open a new one (GET " + PathSSE + ") and post the request again")

// begin is called when mcp-go begins handling the request, with the
// context it handles it in, which ends once that handling is over (the
// answer queued for the stream or dropped). A request whose answer will
// never be written is refused.
func (a *awaited) begin(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.settled {
		return errStreamEnded
	}
	a.begun = true
	context.AfterFunc(ctx, a.finish)
	return nil
}

// finish notes that mcp-go's handling of the request is over.
func (a *awaited) finish() {
	a.mu.Lock()
	a.finished = true
	now := a.settled
	a.mu.Unlock()
	if now {
		a.release()
	}
}

// answered reports whether the request was settled.
func (a *awaited) answered() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.settled
}

// settle notes that the request's answer was written, or never will be.
func (a *awaited) settle() {
	a.mu.Lock()
	a.settled = true
	now := !a.begun || a.finished
	a.mu.Unlock()
	if now {
		a.release()
	}
}

func newSSEMessages() *sseMessages {
	return &sseMessages{bySession: map[string]*sseFollowed{}}
}

// opened starts following the requests of session, whose stream is open.
func (m *sseMessages) opened(session string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bySession[session] == nil {
		ended, end := context.WithCancel(context.Background())
		m.bySession[session] = &sseFollowed{ended: ended, end: end, byID: map[string]*awaited{}}
	}
}

// Outcomes of sseMessages.await.
const (
	awaiting = iota // followed until its answer is written
	noStream        // the session has no open stream
	idInUse         // another request with this id awaits its answer
)

// await follows request id of session, with release, until it is
// released. A request whose answer is written but whose handling is not
// yet over does not keep its id: the client may use it again.
func (m *sseMessages) await(session, id string, release func()) (*awaited, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.bySession[session]
	switch {
	case f == nil:
		return nil, noStream
	case f.byID[id] != nil && !f.byID[id].answered():
		return nil, idInUse
	}
	a := &awaited{ended: f.ended}
	a.release = func() {
		release()
		m.forget(session, id, a)
	}
	f.byID[id] = a
	return a, awaiting
}

// forget stops following a, request id of session, released.
func (m *sseMessages) forget(session, id string, a *awaited) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f := m.bySession[session]; f != nil && f.byID[id] == a {
		delete(f.byID, id)
	}
}

// answered settles request id of session, whose answer is written.
func (m *sseMessages) answered(session, id string) {
	m.mu.Lock()
	var a *awaited
	if f := m.bySession[session]; f != nil {
		a = f.byID[id]
	}
	m.mu.Unlock()
	if a != nil {
		a.settle()
	}
}

// dropped settles a, a request of session under id that will not be
// answered, unless its answer settled it already.
func (m *sseMessages) dropped(session, id string, a *awaited) {
	m.mu.Lock()
	f := m.bySession[session]
	mine := f != nil && f.byID[id] == a
	m.mu.Unlock()
	if mine {
		a.settle()
	}
}

// closed settles every request of session, whose stream ended, and ends
// the contexts of their handlers (untilStreamEnds).
func (m *sseMessages) closed(session string) {
	m.mu.Lock()
	f := m.bySession[session]
	delete(m.bySession, session)
	m.mu.Unlock()
	if f == nil {
		return
	}
	f.end()
	for _, a := range f.byID {
		a.settle()
	}
}

// ssePostedKey holds, in the context of a request posted to an SSE
// session, its *awaited.
type ssePostedKey struct{}

// sseHooks tell sseMessages when mcp-go begins handling a request posted
// to an SSE session, and refuse one whose stream has ended.
func sseHooks(h *server.Hooks) {
	h.AddOnRequestInitialization(func(ctx context.Context, _ any, _ any) error {
		if a, ok := ctx.Value(ssePostedKey{}).(*awaited); ok {
			return a.begin(ctx)
		}
		return nil
	})
}

// untilStreamEnds returns ctx, ended too when the stream of the SSE
// session its request was posted to ends; stop lets go of it. Outside
// such a request it returns ctx.
func untilStreamEnds(ctx context.Context) (_ context.Context, stop func()) {
	a, ok := ctx.Value(ssePostedKey{}).(*awaited)
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(a.ended, func() { cancel(errStreamEnded) })
	return ctx, func() { unhook(); cancel(nil) }
}

// sseStream wraps the handler of an SSE event stream (GET /sse): it
// learns the session's id from the endpoint event, releases each request
// whose answer it writes, and ends the stream when an event cannot be
// written within sseWriteTimeout.
func (s *Server) sseStream(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		sw := &sseWriter{ResponseWriter: w, rc: http.NewResponseController(w), msgs: s.sseMsgs, cancel: cancel}
		defer func() {
			sw.rc.SetWriteDeadline(time.Time{})
			if sw.session != "" {
				s.sseMsgs.closed(sw.session)
			}
		}()
		next.ServeHTTP(sw, r.WithContext(context.WithValue(ctx, sseStreamKey{}, cancel)))
	})
}

// sseWriter is an SSE stream's writer (sseStream).
type sseWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	msgs    *sseMessages
	cancel  context.CancelFunc
	session string
}

func (w *sseWriter) Write(p []byte) (int, error) {
	w.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	n, err := w.ResponseWriter.Write(p)
	if err != nil {
		w.cancel() // the client does not read: end the stream
		return n, err
	}
	if w.session == "" {
		if d, ok := bytes.CutPrefix(p, []byte("event: endpoint\ndata: ")); ok {
			if u, err := url.Parse(string(bytes.TrimSpace(d))); err == nil && u.Query().Get("sessionId") != "" {
				w.session = u.Query().Get("sessionId")
				w.msgs.opened(w.session)
			}
		}
	} else if id, ok := answerID(p); ok {
		w.msgs.answered(w.session, id)
	}
	return n, nil
}

func (w *sseWriter) Flush() {
	w.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	if err := w.rc.Flush(); err != nil {
		w.cancel()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *sseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// answerID returns the id of the JSON-RPC answer an event carries, as
// mcp-go writes one ({"jsonrpc":…,"id":…,"result"|"error":…}), reading
// no further than its id, as idKey names it.
func answerID(event []byte) (string, bool) {
	data, ok := bytes.CutPrefix(event, []byte("event: message\ndata: "))
	if !ok {
		return "", false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	id, hasID := "", false
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch k {
		case "id":
			var v any
			if dec.Decode(&v) != nil {
				return "", false
			}
			id, hasID = idKey(v), true
		case "result", "error":
			return id, hasID
		case "method":
			return "", false
		default:
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return "", false
			}
		}
	}
	return "", false
}

// idKey is a JSON-RPC id, decoded as encoding/json decodes into any, as
// a key: a string's value, or a number's value as mcp-go answers it (it
// decodes ids as float64s too, so 1, 1.0 and 1e0 are one id), kept
// apart; "" for any other value.
func idKey(v any) string {
	switch v := v.(type) {
	case string:
		return "s:" + v
	case float64:
		return "n:" + strconv.FormatFloat(v, 'g', -1, 64)
	}
	return ""
}

// postedRequest reads a message posted to a session as mcp-go will: the
// first JSON value of the body (what follows it is ignored), a request
// when it has an id and no result. It returns the request's idKey, or
// "" for what mcp-go answers with no id or not at all (a notification,
// an answer to the server, a body it cannot parse); ok is false for a
// request whose id is neither a string nor a number.
func postedRequest(body []byte) (id string, ok bool) {
	var raw json.RawMessage
	if json.NewDecoder(bytes.NewReader(body)).Decode(&raw) != nil {
		return "", true
	}
	var msg struct {
		ID     any `json:"id"`
		Result any `json:"result"`
	}
	if json.Unmarshal(raw, &msg) != nil || msg.ID == nil || msg.Result != nil {
		return "", true
	}
	id = idKey(msg.ID)
	return id, id != ""
}

// sseMessage wraps the SSE message endpoint (POST /message): a request
// posted to a session is counted open for its principal, with its body's
// bytes, until its answer is written to the session's stream (sseStream)
// or the stream ends, and mcp-go's handling of it is over — not only
// until the 202.
func (s *Server) sseMessage(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		session := r.URL.Query().Get("sessionId")
		if r.Method != http.MethodPost || session == "" || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := readBody(r)
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		id, ok := postedRequest(body)
		if !ok {
			httpError(w, http.StatusBadRequest, "a request's id must be a string or a number (JSON-RPC 2.0)")
			return
		}
		if id == "" { // a notification, or an answer to the server
			next.ServeHTTP(w, r)
			return
		}
		principal := s.owners.principalOf(r)
		shared, maxBody := s.authRequired(), s.eng.Limits().MaxBodyBytes()
		if ok, why := s.open.enter(principal, shared, false); !ok {
			s.eng.Metrics().Refused("open_requests")
			w.Header().Set("Retry-After", "5")
			httpError(w, http.StatusTooManyRequests, why+" (a request posted to an SSE session stays open until its answer is written to the session's stream: read the stream)")
			return
		}
		// Its bytes and what they decode into, as bounded counts them.
		n := int64(len(body)) + int64(tools.JSONValues(body, maxJSONValues))*decodedValueBytes
		if ok, why := s.open.reserveBody(principal, shared, n, maxBody); !ok {
			s.open.leave(principal, false)
			s.eng.Metrics().Refused("body_bytes")
			w.Header().Set("Retry-After", "5")
			httpError(w, http.StatusTooManyRequests, why)
			return
		}
		// The request's answer is written when it is released: what its
		// handler holds until then (untilAnswered) is held while mcp-go
		// encodes the answer and queues it for the stream, and while the
		// stream writes it — not given back when the handler returns
		// (attack17 K1: 60 reads of an 8 MB file posted to one session
		// whose stream was read slowly grew the server by 1.4 GiB).
		answered, done := context.WithCancel(context.Background())
		var once sync.Once
		release := func() {
			once.Do(func() {
				s.open.giveBody(principal, n)
				s.open.leave(principal, false)
				done()
			})
		}
		a, state := s.sseMsgs.await(session, id, release)
		switch state {
		case noStream:
			release() // mcp-go refuses the message
			next.ServeHTTP(w, r)
			return
		case idInUse:
			release()
			httpError(w, http.StatusConflict, "a request with this id is already awaiting its answer on this session: give each request in flight an id of its own (JSON-RPC 2.0)")
			return
		}
		cw := &statusWriter{ResponseWriter: w}
		ctx := context.WithValue(context.WithValue(r.Context(), answerEndsKey{}, answered), ssePostedKey{}, a)
		next.ServeHTTP(cw, r.WithContext(ctx))
		if cw.code != 0 && cw.code != http.StatusAccepted {
			// Refused (an unknown session, a body that is not JSON): no
			// answer will come on the stream.
			s.sseMsgs.dropped(session, id, a)
		}
	})
}

// statusWriter remembers the status code of a response.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}
