package mcpserver_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
)

const (
	aliceToken = "alice-token-0123456789abcdef"
	bobToken   = "bob-token-0123456789abcdef"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func securedServer(t *testing.T, limits engine.Limits) *httptest.Server {
	t.Helper()
	srv := newServer(t, mcpserver.Config{
		Auth:           []mcpserver.Token{{Principal: "alice", Token: aliceToken}, {Principal: "bob", Token: bobToken}},
		AllowedOrigins: []string{"https://ide.example"},
		Limits:         limits,
	})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func post(t *testing.T, url string, header map[string]string, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestHTTPSecurity(t *testing.T) {
	t.Parallel()
	ts := securedServer(t, engine.Limits{MaxBodyBytes: 64 << 10})
	tests := []struct {
		name       string
		path       string
		header     map[string]string
		body       string
		wantStatus int
		wantHeader string // in WWW-Authenticate
	}{
		{name: "missing token", path: "/mcp", body: initBody, wantStatus: 401, wantHeader: `Bearer realm="codecell"`},
		{name: "wrong token", path: "/mcp", header: map[string]string{"Authorization": "Bearer nope-nope-nope-nope"}, body: initBody, wantStatus: 401, wantHeader: `error="invalid_token"`},
		{name: "wrong scheme", path: "/mcp", header: map[string]string{"Authorization": "Basic " + aliceToken}, body: initBody, wantStatus: 401},
		{name: "sse without token", path: "/message?sessionId=x", body: initBody, wantStatus: 401},
		{name: "foreign origin", path: "/mcp", header: map[string]string{"Authorization": "Bearer " + aliceToken, "Origin": "https://evil.example"}, body: initBody, wantStatus: 403},
		{name: "oversized body", path: "/mcp", header: map[string]string{"Authorization": "Bearer " + aliceToken}, body: strings.Repeat(" ", 65<<10) + initBody, wantStatus: 413},
		{name: "allowed origin", path: "/mcp", header: map[string]string{"Authorization": "Bearer " + aliceToken, "Origin": "https://ide.example"}, body: initBody, wantStatus: 200},
		{name: "valid token", path: "/mcp", header: map[string]string{"Authorization": "Bearer " + bobToken}, body: initBody, wantStatus: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, ts.URL+tt.path, tt.header, tt.body)
			if resp.StatusCode != tt.wantStatus {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, b)
			}
			if tt.wantHeader != "" && !strings.Contains(resp.Header.Get("WWW-Authenticate"), tt.wantHeader) {
				t.Errorf("WWW-Authenticate %q, want %q", resp.Header.Get("WWW-Authenticate"), tt.wantHeader)
			}
		})
	}

	// A chunked body over the limit, with no Content-Length, is refused too.
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", io.MultiReader(strings.NewReader(strings.Repeat(" ", 65<<10)), bytes.NewReader([]byte(initBody))))
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("chunked oversized body: status %d, want 413", resp.StatusCode)
	}

	// Health stays open; metrics need the token.
	if r, _ := http.Get(ts.URL + "/healthz"); r.StatusCode != 200 {
		t.Errorf("healthz %d", r.StatusCode)
	}
	if r, _ := http.Get(ts.URL + "/metrics"); r.StatusCode != 401 {
		t.Errorf("metrics without token: %d", r.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodGet, ts.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, limit := range []string{"auth", "origin", "body_size"} {
		if !bytes.Contains(body, []byte(`codecell_refusals_total{limit="`+limit+`"}`)) {
			t.Errorf("metrics do not count %s refusals", limit)
		}
	}
}

func authedClient(t *testing.T, url, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	return start(t, c)
}

func TestAuthenticatedClientAndMetrics(t *testing.T) {
	t.Parallel()
	ts := securedServer(t, engine.Limits{})
	c := authedClient(t, ts.URL+"/mcp", aliceToken)
	if _, rec := execute(t, c, map[string]any{"code": "(await util.echo({text: 'x'})).text"}); rec == nil || rec.Status != executor.StatusOK {
		t.Fatalf("run: %+v", rec)
	}
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`codecell_executions_total{kind="",status="ok"} 1`,
		`codecell_tool_calls_total{status="ok",tool="util.echo"} 1`,
		"codecell_execution_duration_seconds_bucket",
		"codecell_queue_wait_seconds_count 1",
		"codecell_pool_size",
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	ts := securedServer(t, engine.Limits{ExecutionsPerMinute: 6, ExecutionBurst: 2, ToolCallsPerMinute: 6, ToolCallBurst: 3})
	alice := authedClient(t, ts.URL+"/mcp", aliceToken)
	bob := authedClient(t, ts.URL+"/mcp", bobToken)

	// Tool calls: the fourth call in a burst fails with rate_limited.
	res, rec := execute(t, alice, map[string]any{"code": `const out = []; for (let i = 0; i < 4; i++) { try { await util.echo({text: "x"}); out.push("ok") } catch (e) { out.push(e.code + ": " + e.message) } } out`})
	if res.IsError || !strings.Contains(string(rec.Result), `"rate_limited: rate limit: \"alice\" may make 6 tool calls per minute (bursts of 3); retry in`) {
		t.Fatalf("tool-call limit: %s", text(res))
	}
	// Executions: alice has used one of two; the third is refused with a
	// message that says which limit and when to retry.
	execute(t, alice, map[string]any{"code": "1"})
	res, rec = execute(t, alice, map[string]any{"code": "1"})
	if !res.IsError || rec.Error == nil || rec.Error.Kind != mcpserver.KindRateLimited ||
		!strings.Contains(rec.Error.Message, `"alice" may start 6 executions per minute`) || !strings.Contains(rec.Error.Message, "retry in") {
		t.Fatalf("execution limit: %s", text(res))
	}
	// Limits are per principal: bob is unaffected.
	if _, rec := execute(t, bob, map[string]any{"code": "2"}); rec == nil || string(rec.Result) != "2" {
		t.Fatalf("bob was limited by alice's use: %+v", rec)
	}
}

// TestGzip: JSON responses are compressed for clients that accept gzip.
func TestGzip(t *testing.T) {
	t.Parallel()
	srv := catalogServer(t, mcpserver.Config{Expose: mcpserver.ExposeBoth})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	tr := &http.Transport{DisableCompression: true}
	client := &http.Client{Transport: tr}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	io.Copy(io.Discard, resp.Body)

	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	req, _ = http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(list))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("tools/list: %d %s", resp.StatusCode, body)
	}
	ct := resp.Header.Get("Content-Type")
	t.Logf("tools/list: %s, encoding %q, %d bytes", ct, resp.Header.Get("Content-Encoding"), len(body))
	if strings.HasPrefix(ct, "text/event-stream") {
		if resp.Header.Get("Content-Encoding") == "gzip" {
			t.Error("an event stream was gzipped")
		}
		return
	}
	if resp.Header.Get("Content-Encoding") != "gzip" || len(body) > 100<<10 {
		t.Errorf("direct-mode tools/list: encoding %q, %d bytes on the wire", resp.Header.Get("Content-Encoding"), len(body))
	}
}
