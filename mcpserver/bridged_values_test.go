package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
	"github.com/codecell/codecell/tools/upstream"
)

// hostileFeatures is an upstream MCP server over Streamable HTTP with the
// resources mem://dense and mem://small and the prompts dense and small:
// each answers one small content or message and, under its _meta, n
// empty objects (dense) or a secret-looking marker (small) — attack10
// E3's server.
func hostileFeatures(t *testing.T, n int) string {
	t.Helper()
	dense := `{"v":[` + strings.Repeat("{},", n-1) + `{}]}`
	small := `{"upstream.example/marker":"meta-of-the-upstream"}`
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				URI  string `json:"uri"`
				Name string `json:"name"`
			} `json:"params"`
		}
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || json.Unmarshal(b, &msg) != nil {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if len(msg.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		meta := small
		if msg.Params.URI == "mem://dense" || msg.Params.Name == "dense" {
			meta = dense
		}
		var result string
		switch msg.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"resources":{},"prompts":{}},"serverInfo":{"name":"hostile","version":"1"}}`
		case "tools/list":
			result = `{"tools":[{"name":"get","inputSchema":{"type":"object"}}]}`
		case "resources/list":
			result = `{"resources":[{"uri":"mem://dense","name":"dense"},{"uri":"mem://small","name":"small"}]}`
		case "prompts/list":
			result = `{"prompts":[{"name":"dense"},{"name":"small"}]}`
		case "resources/read":
			result = fmt.Sprintf(`{"contents":[{"uri":%q,"mimeType":"text/plain","text":"ok","_meta":%s}],"_meta":%s}`, msg.Params.URI, meta, meta)
		case "prompts/get":
			result = `{"messages":[{"role":"user","content":{"type":"text","text":"ok","_meta":` + meta + `}}],"_meta":` + meta + `}`
		default:
			result = `{}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// TestBridgedAnswersHeld (issue 19, attack10 E3): a bridged server's
// resource or prompt is held, for the request that reads it, as its bytes
// plus 128 a JSON value of the server's results in flight, before it is
// decoded: one of 400,000 values under _meta (51 MB once decoded, past
// the principal's 36 MiB share) is refused naming the limit, one of a few
// values is read — without the server's _meta — and what a read holds is
// given back when it is answered.
func TestBridgedAnswersHeld(t *testing.T) {
	t.Parallel()
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	src, err := upstream.Start(upstream.Config{
		Servers:  map[string]upstream.Server{"hostile": {URL: hostileFeatures(t, 400_000), MaxResponseBytes: 4 << 20}},
		Registry: reg,
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a bound for a broken build, not a timing
	defer cancel()
	if err := src.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(forTests(t, mcpserver.Config{Bridge: src, Limits: engine.Limits{ResultBytesInFlight: 48 << 20}}), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c := transports[1].connect(t, srv)
	start(t, c)

	const dense, small = mcpserver.UpstreamPrefix + "hostile/mem://dense", mcpserver.UpstreamPrefix + "hostile/mem://small"
	_, err = c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: dense}})
	if err == nil || !strings.Contains(err.Error(), "JSON value") || !strings.Contains(err.Error(), "limits.result_bytes_in_flight") {
		t.Fatalf("a resource of 400,000 values: %v", err)
	}
	_, err = c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "hostile__dense"}})
	if err == nil || !strings.Contains(err.Error(), "JSON value") || !strings.Contains(err.Error(), "limits.result_bytes_in_flight") {
		t.Fatalf("a prompt of 400,000 values: %v", err)
	}
	// Twenty reads one after the other: each holds the server's
	// max_response_bytes (4 MiB) while it is read, 80 MiB together were
	// none given back.
	for i := range 20 {
		rr, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: small}})
		if err != nil {
			t.Fatalf("read %d of a small resource: %v", i, err)
		}
		b, _ := json.Marshal(rr)
		if i == 0 && (strings.Contains(string(b), "meta-of-the-upstream") || !strings.Contains(string(b), `"text":"ok"`)) {
			t.Errorf("a small resource as read: %s", b)
		}
		p, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "hostile__small"}})
		if err != nil {
			t.Fatalf("get %d of a small prompt: %v", i, err)
		}
		b, _ = json.Marshal(p)
		if i == 0 && (strings.Contains(string(b), "meta-of-the-upstream") || !strings.Contains(string(b), `"text":"ok"`)) {
			t.Errorf("a small prompt as got: %s", b)
		}
	}
}
