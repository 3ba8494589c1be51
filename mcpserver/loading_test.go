package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/tools"
)

// TestLoadingSourceSaysSo (issue 20): while a source loads, the manifest,
// the instructions, read_tools, search_tools, a program and /readyz all
// say it is loading and when it should be ready; once it is done, it
// serves.
func TestLoadingSourceSaysSo(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{})
	reg := srv.Registry()
	load, err := reg.BeginLoad("github", "loading the OpenAPI description")
	if err != nil {
		t.Fatal(err)
	}
	load.Progress(tools.LoadProgress{Stage: "compiling operations", Done: 300, Total: 1200})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	c, err := client.NewStreamableHttpClient(ts.URL + mcpserver.PathStreamable)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	res, err := c.Initialize(t.Context(), init)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Instructions, "- github: 0 tools, loading (compiling operations, 300 of 1200") {
		t.Errorf("instructions do not say github is loading:\n%s", res.Instructions)
	}

	loading := "github is loading (compiling operations, 300 of 1200; ready in about"
	for _, tt := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read_tools", map[string]any{"path": "/manifest.json"}, `"github":"0 tools, loading (compiling operations, 300 of 1200; ready in about`},
		{"read_tools", map[string]any{"path": "/github/index.json"}, `"status":"loading","reason":"compiling operations, 300 of 1200; ready in about`},
		{"read_tools", map[string]any{"path": "/github/issues_list_for_repo.d.ts"}, "does not exist yet: " + loading},
		{"search_tools", map[string]any{"query": "list issues", "category": "github"}, `"not_searched":{"github":"loading (compiling operations, 300 of 1200; ready in about`},
		{"search_tools", map[string]any{"query": "list issues"}, `"github":"loading (`},
		{"search_tools", map[string]any{"query": "echo", "detail": "signature"}, "// Not searched: github is loading ("},
	} {
		got := text(callTool(t, c, tt.tool, tt.args))
		if !strings.Contains(got, tt.want) {
			t.Errorf("%s %v: lacks %q:\n%s", tt.tool, tt.args, tt.want, got)
		}
		if strings.Contains(got, "util/index.json") || strings.Contains(got, `no category "github"`) {
			t.Errorf("%s %v answers as if github did not exist:\n%s", tt.tool, tt.args, got)
		}
	}

	_, rec := execute(t, c, map[string]any{"code": `await github.issues_list_for_repo({owner: "a", repo: "b"})`})
	if rec == nil || rec.Error == nil || rec.Error.Code != tools.CodeLoading || !strings.Contains(rec.Error.Message, "github is still loading") ||
		!strings.Contains(rec.Error.Message, "Run the program again in about") {
		t.Fatalf("a call while loading: %+v", rec)
	}
	_, rec = execute(t, c, map[string]any{"code": `try { await github.issues_list_for_repo({}) } catch (e) { return e.code }`})
	if rec == nil || string(rec.Result) != `"loading"` {
		t.Errorf("a program cannot tell loading apart: %+v", rec)
	}

	// Ready once the sandbox pool is warm, whatever the source does.
	var resp *http.Response
	for deadline := time.Now().Add(60 * time.Second); ; {
		if resp, err = ts.Client().Get(ts.URL + mcpserver.PathReady); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK || time.Now().After(deadline) {
			break
		}
		resp.Body.Close()
		time.Sleep(50 * time.Millisecond)
	}
	var ready struct {
		Status  string `json:"status"`
		Sources map[string]struct {
			State  string `json:"state"`
			Detail string `json:"detail"`
			Done   int    `json:"done"`
			Total  int    `json:"total"`
		} `json:"sources"`
	}
	err = json.NewDecoder(resp.Body).Decode(&ready)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || ready.Status != "ready" || ready.Sources["github"].State != "loading" || ready.Sources["github"].Total != 1200 {
		t.Errorf("readyz %d %+v (%v): want ready with github loading", resp.StatusCode, ready, err)
	}

	if err := reg.Register(tools.Tool{Name: "github.issues_list_for_repo", Summary: "List issues.", Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`[{"number":1}]`), nil
	}}); err != nil {
		t.Fatal(err)
	}
	load.Done()
	_, rec = execute(t, c, map[string]any{"code": `(await github.issues_list_for_repo({})).length`})
	if rec == nil || rec.Status != "ok" || string(rec.Result) != "1" {
		t.Fatalf("once loaded: %+v", rec)
	}
	if got := text(callTool(t, c, "read_tools", map[string]any{"path": "/manifest.json"})); strings.Contains(got, "loading") {
		t.Errorf("the manifest still says loading: %s", got)
	}
}

// TestUnavailableNamespaceSaysWhy: a configured source that failed is a
// namespace whose calls fail as unavailable, with the reason the manifest
// gives, rather than a ReferenceError.
func TestUnavailableNamespaceSaysWhy(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{})
	reason := "command not found: npx (is Node.js installed and on PATH?)"
	if err := srv.Registry().SetCategoryStatus("brave_search", tools.CategoryStatus{Unavailable: true, Reason: reason}); err != nil {
		t.Fatal(err)
	}
	c := start(t, transports[0].connect(t, srv))
	_, rec := execute(t, c, map[string]any{"code": `await brave_search.search({q: "x"})`})
	if rec == nil || rec.Error == nil || rec.Error.Code != tools.CodeUnavailable || !strings.Contains(rec.Error.Message, "brave_search is unavailable: "+reason) {
		t.Fatalf("a call to an unavailable source: %+v", rec)
	}
}

// TestLoadWait: with LoadWait, initialize waits for the sources still
// loading, and its instructions show them ready.
func TestLoadWait(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{LoadWait: time.Minute})
	reg := srv.Registry()
	load, err := reg.BeginLoad("slow", "loading")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		_ = reg.Register(tools.Tool{Name: "slow.ping", Summary: "Ping.", Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }})
		load.Done()
	}()
	c, err := client.NewInProcessClient(srv.MCP())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	res, err := c.Initialize(t.Context(), init)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Instructions, "- slow: 1 tool") {
		t.Errorf("initialize did not wait for the source:\n%s", res.Instructions)
	}
}
