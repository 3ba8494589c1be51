package upstream_test

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/upstream"
)

// bearer is the Authorization the HTTP fakes want: MY_TOKEN's value.
const bearer = "Bearer tok-8f3a9c2e71"

// httpFake serves the fake tools over Streamable HTTP at /mcp, or over
// SSE (GET /sse, or GET /mcp with sseAtMCP, messages to /message), and
// answers 401 without the bearer token.
func httpFake(t *testing.T, sse, sseAtMCP bool, ln net.Listener) *httptest.Server {
	t.Helper()
	srv := newFakeServer(func(string) {})
	var h http.Handler
	if sse {
		endpoint := "/sse"
		if sseAtMCP {
			endpoint = "/mcp"
		}
		s := server.NewSSEServer(srv, server.WithSSEEndpoint(endpoint), server.WithMessageEndpoint("/message"), server.WithKeepAlive(false))
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.URL.Path == endpoint {
				http.Error(w, "use GET", http.StatusMethodNotAllowed) // as an SSE-only server answers
				return
			}
			s.ServeHTTP(w, r)
		})
	} else {
		h = server.NewStreamableHTTPServer(srv, server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
	}
	auth := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != bearer {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
	ts := httptest.NewUnstartedServer(auth)
	if ln != nil {
		ts.Listener.Close()
		ts.Listener = ln
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// TestHTTPServers connects over Streamable HTTP, SSE and SSE found by
// detection, with headers expanded from the environment, and reports a
// wrong token as HTTP 401.
func TestHTTPServers(t *testing.T) {
	t.Parallel()
	streamable := httpFake(t, false, false, nil)
	sse := httpFake(t, true, false, nil)
	sseAtMCP := httpFake(t, true, true, nil)
	auth := map[string]string{"Authorization": "Bearer ${MY_TOKEN}"}
	e := start(t, map[string]upstream.Server{
		"streamable": {URL: streamable.URL + "/mcp", Headers: auth},
		"typed_sse":  {URL: sseAtMCP.URL + "/mcp", Type: "sse", Headers: auth},
		"sse_by_url": {URL: sse.URL + "/sse", Headers: auth},
		"detected":   {URL: sseAtMCP.URL + "/mcp", Headers: auth},
		"wrong_key":  {URL: streamable.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer wrong-token-123"}},
		"sse_no_key": {URL: sse.URL + "/sse"},
	}, func(c *upstream.Config) { c.Backoff = time.Minute })
	for _, tt := range []struct {
		name      string
		transport upstream.Transport
	}{{"streamable", upstream.StreamableHTTP}, {"typed_sse", upstream.SSE}, {"sse_by_url", upstream.SSE}, {"detected", upstream.SSE}} {
		t.Run(tt.name, func(t *testing.T) {
			st := e.status(tt.name)
			if st.State != upstream.StateReady || st.Transport != tt.transport {
				t.Fatalf("status %+v", st)
			}
			out, err := e.call(t, tt.name+".get-sum", `{"a":40,"b":2}`)
			if err != nil || string(out) != "42" {
				t.Errorf("get-sum = %s, %v", out, err)
			}
		})
	}
	for _, name := range []string{"wrong_key", "sse_no_key"} {
		if st := e.status(name); st.State != upstream.StateUnavailable || !strings.Contains(st.Reason, "HTTP 401") {
			t.Errorf("%s: %+v", name, st)
		}
	}
	for _, secret := range []string{"tok-8f3a9c2e71", "wrong-token-123"} {
		if strings.Contains(e.logs.String(), secret) {
			t.Errorf("a header value is in the logs:\n%s", e.logs)
		}
		for _, st := range e.src.Status() {
			if strings.Contains(st.String(), secret) {
				t.Errorf("a header value is in the status: %s", st)
			}
		}
	}
}

// TestResponsesAreBounded (issue 19): a result larger than the server's
// max_response_bytes fails its call with upstream_too_large, over stdio,
// Streamable HTTP and SSE, and the connection serves the next call.
func TestResponsesAreBounded(t *testing.T) {
	t.Parallel()
	auth := map[string]string{"Authorization": "Bearer ${MY_TOKEN}"}
	servers := map[string]upstream.Server{
		"stdio":      fake(t, "serve"),
		"streamable": {URL: httpFake(t, false, false, nil).URL + "/mcp", Headers: auth},
		"sse":        {URL: httpFake(t, true, false, nil).URL + "/sse", Headers: auth},
	}
	for name, s := range servers {
		s.MaxResponseBytes = 64 << 10
		servers[name] = s
	}
	e := start(t, servers)
	for name := range servers {
		t.Run(name, func(t *testing.T) {
			if st := e.status(name); st.State != upstream.StateReady {
				t.Fatalf("status %+v", st)
			}
			_, err := e.call(t, name+".big", `{"n": 1000000}`)
			var te *tools.Error
			if !errors.As(err, &te) || te.Code != upstream.CodeUpstreamTooLarge || !strings.Contains(te.Message, "max_response_bytes") {
				t.Fatalf("a 1 MB result: %v", err)
			}
			if out, err := e.call(t, name+".big", `{"n": 10}`); err != nil || string(out) != `"aaaaaaaaaa"` {
				t.Errorf("the next call: %s, %v", out, err)
			}
		})
	}
}

// TestHTTPReconnects notices a server that went away, fails calls with the
// reason meanwhile, and reconnects when it is back.
func TestHTTPReconnects(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ts := httpFake(t, false, false, ln)
	e := start(t, map[string]upstream.Server{"web": {URL: ts.URL + "/mcp", Headers: map[string]string{"Authorization": bearer}}},
		func(c *upstream.Config) {
			c.PingInterval = 100 * time.Millisecond
			c.Backoff = 50 * time.Millisecond
			c.MaxBackoff = 200 * time.Millisecond
		})
	if _, err := e.call(t, "web.echo", `{"text":"before"}`); err != nil {
		t.Fatal(err)
	}
	ts.Close()
	eventually(t, "the server is seen gone", func() bool { return e.status("web").State == upstream.StateUnavailable })
	_, err = e.call(t, "web.echo", `{"text":"meanwhile"}`)
	var te *tools.Error
	if !errors.As(err, &te) || te.Code != upstream.CodeUpstreamUnavailable {
		t.Errorf("a call while it is gone: %v", err)
	}
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	httpFake(t, false, false, ln2)
	eventually(t, "reconnected", func() bool { return e.status("web").State == upstream.StateReady })
	if out, err := e.call(t, "web.echo", `{"text":"after"}`); err != nil || string(out) != `"after"` {
		t.Errorf("after reconnecting: %s, %v", out, err)
	}
}
