package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestBridgedPromptsAndResources: the built binary bridging the reference
// server-everything serves its prompts and resources too, named by the
// server's category, to clients of both protocol eras: listed, got and
// read through codecell, with the server's text through the output
// filter, and a toolset that does not reach the server hides them.
func TestBridgedPromptsAndResources(t *testing.T) {
	t.Parallel()
	node, dir := upstreamNode(t)
	work := t.TempDir()
	config := map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": node, "args": []string{serverScript(dir, "server-everything"), "stdio"}},
	}}
	b, _ := json.Marshal(config)
	mcpConfig := filepath.Join(work, "mcp.json")
	if err := os.WriteFile(mcpConfig, b, 0o600); err != nil {
		t.Fatal(err)
	}
	toml := filepath.Join(work, "codecell.toml")
	if err := os.WriteFile(toml, []byte(`
[[auth.tokens]]
principal = "alice"
token = "alice-token-0123456789abcdef"
[[auth.tokens]]
principal = "bob"
token = "bob-token-0123456789abcdef"
[access.principal.bob]
allow = ["util.*"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serveUpstreams(t, nil, "--mcp-config", mcpConfig, "--config", toml)

	connect := func(t *testing.T, token, version string) *client.Client {
		t.Helper()
		c, err := client.NewStreamableHttpClient(s.base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = version
		init.Params.ClientInfo = mcp.Implementation{Name: "codecell-cmd-test", Version: "1"}
		if _, err := c.Initialize(ctx, init); err != nil {
			t.Fatal(err)
		}
		return c
	}
	const prompt, resource = "everything__args-prompt", "codecell://upstream/everything/demo://resource/static/document/features.md"

	for _, version := range []string{mcp.ProtocolVersion20260728, mcp.ProtocolVersion20251125} {
		t.Run(version, func(t *testing.T) {
			c := connect(t, "alice-token-0123456789abcdef", version)
			ctx := t.Context()
			var names []string
			eventuallyTrue(t, "the bridged prompts are listed", func() bool {
				lp, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
				if err != nil {
					t.Fatal(err)
				}
				names = names[:0]
				for _, p := range lp.Prompts {
					names = append(names, p.Name)
				}
				return slices.Contains(names, prompt)
			})
			if !slices.Contains(names, "code-mode") || !slices.Contains(names, "everything__simple-prompt") {
				t.Errorf("prompts %v", names)
			}
			// The server's text passes the filter: an e-mail address in
			// an argument comes back in its message as a token.
			gp, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: prompt, Arguments: map[string]string{"city": "alice.smith@example.com", "state": "CA"}}})
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			for _, m := range gp.Messages {
				if tc, ok := m.Content.(mcp.TextContent); ok {
					texts = append(texts, tc.Text)
				}
			}
			all := strings.Join(texts, "\n")
			if !strings.Contains(all, "CA") || strings.Contains(all, "alice.smith@example.com") || !strings.Contains(all, "⟦") {
				t.Errorf("prompt messages %q: want the address as a token", all)
			}

			lr, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var uris []string
			for _, r := range lr.Resources {
				uris = append(uris, r.URI)
			}
			if !slices.Contains(uris, resource) || !slices.Contains(uris, "codecell://tools/manifest.json") {
				t.Fatalf("resources %v", uris)
			}
			rr, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: resource}})
			if err != nil {
				t.Fatal(err)
			}
			if tc, ok := rr.Contents[0].(mcp.TextResourceContents); !ok || tc.URI != resource || len(tc.Text) < 100 {
				t.Errorf("read %+v", rr.Contents)
			}
			lt, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var tmpls []string
			for _, tm := range lt.ResourceTemplates {
				tmpls = append(tmpls, tm.URITemplate.Raw())
			}
			const dyn = "codecell://upstream/everything/demo://resource/dynamic/text/{resourceId}"
			if !slices.Contains(tmpls, dyn) {
				t.Fatalf("templates %v", tmpls)
			}
			// A URI of the server's template, read through codecell.
			rr, err = c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "codecell://upstream/everything/demo://resource/dynamic/text/7"}})
			if err != nil {
				t.Fatal(err)
			}
			if tc, ok := rr.Contents[0].(mcp.TextResourceContents); !ok || !strings.Contains(tc.Text, "7") {
				t.Errorf("read of a templated URI: %+v", rr.Contents)
			}
		})
	}

	t.Run("a subscription reaches the server and its updates come back", func(t *testing.T) {
		//lint:ignore SA1019 protocol 2025-11-25 sends resources/updated on the standalone GET stream
		c, err := client.NewStreamableHttpClient(s.base+"/mcp", transport.WithContinuousListening(),
			transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer alice-token-0123456789abcdef"}))
		if err != nil {
			t.Fatal(err)
		}
		updated := make(chan string, 16)
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == string(mcp.MethodNotificationResourceUpdated) {
				uri, _ := n.Params.AdditionalFields["uri"].(string)
				select {
				case updated <- uri:
				default:
				}
			}
		})
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
		init.Params.ClientInfo = mcp.Implementation{Name: "codecell-cmd-test", Version: "1"}
		if _, err := c.Initialize(t.Context(), init); err != nil {
			t.Fatal(err)
		}
		//lint:ignore SA1019 resources/subscribe is how protocol 2025-11-25 subscribes (2026-07-28 has subscriptions/listen)
		if err := c.Subscribe(t.Context(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: resource}}); err != nil {
			t.Fatal(err)
		}
		// server-everything sends updates of the subscribed resources,
		// at once and every 5 s, once its tool turns them on.
		if isErr, _, txt := callExecute(t, c, map[string]any{"code": `await everything.toggle_subscriber_updates({})`}); isErr {
			t.Fatalf("toggle: %s", txt)
		}
		select {
		case uri := <-updated:
			if uri != resource {
				t.Errorf("resources/updated for %q, want %q", uri, resource)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no resources/updated within 20 s")
		}
	})

	t.Run("a toolset without the server hides them", func(t *testing.T) {
		c := connect(t, "bob-token-0123456789abcdef", mcp.ProtocolVersion20260728)
		ctx := t.Context()
		lp, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range lp.Prompts {
			if strings.HasPrefix(p.Name, "everything__") {
				t.Errorf("bob lists %s", p.Name)
			}
		}
		if _, err := c.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "everything__simple-prompt"}}); err == nil {
			t.Error("bob got everything__simple-prompt")
		}
		lr, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range lr.Resources {
			if strings.HasPrefix(r.URI, "codecell://upstream/") {
				t.Errorf("bob lists %s", r.URI)
			}
		}
		if _, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: resource}}); err == nil {
			t.Error("bob read a resource of everything")
		}
	})
}
