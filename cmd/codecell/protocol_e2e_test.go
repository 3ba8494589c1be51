package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestProtocolEdges drives what the 2026-07-28 revision gives a gateway
// through the built binary: the server card, the caching hints of
// tools/list, the extension's tools/catalog and tools/describe on both
// protocol eras, and the Mcp-Method check.
func TestProtocolEdges(t *testing.T) {
	t.Parallel()
	_, base, _ := startHTTP(t, "--expose", "both")

	t.Run("server card", func(t *testing.T) {
		resp, err := http.Get(base + "/mcp/server-card")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var card struct {
			Name, Version string
			Remotes       []struct{ Type, URL string }
		}
		if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
			t.Fatal(err)
		}
		if resp.Header.Get("Content-Type") != "application/mcp-server-card+json" || card.Version != testVersion ||
			len(card.Remotes) == 0 || card.Remotes[0].URL != base+"/mcp" {
			t.Errorf("card %+v (%s)", card, resp.Header.Get("Content-Type"))
		}
	})

	t.Run("tools/list hints", func(t *testing.T) {
		c, err := client.NewStreamableHttpClient(base + "/mcp")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		initialize(t, c)
		lt, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if ttl, ok := lt.TTL(); !ok || ttl != 60000 || lt.CacheScope != mcp.CacheScopePublic {
			t.Errorf("tools/list ttl %d (%v), scope %q", ttl, ok, lt.CacheScope)
		}
	})

	post := func(t *testing.T, headers map[string]string, body map[string]any) (int, string) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/mcp", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	meta := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
	catalog := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/catalog", "params": map[string]any{"query": "echo", "_meta": meta}}
	t.Run("tools/catalog on 2026-07-28", func(t *testing.T) {
		code, out := post(t, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/catalog"}, catalog)
		if code != http.StatusOK || !strings.Contains(out, `"name":"util__echo"`) || !strings.Contains(out, `"schemaHash":"`) || !strings.Contains(out, `"ttlMs":60000`) {
			t.Errorf("%d %s", code, out)
		}
		code, out = post(t, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}, catalog)
		if code != http.StatusBadRequest || !strings.Contains(out, "-32020") {
			t.Errorf("with another Mcp-Method: %d %s, want 400 HeaderMismatch", code, out)
		}
	})
	t.Run("tools/describe on 2025-11-25", func(t *testing.T) {
		c, err := client.NewStreamableHttpClient(base + "/mcp")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
		init.Params.ClientInfo = mcp.Implementation{Name: "codecell-cmd-test", Version: "1"}
		if _, err := c.Initialize(t.Context(), init); err != nil {
			t.Fatal(err)
		}
		// The session's header, as the client sends it.
		session := c.GetSessionId()
		code, out := post(t, map[string]string{"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"},
			map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/describe", "params": map[string]any{"names": []string{"util__echo"}}})
		if code != http.StatusOK || !strings.Contains(out, `"name":"util__echo"`) || !strings.Contains(out, `"inputSchema"`) {
			t.Errorf("%d %s", code, out)
		}
	})
}
