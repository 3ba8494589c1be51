package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sync"
	"time"

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
type sseMessages struct {
	mu sync.Mutex
	// bySession holds, for each open stream, the release of each request
	// awaiting its answer, by the request's id.
	bySession map[string]map[string][]func()
}

func newSSEMessages() *sseMessages {
	return &sseMessages{bySession: map[string]map[string][]func(){}}
}

// opened starts following the requests of session, whose stream is open.
func (m *sseMessages) opened(session string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bySession[session] == nil {
		m.bySession[session] = map[string][]func(){}
	}
}

// await follows request id of session until it is answered; it reports
// false when the session has no open stream.
func (m *sseMessages) await(session, id string, release func()) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.bySession[session]
	if p == nil {
		return false
	}
	p[id] = append(p[id], release)
	return true
}

// answered releases request id of session, whose answer is written.
func (m *sseMessages) answered(session, id string) {
	m.mu.Lock()
	var release func()
	if p := m.bySession[session]; len(p[id]) > 0 {
		release = p[id][0]
		if p[id] = p[id][1:]; len(p[id]) == 0 {
			delete(p, id)
		}
	}
	m.mu.Unlock()
	if release != nil {
		release()
	}
}

// closed releases every request of session, whose stream ended.
func (m *sseMessages) closed(session string) {
	m.mu.Lock()
	p := m.bySession[session]
	delete(m.bySession, session)
	m.mu.Unlock()
	for _, rs := range p {
		for _, r := range rs {
			r()
		}
	}
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
		next.ServeHTTP(sw, r.WithContext(ctx))
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
// no further than its id.
func answerID(event []byte) (string, bool) {
	data, ok := bytes.CutPrefix(event, []byte("event: message\ndata: "))
	if !ok {
		return "", false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
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
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				return "", false
			}
			id, hasID = messageID(raw), true
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

// messageID is a JSON-RPC id as a key: a string's value or a number's
// text, kept apart.
func messageID(raw json.RawMessage) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return ""
	}
	switch v := v.(type) {
	case string:
		return "s:" + v
	case json.Number:
		return "n:" + v.String()
	}
	return ""
}

// sseMessage wraps the SSE message endpoint (POST /message): a request
// posted to a session is counted open for its principal, with its body's
// bytes, until its answer is written to the session's stream (sseStream)
// or the stream ends — not only until the 202.
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
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		id := ""
		if json.Unmarshal(body, &msg) == nil && msg.Method != "" && len(msg.ID) > 0 {
			id = messageID(msg.ID)
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
		var once sync.Once
		release := func() {
			once.Do(func() {
				s.open.giveBody(principal, n)
				s.open.leave(principal, false)
			})
		}
		if !s.sseMsgs.await(session, id, release) {
			release() // no open stream: mcp-go refuses the message
			next.ServeHTTP(w, r)
			return
		}
		cw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(cw, r)
		if cw.code != 0 && cw.code != http.StatusAccepted {
			// Refused (an unknown session, a body that is not JSON): no
			// answer will come on the stream.
			s.sseMsgs.answered(session, id)
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
