package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Over stdio mcp-go serves each request on a goroutine of its own, and
// once the handler returns it encodes the answer and waits for its turn
// to write it to stdout: a client that stops reading stdout keeps every
// answer, encoded, on those goroutines. So a request read from stdin is
// followed until its answer is written (stdioAnswers), and what its
// handler holds with untilAnswered is held until then, as on the HTTP
// transports (attack17 K1's question for stdio).
//
// mcp-go gives a handler no JSON-RPC id, and stdio's requests share one
// context: a hook, which has the id, writes it into the request's header
// (an empty map on stdio: there are no HTTP headers) under
// stdioRequestHeader, and a middleware gives the handler the context that
// ends when that answer is written. Only a request served by ServeStdio
// is looked up so: an HTTP client's header of that name means nothing.
const stdioRequestHeader = "Codecell-Stdio-Request"

// stdioAnswers follows the requests of one stdio client until their
// answers are written.
type stdioAnswers struct {
	mu      sync.Mutex
	pending map[string]*stdioAnswer // by idKey
	ended   bool
}

type stdioAnswer struct {
	written context.Context
	done    context.CancelFunc
}

type stdioAnswersKey struct{}

func newStdioAnswers() *stdioAnswers { return &stdioAnswers{pending: map[string]*stdioAnswer{}} }

// read follows the request with JSON-RPC id raw until its answer is
// written. A second request with the id of one awaiting its answer shares
// its context: JSON-RPC ids are unique among a client's requests in
// flight.
func (a *stdioAnswers) read(raw json.RawMessage) {
	key := rawIDKey(raw)
	if key == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended || a.pending[key] != nil {
		return
	}
	written, done := context.WithCancel(context.Background())
	a.pending[key] = &stdioAnswer{written: written, done: done}
}

// written ends the context of the request whose answer, with JSON-RPC id
// raw, was written (or failed to be).
func (a *stdioAnswers) written(raw json.RawMessage) {
	key := rawIDKey(raw)
	a.mu.Lock()
	p := a.pending[key]
	delete(a.pending, key)
	a.mu.Unlock()
	if p != nil {
		p.done()
	}
}

// end ends every request's context: the client is gone.
func (a *stdioAnswers) end() {
	a.mu.Lock()
	p := a.pending
	a.pending, a.ended = map[string]*stdioAnswer{}, true
	a.mu.Unlock()
	for _, r := range p {
		r.done()
	}
}

// context returns the context that ends once request key's answer is
// written; nil for a request not followed.
func (a *stdioAnswers) context(key string) context.Context {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p := a.pending[key]; p != nil {
		return p.written
	}
	return nil
}

// rawIDKey is idKey of a JSON-RPC id as JSON.
func rawIDKey(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	return idKey(v)
}

// stdioAnswerHooks write a stdio request's id into its header, for
// stdioAnswered.
func stdioAnswerHooks(h *server.Hooks) {
	mark := func(ctx context.Context, id any, header http.Header) {
		if _, ok := ctx.Value(stdioAnswersKey{}).(*stdioAnswers); ok && header != nil {
			header.Set(stdioRequestHeader, idKey(id))
		}
	}
	h.AddBeforeReadResource(func(ctx context.Context, id any, req *mcp.ReadResourceRequest) { mark(ctx, id, req.Header) })
	h.AddBeforeGetPrompt(func(ctx context.Context, id any, req *mcp.GetPromptRequest) { mark(ctx, id, req.Header) })
}

// stdioAnswered returns ctx with the context that ends once the answer
// to the stdio request whose header is header is written
// (answerEndsKey); ctx itself for any other request.
func stdioAnswered(ctx context.Context, header http.Header) context.Context {
	a, ok := ctx.Value(stdioAnswersKey{}).(*stdioAnswers)
	if !ok || header == nil {
		return ctx
	}
	if written := a.context(header.Get(stdioRequestHeader)); written != nil {
		return context.WithValue(ctx, answerEndsKey{}, written)
	}
	return ctx
}

// answerMiddleware gives resource and prompt handlers stdioAnswered's
// context, ended too when the SSE stream of the session its request was
// posted to ends (untilStreamEnds): a read whose answer has nowhere to go
// stops, and one waiting for its hold is refused.
func answerMiddleware() []server.ServerOption {
	return []server.ServerOption{
		server.WithResourceHandlerMiddleware(func(next server.ResourceHandlerFunc) server.ResourceHandlerFunc {
			return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				ctx, stop := untilStreamEnds(ctx)
				defer stop()
				return next(stdioAnswered(ctx, req.Header), req)
			}
		}),
		server.WithPromptHandlerMiddleware(func(next server.PromptHandlerFunc) server.PromptHandlerFunc {
			return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				ctx, stop := untilStreamEnds(ctx)
				defer stop()
				return next(stdioAnswered(ctx, req.Header), req)
			}
		}),
	}
}
