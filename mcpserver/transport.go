package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzhttp"
	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves one MCP client over in and out until ctx ends or in
// reaches EOF. Only protocol messages are written to out. On EOF it
// finishes what was asked: every request read gets its response before
// ServeStdio returns, and none is cancelled because the input ended.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	gate := newStdioGate(ctx, in, out, s.exec.Config().MaxTimeout+s.exec.Config().QueueWait+10*time.Second)
	// The extension's methods, which mcp-go does not know, are answered
	// here (catalog_ext.go).
	gate.intercept = func(line []byte) ([]byte, bool) {
		if req, ok := isTasks26Method(line); ok {
			return s.answer26(withLocal(ctx), req), true
		}
		req, ok := isExtensionMethod(line)
		if !ok {
			return nil, false
		}
		return s.extensionMethod(withLocal(ctx), req), true
	}
	stdio := server.NewStdioServer(s.mcp)
	stdio.SetErrorLogger(log.New(slogWriter{s.log.With("transport", "stdio")}, "", 0))
	stdio.SetContextFunc(func(ctx context.Context) context.Context {
		return context.WithValue(withLocal(ctx), stdioAnswersKey{}, gate.answers)
	})
	err := stdio.Listen(ctx, gate, gate.writer())
	gate.answers.end()
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("serve stdio: %w", err)
}

type localKey struct{}

// withLocal marks a request that came from the local user over stdio.
func withLocal(ctx context.Context) context.Context { return context.WithValue(ctx, localKey{}, true) }

// answerEndsKey holds, in a request's context, a context that ends once
// the request's answer is written. Over stdio that is when the answer's
// line is written to stdout (stdioAnswers); on Streamable HTTP, when the
// outermost handler of the request returns, after every writer around
// mcp-go's has written what it held back (taskResultWriter holds a JSON
// answer whole until mcp-go returns, and a client that does not read
// keeps that write waiting); on SSE, when the answer's event is written
// to the session's stream, or the stream ends (sseMessage).
type answerEndsKey struct{}

// answeredOnReturn gives next's requests the context answerEndsKey
// names, ended when next returns, and bounds how long each write of the
// answer may wait for the client (writeWait): holds last until the
// answer is written, and a client that does not read would otherwise keep
// them, and its share of the results in flight, for ever.
func answeredOnReturn(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answered, done := context.WithCancel(context.Background())
		defer done()
		dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w)}
		// The connection's next request may be another path's, which
		// sets no deadline: it must not find this one's.
		defer dw.rc.SetWriteDeadline(time.Time{})
		next.ServeHTTP(dw, r.WithContext(context.WithValue(r.Context(), answerEndsKey{}, answered)))
	})
}

// writeWait is how long a write to a client may wait: 10 s, and a second
// more for each MiB it writes.
func writeWait(n int) time.Duration { return 10*time.Second + time.Duration(n>>20)*time.Second }

// deadlineWriter sets the connection's write deadline before each write
// and flush, so that a client that stops reading fails the write, ends
// its request and gives back what it held.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.rc.SetWriteDeadline(time.Now().Add(writeWait(len(p))))
	return d.ResponseWriter.Write(p)
}

// Flush flushes the event streams mcp-go writes.
func (d *deadlineWriter) Flush() {
	d.rc.SetWriteDeadline(time.Now().Add(writeWait(0)))
	d.rc.Flush()
}

// Unwrap lets http.ResponseController reach the writer.
func (d *deadlineWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// untilAnswered calls release once the answer to ctx's request is
// written, where its context says when (answeredOnReturn, sseMessage,
// stdioAnswered), and the returned function is called (deferred by the
// caller: its handler returned) — whichever comes later. A read's hold
// given back when mcp-go's handler returned left the answer it held
// outside every bound while a client that did not read kept its write
// waiting: 32 such answers of a 13 MiB image kept 1.3 GiB (attack16 J2);
// and given back when the answer's context ended — an SSE stream, a stdio
// client gone — while the handler went on, it held nothing of what the
// handler still made (attack22 P3).
func untilAnswered(ctx context.Context, release func()) (deferred func()) {
	answered, ok := ctx.Value(answerEndsKey{}).(context.Context)
	if !ok {
		return release
	}
	var (
		left atomic.Int32 // of the two: the answer written, the handler returned
		once sync.Once
	)
	left.Store(2)
	both := func() {
		if left.Add(-1) == 0 {
			release()
		}
	}
	context.AfterFunc(answered, both)
	return func() { once.Do(both) }
}

// isLocal reports whether a request came over stdio.
func isLocal(ctx context.Context) bool {
	local, _ := ctx.Value(localKey{}).(bool)
	return local
}

// stdioGate sits between a stdio client and mcp-go's stdio server, which
// serves requests concurrently and cancels them all when its input ends.
// The gate hands the server one line at a time and keeps two promises a
// client relies on: nothing after an initialize request is read until it
// is answered (a client may pipe requests before the reply), and EOF is
// passed on only once every request read has been answered.
type stdioGate struct {
	ctx   context.Context
	drain time.Duration
	in    *bufio.Reader
	out   io.Writer

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when pending changes
	pending map[string]bool
	initID  string // an initialize request not yet answered
	rest    []byte // what is left of the current line

	// answers follows each request until its answer is written.
	answers *stdioAnswers

	// intercept, when set, answers a line itself: handled lines are not
	// passed on, and their answer (nil for none) is written out.
	intercept func(line []byte) (answer []byte, handled bool)
	writeMu   sync.Mutex // one message at a time on out
}

// newStdioGate returns a gate over in and out that waits up to drain for
// the answers to requests in progress when in ends.
func newStdioGate(ctx context.Context, in io.Reader, out io.Writer, drain time.Duration) *stdioGate {
	return &stdioGate{ctx: ctx, drain: drain, in: bufio.NewReaderSize(in, 64<<10), out: out, changed: make(chan struct{}), pending: map[string]bool{}, answers: newStdioAnswers()}
}

// rpcHead is what the gate reads of a JSON-RPC message.
type rpcHead struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// Read returns at most one line of input.
func (g *stdioGate) Read(p []byte) (int, error) {
	for len(g.rest) == 0 {
		if err := g.waitFor(func() bool { return g.initID == "" }); err != nil {
			return 0, err
		}
		line, err := g.in.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			if err == io.EOF {
				// Finish what was asked before the server sees the end.
				ctx, cancel := context.WithTimeout(g.ctx, g.drain)
				defer cancel()
				if werr := g.waitForCtx(ctx, func() bool { return len(g.pending) == 0 }); werr != nil && g.ctx.Err() != nil {
					return 0, werr
				}
			}
			return 0, err
		}
		if g.intercept != nil {
			if answer, handled := g.intercept(line); handled {
				if answer != nil {
					if _, err := g.writer().Write(append(answer, '\n')); err != nil {
						return 0, err
					}
				}
				continue
			}
		}
		var h rpcHead
		if json.Unmarshal(line, &h) == nil && h.Method != "" {
			g.mu.Lock()
			switch {
			case len(h.ID) > 0 && string(h.ID) != "null":
				g.pending[string(h.ID)] = true
				g.answers.read(h.ID)
				if h.Method == "initialize" {
					g.initID = string(h.ID)
				}
			case h.Method == "notifications/cancelled":
				// The client expects no answer to a request it cancelled.
				g.settleLocked(string(h.Params.RequestID))
			}
			g.mu.Unlock()
		}
		g.rest = line
	}
	n := copy(p, g.rest)
	g.rest = g.rest[n:]
	return n, nil
}

// waitFor blocks until cond holds or the context ends.
func (g *stdioGate) waitFor(cond func() bool) error { return g.waitForCtx(g.ctx, cond) }

func (g *stdioGate) waitForCtx(ctx context.Context, cond func() bool) error {
	for {
		g.mu.Lock()
		ok, ch := cond(), g.changed
		g.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// writer returns the writer the server writes messages to: it notes each
// response as it goes out.
func (g *stdioGate) writer() io.Writer { return stdioOut{g} }

type stdioOut struct{ g *stdioGate }

func (o stdioOut) Write(p []byte) (int, error) {
	o.g.writeMu.Lock()
	_, err := o.g.out.Write(taskResultOf(p)) // a tools/call that became a 2026 task
	n := len(p)
	if err != nil {
		n = 0
	}
	o.g.writeMu.Unlock()
	var h rpcHead
	if json.Unmarshal(p, &h) == nil && h.Method == "" && len(h.ID) > 0 {
		o.g.mu.Lock()
		o.g.settleLocked(string(h.ID))
		o.g.mu.Unlock()
		o.g.answers.written(h.ID)
	}
	return n, err
}

// settleLocked marks request id answered (or no longer awaited).
func (g *stdioGate) settleLocked(id string) {
	delete(g.pending, id)
	if id == g.initID {
		g.initID = ""
	}
	close(g.changed)
	g.changed = make(chan struct{})
}

// HTTP paths served by Handler.
const (
	PathStreamable = "/mcp"
	PathSSE        = "/sse"
	PathMessage    = "/message"
	PathHealth     = "/healthz"
	PathMetrics    = "/metrics"
)

// httpTransports are the HTTP transports behind one handler.
type httpTransports struct {
	streamable *server.StreamableHTTPServer
	sse        *server.SSEServer
	mux        *http.ServeMux
}

func (s *Server) newHTTP() *httpTransports {
	h := &httpTransports{
		streamable: server.NewStreamableHTTPServer(s.mcp,
			server.WithEndpointPath(PathStreamable),
			server.WithStreamableHTTPLogger(hideSessions(s.log).With("transport", "streamable-http")),
			server.WithHTTPContextFunc(copyPrincipal),
			server.WithEventStore(s.events), // streams can be resumed
			server.WithSessionIdManagerResolver(s.owners),
			server.WithSessionIdleTTL(s.eng.SessionIdleTTL()),
		),
		sse: server.NewSSEServer(s.mcp,
			server.WithSSEEndpoint(PathSSE),
			server.WithMessageEndpoint(PathMessage),
			server.WithKeepAlive(true),
			server.WithSSEContextFunc(copyPrincipal),
		),
		mux: http.NewServeMux(),
	}
	evict := evictWith(h.streamable)
	s.owners.setEvict(func(id string) {
		s.eng.Metrics().SessionEvicted("per_principal")
		if !s.owners.endStream(id) {
			evict(id)
		}
	})
	h.mux.Handle(PathStreamable, answeredOnReturn(s.guard(s.drainGate(s.extensionHTTP(s.taskResults(s.ownTaskNotes(detachOnReturn(h.streamable))))))))
	h.mux.Handle(PathSSE, s.guard(s.ownTaskNotes(s.sseStream(h.sse.SSEHandler()))))
	h.mux.Handle(PathMessage, s.guard(s.sseMessage(s.extensionSSE(h.sse, h.sse.MessageHandler()))))
	h.mux.Handle("GET "+PathMetrics, s.guard(http.HandlerFunc(s.metrics)))
	h.mux.Handle("GET /{$}", s.hostOnly(http.HandlerFunc(s.home)))
	s.addOAuthRoutes(h.mux)
	s.addServerCard(h.mux, h)
	h.mux.Handle("GET "+PathReady, s.hostOnly(http.HandlerFunc(s.readyz)))
	h.mux.Handle("GET "+PathHealth, s.hostOnly(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`)
	})))
	return h
}

func (h *httpTransports) closeSessions(ctx context.Context) {
	h.streamable.CloseSessions(ctx)
	h.sse.CloseSessions()
}

// compress gzips responses for clients that accept it, except event
// streams, whose events must reach the client as they happen.
func compress(h http.Handler) http.Handler {
	wrap, err := gzhttp.NewWrapper(gzhttp.ExceptContentTypes([]string{"text/event-stream"}), gzhttp.MinSize(1024))
	if err != nil {
		panic(err) // the options are constant
	}
	return wrap(h)
}

// Handler returns an http.Handler serving Streamable HTTP at /mcp, SSE at
// /sse with messages posted to /message, /metrics and /healthz. All but
// /healthz check the Origin, the body size and, when tokens are
// configured, the bearer token.
func (s *Server) Handler() http.Handler {
	return compress(s.newHTTP().mux)
}

// ServeHTTP serves the HTTP transports on ln until ctx ends. It then
// stops accepting, lets requests in progress finish for up to grace, and
// cancels the runs still going, whose clients get a "canceled" result
// saying the server is shutting down.
func (s *Server) ServeHTTP(ctx context.Context, ln net.Listener, grace time.Duration) error {
	h := s.newHTTP()
	cl := newConnListener(ln, maxConns(), writeWait, func(open, refused int64) {
		s.log.Warn("too many connections open at once, each serving a client's request; closing new ones (raise the descriptor limit, ulimit -n, for more)", "open", open, "refused", refused)
	})
	ln = cl
	srv := &http.Server{
		ConnState:         cl.track,
		ConnContext:       cl.connContext,
		Handler:           compress(h.mux),
		ReadHeaderTimeout: min(10*time.Second, s.cfg.ReadTimeout),
		MaxHeaderBytes:    maxHeaderBytes,
		// A request's body must arrive within ReadTimeout (the guard
		// reads it whole); responses, such as event streams, are not
		// bounded as a whole, but each write is (connListener). Idle
		// keep-alive connections are closed.
		ReadTimeout: s.cfg.ReadTimeout,
		IdleTimeout: s.cfg.IdleTimeout,
		ErrorLog:    log.New(slogWriter{s.log.With("transport", "http")}, "", 0),
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	select {
	case err := <-errc:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	s.Drain()
	if d := s.cfg.DrainDelay; d > 0 {
		s.log.Info("draining before shutdown", "delay", d)
		time.Sleep(d)
	}
	s.log.Info("shutting down", "grace", grace)
	// Long-lived streams (SSE, GET listeners) never finish by themselves.
	h.closeSessions(context.Background())
	if err := shutdown(srv, h, grace); err != nil {
		s.log.Warn("runs still in progress after the grace period; cancelling them", "grace", grace)
		s.StopRuns()
		if err := shutdown(srv, h, 5*time.Second); err != nil {
			srv.Close()
			<-errc
			return fmt.Errorf("shut down http: %w", err)
		}
	}
	<-errc
	return nil
}

// shutdown waits up to d for srv's requests to finish, closing streams
// that open meanwhile.
func shutdown(srv *http.Server, h *httpTransports, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			h.closeSessions(ctx)
		}
	}
}

// slogWriter adapts a standard library logger's output to slog.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	msg := string(p)
	for len(msg) > 0 && msg[len(msg)-1] == '\n' {
		msg = msg[:len(msg)-1]
	}
	w.log.Warn(msg)
	return len(p), nil
}
