package mcpserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
)

// TestServerCard: the server card is served at the extension's location
// and at the well-known URI, without a token even when the MCP endpoints
// need one, with the fields the card's schema requires, CORS for browser
// clients, and an ETag that makes a repeated fetch a 304.
func TestServerCard(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{Version: "1.2.3", Auth: []mcpserver.Token{{Principal: "alice", Token: "alice-token-0123456789"}}})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	get := func(t *testing.T, path, etag string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+path, nil)
		req.Header.Set("Accept", mcpserver.ServerCardMediaType)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	for _, path := range []string{mcpserver.PathServerCard, mcpserver.PathServerCardWellKnown} {
		t.Run(path, func(t *testing.T) {
			resp, body := get(t, path, "")
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != mcpserver.ServerCardMediaType {
				t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			if resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Cache-Control") == "" {
				t.Errorf("headers %v lack CORS or caching", resp.Header)
			}
			var card struct {
				Schema      string `json:"$schema"`
				Name        string
				Version     string
				Description string
				Remotes     []struct {
					Type                      string
					URL                       string
					Headers                   []struct{ Name string }
					SupportedProtocolVersions []string
				}
			}
			if err := json.Unmarshal(body, &card); err != nil {
				t.Fatal(err)
			}
			if card.Schema != "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json" ||
				!regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`).MatchString(card.Name) ||
				card.Version != "1.2.3" || card.Description == "" || len(card.Description) > 100 {
				t.Errorf("card %s does not fit the schema", body)
			}
			if len(card.Remotes) != 2 {
				t.Fatalf("remotes %+v, want streamable-http and sse", card.Remotes)
			}
			sh := card.Remotes[0]
			if sh.Type != "streamable-http" || sh.URL != ts.URL+mcpserver.PathStreamable ||
				!slices.Contains(sh.SupportedProtocolVersions, mcp.ProtocolVersion20260728) ||
				!slices.Contains(sh.SupportedProtocolVersions, mcp.ProtocolVersion20251125) {
				t.Errorf("streamable-http remote %+v", sh)
			}
			if len(sh.Headers) != 1 || sh.Headers[0].Name != "Authorization" {
				t.Errorf("remote headers %+v, want Authorization (tokens are configured)", sh.Headers)
			}
			if sse := card.Remotes[1]; sse.Type != "sse" || sse.URL != ts.URL+mcpserver.PathSSE ||
				slices.Contains(sse.SupportedProtocolVersions, mcp.ProtocolVersion20260728) || !slices.Contains(sse.SupportedProtocolVersions, mcp.ProtocolVersion20251125) {
				t.Errorf("sse remote %+v", sse)
			}
			resp2, body2 := get(t, path, resp.Header.Get("ETag"))
			if resp2.StatusCode != http.StatusNotModified || len(body2) != 0 {
				t.Errorf("with its ETag: %d %q, want 304", resp2.StatusCode, body2)
			}
		})
	}
	// The MCP endpoint itself still needs the token.
	resp, _ := get(t, mcpserver.PathStreamable, "")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /mcp without a token: %d, want 401", resp.StatusCode)
	}
}
