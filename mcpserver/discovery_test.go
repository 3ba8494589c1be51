package mcpserver_test

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
	"github.com/codecell/codecell/tools/catalog"
)

const testCatalog = "../testdata/catalog"

func catalogServer(t testing.TB, cfg mcpserver.Config) *mcpserver.Server {
	t.Helper()
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := catalog.LoadInto(reg, testCatalog); err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(forTests(t, cfg), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func callTool(t testing.TB, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func readResource(t testing.TB, c *client.Client, uri string) string {
	t.Helper()
	req := mcp.ReadResourceRequest{}
	req.Params.URI = uri
	res, err := c.ReadResource(t.Context(), req)
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("read %s: %d contents", uri, len(res.Contents))
	}
	tc, ok := res.Contents[0].(mcp.TextResourceContents)
	if !ok {
		t.Fatalf("read %s: %T", uri, res.Contents[0])
	}
	return tc.Text
}

// TestDiscoveryLoop walks the whole loop an agent follows: list the tools
// (only code mode's), read the manifest and a template resource, search,
// then run a program that calls the tool it found.
func TestDiscoveryLoop(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := catalogServer(t, mcpserver.Config{})
			c := start(t, tr.connect(t, srv))

			list, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range list.Tools {
				names = append(names, tool.Name)
			}
			sort.Strings(names)
			if strings.Join(names, ",") != "execute_code,read_tools,search_tools" {
				t.Fatalf("code mode lists %v", names)
			}

			manifest := readResource(t, c, "codecell://tools/manifest.json")
			if !strings.Contains(manifest, `"github"`) || len(manifest) > 1024 {
				t.Errorf("manifest (%d bytes): %s", len(manifest), manifest)
			}
			index := readResource(t, c, "codecell://tools/github/index.json")
			if !strings.Contains(index, "search_issues") {
				t.Errorf("github index lacks search_issues: %s", index)
			}

			hits := text(callTool(t, c, "search_tools", map[string]any{"query": "open bugs in a repo"}))
			var found struct {
				Hits []struct {
					Name string `json:"name"`
					Cost struct {
						SignaturePath string `json:"signature_path"`
					} `json:"cost"`
				} `json:"hits"`
			}
			if err := json.Unmarshal([]byte(hits), &found); err != nil || len(found.Hits) == 0 {
				t.Fatalf("search_tools: %v %s", err, hits)
			}
			top := found.Hits[0]
			if top.Name != "github.search_issues" {
				t.Fatalf("top hit %s, want github.search_issues (%s)", top.Name, hits)
			}

			sig := readResource(t, c, "codecell://tools/"+strings.TrimPrefix(top.Cost.SignaturePath, "/"))
			if !strings.Contains(sig, "function search_issues") {
				t.Errorf("signature: %s", sig)
			}
			if sig2 := text(callTool(t, c, "read_tools", map[string]any{"path": "/github/search_issues.d.ts"})); sig2 != sig {
				t.Errorf("read_tools and the resource disagree")
			}

			_, rec := execute(t, c, map[string]any{"code": `
const r = await github.search_issues({query: "repo:acme/api is:issue is:open label:bug", per_page: 2});
return r.items.map(i => i.number);`})
			if rec == nil || rec.Status != executor.StatusOK || !strings.HasPrefix(string(rec.Result), "[") {
				t.Fatalf("program calling the found tool: %+v", rec)
			}
		})
	}
}

func TestReadToolsRecoversFromTypos(t *testing.T) {
	t.Parallel()
	srv := catalogServer(t, mcpserver.Config{})
	c := start(t, transports[0].connect(t, srv))
	tests := []struct {
		path    string
		isError bool
		want    []string
	}{
		{path: "/", want: []string{`"github"`, `"bytes"`}},
		{path: "/github", want: []string{"search_issues.d.ts"}},
		{path: "codecell://tools/github/index.json", want: []string{"search_issues"}},
		{path: "/github/search_isues.d.ts", isError: true, want: []string{"did you mean", "search_issues.d.ts"}},
		{path: "/githb/index.json", isError: true, want: []string{"github"}},
		// A name in other words: the tool search_tools ranks first for them.
		{path: "/payments/reimburse_payment.d.ts", isError: true, want: []string{"did you mean", "payments/refund_charge.d.ts"}},
		{path: "/github/open_bug.md", isError: true, want: []string{"did you mean", "github/create_issue.md"}},
		{path: "/github/../etc/passwd", isError: true, want: []string{".."}},
	}
	for _, tt := range tests {
		res := callTool(t, c, "read_tools", map[string]any{"path": tt.path})
		if res.IsError != tt.isError {
			t.Errorf("%s: isError %v: %s", tt.path, res.IsError, text(res))
		}
		for _, w := range tt.want {
			if !strings.Contains(text(res), w) {
				t.Errorf("%s: %q lacks %q", tt.path, text(res), w)
			}
		}
	}
	if res := callTool(t, c, "read_tools", map[string]any{}); !res.IsError {
		t.Error("read_tools without a path succeeded")
	}
	if res := callTool(t, c, "search_tools", map[string]any{"query": "x", "detail": "everything"}); !res.IsError || !strings.Contains(text(res), "detail") {
		t.Errorf("bad detail: %s", text(res))
	}
}

func TestCompletionsAndPrompt(t *testing.T) {
	t.Parallel()
	srv := catalogServer(t, mcpserver.Config{})
	c := start(t, transports[0].connect(t, srv))
	complete := func(arg, value string, ctx map[string]string) []string {
		req := mcp.CompleteRequest{}
		req.Params.Ref = mcp.ResourceReference{Type: "ref/resource", URI: "codecell://tools/{category}/{tool}.d.ts"}
		req.Params.Argument.Name = arg
		req.Params.Argument.Value = value
		if ctx != nil {
			req.Params.Context.Arguments = ctx
		}
		res, err := c.Complete(t.Context(), req)
		if err != nil {
			t.Fatalf("complete %s: %v", arg, err)
		}
		return res.Completion.Values
	}
	if got := complete("category", "gi", nil); strings.Join(got, ",") != "github" {
		t.Errorf("category completions %v", got)
	}
	if got := complete("tool", "search", map[string]string{"category": "github"}); len(got) == 0 || got[0] != "search_issues" {
		t.Errorf("tool completions %v", got)
	}

	p, err := c.GetPrompt(t.Context(), mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "code-mode"}})
	if err != nil {
		t.Fatal(err)
	}
	body := p.Messages[0].Content.(mcp.TextContent).Text
	if tokens := len(body) / 4; tokens > 400 || !strings.Contains(body, "read_tools") {
		t.Errorf("code-mode prompt: ~%d tokens", tokens)
	}
}

func TestCatalogueChangesAreAnnounced(t *testing.T) {
	t.Parallel()
	srv := catalogServer(t, mcpserver.Config{})
	// resources/subscribe belongs to protocol versions before 2026-07-28.
	c := startVersion(t, transports[0].connect(t, srv), "2025-11-25")
	got, handler := collect("notifications/resources/list_changed")
	updated, onUpdated := collect("notifications/resources/updated")
	c.OnNotification(func(n mcp.JSONRPCNotification) { handler(n); onUpdated(n) })
	sub := mcp.SubscribeRequest{}
	sub.Params.URI = "codecell://tools/manifest.json"
	//lint:ignore SA1019 resources/subscribe is what clients of protocol versions before 2026-07-28 use.
	if err := c.Subscribe(t.Context(), sub); err != nil {
		t.Fatal(err)
	}
	err := srv.Registry().Register(tools.Tool{Name: "fresh.tool", Summary: "A tool added at run time.", Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`1`), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	got.wait(t)
	if u := updated.wait(t); u[0].Params.AdditionalFields["uri"] != "codecell://tools/manifest.json" {
		t.Errorf("updated %+v", u[0].Params.AdditionalFields)
	}
	if idx := text(callTool(t, c, "read_tools", map[string]any{"path": "/fresh/index.json"})); !strings.Contains(idx, "tool") {
		t.Errorf("new category not in the tree: %s", idx)
	}
}
