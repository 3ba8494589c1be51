package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/tools"
)

// hints is what a list or read result says of its caching.
func hints(r mcp.CacheableResult) string {
	ttl, ok := r.TTL()
	if !ok {
		return "none"
	}
	return fmt.Sprintf("%d %s", ttl, r.CacheScope)
}

// TestCacheHints: on protocol 2026-07-28 every list and read result says
// how long it may be reused and whether it is the same for everyone;
// lists that a caller's toolset filters are private. Protocol 2025-11-25
// results carry no hints.
func TestCacheHints(t *testing.T) {
	type seen struct{ tools, prompts, resources, templates, read string }
	observe := func(t *testing.T, c *client.Client) seen {
		t.Helper()
		ctx := t.Context()
		var s seen
		lt, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		s.tools = hints(lt.CacheableResult)
		lp, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		s.prompts = hints(lp.CacheableResult)
		lr, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		s.resources = hints(lr.CacheableResult)
		ltp, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		s.templates = hints(ltp.CacheableResult)
		rr, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: mcpserver.ResourcePrefix + "manifest.json"}})
		if err != nil {
			t.Fatal(err)
		}
		s.read = hints(rr.CacheableResult)
		return s
	}
	for _, tc := range []struct {
		name    string
		cfg     mcpserver.Config
		version string
		want    seen
	}{
		{"code mode", mcpserver.Config{}, mcp.ProtocolVersion20260728,
			seen{"600000 public", "60000 public", "60000 public", "60000 public", "0 private"}},
		{"direct mode", mcpserver.Config{Expose: mcpserver.ExposeBoth}, mcp.ProtocolVersion20260728,
			seen{"60000 public", "60000 public", "60000 public", "60000 public", "0 private"}},
		{"direct mode with toolsets", mcpserver.Config{Expose: mcpserver.ExposeBoth, Access: engine.Access{ReadOnly: true}}, mcp.ProtocolVersion20260728,
			seen{"60000 private", "60000 private", "60000 private", "60000 private", "0 private"}},
		{"protocol 2025-11-25", mcpserver.Config{Expose: mcpserver.ExposeBoth}, mcp.ProtocolVersion20251125,
			seen{"none", "none", "none", "none", "none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, tc.cfg)
			c := startVersion(t, transports[1].connect(t, srv), tc.version)
			if got := observe(t, c); got != tc.want {
				t.Errorf("hints %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestListOrder: tools/list, prompts/list and the resource lists come in
// the same order on every request, whatever order the catalogue was
// registered in: sorted by name (2026-07-28: deterministic order), in
// both protocol eras.
func TestListOrder(t *testing.T) {
	for _, version := range []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, mcpserver.Config{Expose: mcpserver.ExposeBoth})
			var ts []tools.Tool
			for i := range 40 {
				ts = append(ts, tools.Tool{Name: fmt.Sprintf("shuffled.tool_%02d", i), Summary: "A tool.", InputSchema: json.RawMessage(`{"type":"object"}`),
					Handler: func(_ context.Context, _ json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }})
			}
			rand.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
			for _, tl := range ts {
				if err := srv.Registry().Register(tl); err != nil {
					t.Fatal(err)
				}
			}
			c := startVersion(t, transports[1].connect(t, srv), version)
			names := func() []string {
				lt, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, tl := range lt.Tools {
					out = append(out, tl.Name)
				}
				return out
			}
			first := names()
			if len(first) < 43 || !slices.IsSorted(first) {
				t.Fatalf("tools/list gave %d tools, sorted %v: %v", len(first), slices.IsSorted(first), first)
			}
			for range 5 {
				if again := names(); !slices.Equal(again, first) {
					t.Fatalf("tools/list changed order:\n%v\n%v", first, again)
				}
			}
			lt, err := c.ListResourceTemplates(t.Context(), mcp.ListResourceTemplatesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var uris []string
			for _, rt := range lt.ResourceTemplates {
				uris = append(uris, rt.URITemplate.Raw())
			}
			lt2, _ := c.ListResourceTemplates(t.Context(), mcp.ListResourceTemplatesRequest{})
			var uris2 []string
			for _, rt := range lt2.ResourceTemplates {
				uris2 = append(uris2, rt.URITemplate.Raw())
			}
			if !slices.Equal(uris, uris2) {
				t.Errorf("resources/templates/list changed order:\n%v\n%v", uris, uris2)
			}
		})
	}
}

// TestStandardHeaders: a Streamable HTTP request of protocol 2026-07-28
// must say its method (Mcp-Method) and, for tools/call, resources/read
// and prompts/get, its name (Mcp-Name), as its body does; one that does
// not is refused with 400 and HeaderMismatch (-32020), so that gateways
// routing on the headers cannot be told one thing and do another.
func TestStandardHeaders(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    mcp.ProtocolVersion20260728,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
	call := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
		"name": "execute_code", "arguments": map[string]any{"code": "1 + 1"}, "_meta": meta}}
	list := map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": map[string]any{"_meta": meta}}
	for _, tc := range []struct {
		name    string
		body    map[string]any
		headers map[string]string
		status  int
		code    int // the JSON-RPC error's code, 0 for a result
	}{
		{"call with both headers", call, map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "execute_code"}, http.StatusOK, 0},
		{"name in base64", call, map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "=?base64?ZXhlY3V0ZV9jb2Rl?="}, http.StatusOK, 0},
		{"another name", call, map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "read_tools"}, http.StatusBadRequest, mcp.HEADER_MISMATCH},
		{"no name", call, map[string]string{"Mcp-Method": "tools/call"}, http.StatusBadRequest, mcp.HEADER_MISMATCH},
		{"another method", call, map[string]string{"Mcp-Method": "tools/list", "Mcp-Name": "execute_code"}, http.StatusBadRequest, mcp.HEADER_MISMATCH},
		{"no method", list, nil, http.StatusBadRequest, mcp.HEADER_MISMATCH},
		{"list", list, map[string]string{"Mcp-Method": "tools/list"}, http.StatusOK, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(tc.body)
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+mcpserver.PathStreamable, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20260728)
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, out)
			}
			// An SSE answer carries the message on its data line.
			if i := bytes.Index(out, []byte("data: ")); i >= 0 {
				out = bytes.TrimSpace(out[i+6:])
			}
			var msg struct {
				Result json.RawMessage
				Error  *struct{ Code int }
			}
			if err := json.Unmarshal(out, &msg); err != nil {
				t.Fatalf("answer %q: %v", out, err)
			}
			switch {
			case tc.code == 0 && msg.Error != nil:
				t.Fatalf("error %d, want a result: %s", msg.Error.Code, out)
			case tc.code != 0 && (msg.Error == nil || msg.Error.Code != tc.code):
				t.Fatalf("answer %s, want error %d", out, tc.code)
			case tc.code == 0 && !strings.Contains(string(msg.Result), `"resultType":"complete"`):
				t.Errorf("result %s lacks resultType", msg.Result)
			}
		})
	}
}
