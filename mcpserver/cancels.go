package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// sessionless ties a notifications/cancelled that mcp-go would read
// without a session to its sender's own requests. mcp-go keys a request's cancellation by its
// session's id and its JSON-RPC id, and a request without a session — any
// request of protocol 2026-07-28 — has the session id "": every
// principal's stateless requests shared one key space, the ids their
// clients chose, and anyone could cancel anyone's runs (attack9 D13).
// Such a notification is answered here and never reaches mcp-go; it
// cancels the requests in flight of the principal who sent it with that
// id.
type sessionless struct {
	mu       sync.Mutex
	inFlight map[cancelKey][]*sessionlessRequest
}

type cancelKey struct {
	principal string
	id        string // the JSON-RPC id as JSON
}

// sessionlessRequest is one request without a session, served through
// serve.
type sessionlessRequest struct {
	principal string
	cancel    context.CancelCauseFunc
	keys      []cancelKey // guarded by sessionless.mu
}

type sessionlessKey struct{}

func newSessionless() *sessionless {
	return &sessionless{inFlight: make(map[cancelKey][]*sessionlessRequest)}
}

// applies reports a request that serve must see: a POST to the
// Streamable HTTP endpoint. Whether mcp-go serves it without a session
// depends on its body as well as its headers, which serve reads.
func (*sessionless) applies(r *http.Request) bool {
	return r.URL.Path == PathStreamable && r.Method == http.MethodPost
}

// serve answers a cancellation that mcp-go would read without a session
// itself and serves any other message mcp-go serves without a session
// through next, cancellable by its principal's cancellations.
//
// mcp-go serves a message without a session when it has no session
// header, or when it declares protocol 2026-07-28 or later in its _meta
// or its Mcp-Protocol-Version header, whatever session header it has.
// The method is read as mcp-go reads it, decoded: JSON may spell any of
// its characters as an escape (attack10 E2).
//
// The _meta is decoded only when the answer depends on it: as mcp-go
// decodes it (mcp.Meta, a map of every field), it was 40% of this
// function's CPU on every request, most of which declare their protocol
// in a header (issue 23, speed10). A message whose _meta mcp.Meta cannot
// decode is one that did not parse, as when it was decoded with the rest.
func (c *sessionless) serve(w http.ResponseWriter, r *http.Request, principal string, body []byte, next http.Handler) {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
			Meta      json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	parsed := json.Unmarshal(body, &msg) == nil
	meta := func() (*mcp.Meta, bool) {
		var m *mcp.Meta
		if !parsed {
			return nil, false
		}
		if len(msg.Params.Meta) > 0 && json.Unmarshal(msg.Params.Meta, &m) != nil {
			return nil, false
		}
		return m, true
	}
	withoutSession := r.Header.Get(server.HeaderKeySessionID) == "" ||
		mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
	if !withoutSession {
		m, ok := meta()
		withoutSession = ok && mcp.IsModernProtocol(m.ProtocolVersion())
	}
	if !withoutSession {
		next.ServeHTTP(w, r) // mcp-go keys its cancellations by the session
		return
	}
	if !parsed && bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		// A batch's cancellations could not be scoped here; mcp-go
		// refuses batches too.
		httpError(w, http.StatusBadRequest, "batches are not served; send each message alone")
		return
	}
	if msg.Method == string(mcp.MethodNotificationCancelled) {
		if _, ok := meta(); ok {
			c.cancelled(w, principal, msg.Params.RequestID)
			return
		}
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	req := &sessionlessRequest{principal: principal, cancel: cancel}
	defer func() {
		c.forget(req)
		cancel(nil)
	}()
	next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, sessionlessKey{}, req)))
}

// cancelled answers a notifications/cancelled: it cancels the
// principal's requests in flight of that id.
func (c *sessionless) cancelled(w http.ResponseWriter, principal string, requestID json.RawMessage) {
	if id := requestIDKey(requestID); id != "" {
		c.mu.Lock()
		reqs := c.inFlight[cancelKey{principal, id}]
		c.mu.Unlock()
		for _, req := range reqs {
			req.cancel(context.Canceled)
		}
	}
	w.WriteHeader(http.StatusAccepted)
}

// hooks registers each request's id as mcp-go reads it.
func (c *sessionless) hooks(h *server.Hooks) {
	h.AddBeforeAny(func(ctx context.Context, id any, _ mcp.MCPMethod, _ any) {
		req, ok := ctx.Value(sessionlessKey{}).(*sessionlessRequest)
		if !ok || id == nil {
			return
		}
		b, err := json.Marshal(id)
		if err != nil {
			return
		}
		k := cancelKey{req.principal, requestIDKey(b)}
		c.mu.Lock()
		defer c.mu.Unlock()
		req.keys = append(req.keys, k)
		c.inFlight[k] = append(c.inFlight[k], req)
	})
}

func (c *sessionless) forget(req *sessionlessRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range req.keys {
		reqs := c.inFlight[k]
		for i, r := range reqs {
			if r == req {
				reqs = append(reqs[:i], reqs[i+1:]...)
				break
			}
		}
		if len(reqs) == 0 {
			delete(c.inFlight, k)
		} else {
			c.inFlight[k] = reqs
		}
	}
}

// requestIDKey spells a JSON-RPC id as mcp-go tells ids apart: by its
// value, whether a number (1, 1.0 and 1e0 are one id) or a string.
func requestIDKey(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return ""
}
