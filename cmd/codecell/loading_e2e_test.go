package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
)

// TestLoadingWindow (issue 20) drives the built binary through the time
// an OpenAPI source takes to load — here, until the test lets its
// description be fetched: the manifest names the source as loading,
// read_tools, search_tools and a program's call say so, /readyz lists
// it; then it serves.
func TestLoadingWindow(t *testing.T) {
	t.Parallel()
	spec, err := os.ReadFile(openAPISpec)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	described := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/yaml")
		w.Write(spec)
	}))
	t.Cleanup(described.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	a := newLocalAPI(t)
	cfg := filepath.Join(t.TempDir(), "codecell.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[openapi.gh]\nspec = %q\nbase_url = %q\n", described.URL+"/openapi.yaml", a.URL)), 0o600)
	s := serveUpstreams(t, nil, "--config", cfg)

	c, err := client.NewStreamableHttpClient(s.base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initialize(t, c)

	loading := "gh is loading (loading the OpenAPI description; loading for "
	for _, tt := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read_tools", map[string]any{"path": "/manifest.json"}, `"gh":"0 tools, loading (loading the OpenAPI description; loading for `},
		{"read_tools", map[string]any{"path": "/gh/index.json"}, `"status":"loading","reason":"loading the OpenAPI description; loading for `},
		{"read_tools", map[string]any{"path": "/gh/repos_get.d.ts"}, "does not exist yet: " + loading},
		{"search_tools", map[string]any{"query": "get a repository", "category": "gh"}, `"not_searched":{"gh":"loading (loading the OpenAPI description; loading for `},
	} {
		if got := callTool(t, c, tt.tool, tt.args); !strings.Contains(got, tt.want) {
			t.Errorf("%s %v while loading: lacks %q:\n%s", tt.tool, tt.args, tt.want, got)
		}
	}
	isErr, rec, txt := callExecute(t, c, map[string]any{"code": `await gh.repos_get({owner: "octo", repo: "hello"})`})
	if !isErr || rec.Error == nil || rec.Error.Code != "loading" || !strings.Contains(rec.Error.Message, "gh is still loading") {
		t.Errorf("a call while loading: %s", txt)
	}
	resp, err := http.Get(s.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	var ready struct {
		Status  string                       `json:"status"`
		Sources map[string]map[string]string `json:"sources"`
	}
	err = json.NewDecoder(resp.Body).Decode(&ready)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || ready.Sources["gh"]["state"] != "loading" {
		t.Errorf("readyz while loading: %d %+v (%v)", resp.StatusCode, ready, err)
	}

	close(release)
	eventuallyTrue(t, "gh loaded", func() bool {
		return !strings.Contains(callTool(t, c, "read_tools", map[string]any{"path": "/manifest.json"}), "loading")
	})
	isErr, rec, txt = callExecute(t, c, map[string]any{"code": `(await gh.repos_get({owner: "octo", repo: "hello"})).full_name`})
	if isErr || string(rec.Result) != `"octo/hello"` {
		t.Errorf("a call once loaded: %s", txt)
	}
	if got := callTool(t, c, "search_tools", map[string]any{"query": "get a repository", "category": "gh"}); strings.Contains(got, "not_searched") || !strings.Contains(got, "gh.repos_get") {
		t.Errorf("search once loaded:\n%s", got)
	}
}
