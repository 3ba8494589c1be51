package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/klauspost/compress/gzhttp"
	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves one MCP client over in and out until ctx ends or in
// reaches EOF. Only protocol messages are written to out.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	stdio := server.NewStdioServer(s.mcp)
	stdio.SetErrorLogger(log.New(slogWriter{s.log.With("transport", "stdio")}, "", 0))
	err := stdio.Listen(ctx, in, out)
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("serve stdio: %w", err)
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
			server.WithStreamableHTTPLogger(s.log.With("transport", "streamable-http")),
			server.WithHTTPContextFunc(copyPrincipal),
			server.WithEventStore(s.events), // streams can be resumed
		),
		sse: server.NewSSEServer(s.mcp,
			server.WithSSEEndpoint(PathSSE),
			server.WithMessageEndpoint(PathMessage),
			server.WithKeepAlive(true),
			server.WithSSEContextFunc(copyPrincipal),
		),
		mux: http.NewServeMux(),
	}
	h.mux.Handle(PathStreamable, s.guard(h.streamable))
	h.mux.Handle(PathSSE, s.guard(h.sse.SSEHandler()))
	h.mux.Handle(PathMessage, s.guard(h.sse.MessageHandler()))
	h.mux.Handle("GET "+PathMetrics, s.guard(s.metrics.handler()))
	h.mux.HandleFunc("GET "+PathHealth, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`)
	})
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
	srv := &http.Server{
		Handler:           compress(h.mux),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.New(slogWriter{s.log.With("transport", "http")}, "", 0),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	select {
	case err := <-errc:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
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
