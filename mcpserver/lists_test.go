package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/upstream"
)

// fakeBridge is a Bridge whose servers' prompts, resources and
// templates are fixed lists; what it is asked is its functions'.
type fakeBridge struct {
	prompts   []upstream.Prompt
	resources []upstream.Resource
	templates []upstream.ResourceTemplate
	getPrompt func(category, name string) (*mcp.GetPromptResult, error)

	mu       sync.Mutex
	listener func(upstream.Event)
}

func (b *fakeBridge) Prompts() []upstream.Prompt {
	return append([]upstream.Prompt(nil), b.prompts...)
}
func (b *fakeBridge) Resources() []upstream.Resource {
	return append([]upstream.Resource(nil), b.resources...)
}
func (b *fakeBridge) ResourceTemplates() []upstream.ResourceTemplate {
	return append([]upstream.ResourceTemplate(nil), b.templates...)
}
func (b *fakeBridge) GetPrompt(_ context.Context, category, name string, _ map[string]string) (*mcp.GetPromptResult, error) {
	return b.getPrompt(category, name)
}
func (b *fakeBridge) ReadResource(_ context.Context, _, uri string) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, Text: "ok"}}}, nil
}
func (b *fakeBridge) Subscribe(context.Context, string, string) (bool, error) { return true, nil }
func (b *fakeBridge) SetListener(f func(upstream.Event)) {
	b.mu.Lock()
	b.listener = f
	b.mu.Unlock()
}
func (b *fakeBridge) send(e upstream.Event) {
	b.mu.Lock()
	f := b.listener
	b.mu.Unlock()
	f(e)
}

// logBuffer is a logger whose lines can be read back.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestListsArePaged (attack15 L2): a bridged server's 10,000 prompts made
// every client's prompts/list a 16 MB answer. Each list is now paged —
// the first page an ordinary answer, the rest by nextCursor, every entry
// once, in the order of a key unique in it (resources of one name are
// not lost at a page's edge) — and of each bridged server the first
// Config.BridgedListed prompts are served and as many resources and
// templates listed, with a warning that names the setting.
func TestListsArePaged(t *testing.T) {
	t.Parallel()
	desc := strings.Repeat("d", 1500)
	b := &fakeBridge{getPrompt: func(string, string) (*mcp.GetPromptResult, error) { return &mcp.GetPromptResult{}, nil }}
	for i := range 1000 {
		b.prompts = append(b.prompts, upstream.Prompt{Category: "many", Prompt: mcp.Prompt{Name: fmt.Sprintf("p%04d", i), Description: desc}})
		b.resources = append(b.resources, upstream.Resource{Category: "many", Resource: mcp.Resource{URI: fmt.Sprintf("mem://r%04d", i), Name: "same"}})
		b.templates = append(b.templates, upstream.ResourceTemplate{Category: "many", Template: mcp.NewResourceTemplate(fmt.Sprintf("mem://t%04d/{x}", i), "same")})
	}
	b.prompts = append(b.prompts, upstream.Prompt{Category: "few", Prompt: mcp.Prompt{Name: "hello"}})
	var logs logBuffer
	srv, err := mcpserver.New(forTests(t, mcpserver.Config{Bridge: b, ListPageSize: 100, Logger: slog.New(slog.NewTextHandler(&logs, nil))}), tools.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c := start(t, transports[1].connect(t, srv))

	first, err := c.ListPromptsByPage(t.Context(), mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Prompts) != 100 || first.NextCursor == "" {
		t.Fatalf("the first page of prompts/list: %d prompts, next cursor %q; want 100 and a cursor", len(first.Prompts), first.NextCursor)
	}
	if raw, _ := json.Marshal(first); len(raw) > 256<<10 {
		t.Errorf("the first page of prompts/list is %d bytes", len(raw))
	}
	collect := func(what string, list func(cursor mcp.Cursor) ([]string, mcp.Cursor, error)) map[string]int {
		seen := map[string]int{}
		var cursor mcp.Cursor
		for pages := 0; ; pages++ {
			if pages > 50 {
				t.Fatalf("%s: more than 50 pages", what)
			}
			keys, next, err := list(cursor)
			if err != nil {
				t.Fatalf("%s after %q: %v", what, cursor, err)
			}
			if len(keys) > 100 {
				t.Fatalf("%s: a page of %d", what, len(keys))
			}
			for _, k := range keys {
				seen[k]++
				if seen[k] > 1 {
					t.Fatalf("%s: %s listed twice", what, k)
				}
			}
			if next == "" {
				return seen
			}
			cursor = next
		}
	}
	count := func(seen map[string]int, prefix string) int {
		n := 0
		for k := range seen {
			if strings.HasPrefix(k, prefix) {
				n++
			}
		}
		return n
	}
	prompts := collect("prompts/list", func(cur mcp.Cursor) ([]string, mcp.Cursor, error) {
		req := mcp.ListPromptsRequest{}
		req.Params.Cursor = cur
		r, err := c.ListPromptsByPage(t.Context(), req)
		if err != nil {
			return nil, "", err
		}
		var out []string
		for _, p := range r.Prompts {
			out = append(out, p.Name)
		}
		return out, r.NextCursor, nil
	})
	if n := count(prompts, "many__"); n != mcpserver.DefaultBridgedListed {
		t.Errorf("prompts of the server of 1,000 listed: %d, want %d", n, mcpserver.DefaultBridgedListed)
	}
	if prompts["few__hello"] != 1 || prompts["many__p0000"] != 1 || prompts["code-mode"] != 1 {
		t.Errorf("prompts listed: few__hello %d, many__p0000 %d, code-mode %d", prompts["few__hello"], prompts["many__p0000"], prompts["code-mode"])
	}
	resources := collect("resources/list", func(cur mcp.Cursor) ([]string, mcp.Cursor, error) {
		req := mcp.ListResourcesRequest{}
		req.Params.Cursor = cur
		r, err := c.ListResourcesByPage(t.Context(), req)
		if err != nil {
			return nil, "", err
		}
		var out []string
		for _, res := range r.Resources {
			out = append(out, res.URI)
		}
		return out, r.NextCursor, nil
	})
	if n := count(resources, mcpserver.UpstreamPrefix+"many/"); n != mcpserver.DefaultBridgedListed {
		t.Errorf("resources of one name of the server of 1,000 listed: %d, want %d", n, mcpserver.DefaultBridgedListed)
	}
	templates := collect("resources/templates/list", func(cur mcp.Cursor) ([]string, mcp.Cursor, error) {
		req := mcp.ListResourceTemplatesRequest{}
		req.Params.Cursor = cur
		r, err := c.ListResourceTemplatesByPage(t.Context(), req)
		if err != nil {
			return nil, "", err
		}
		var out []string
		for _, tm := range r.ResourceTemplates {
			out = append(out, tm.URITemplate.Raw())
		}
		return out, r.NextCursor, nil
	})
	if n := count(templates, mcpserver.UpstreamPrefix+"many/"); n != mcpserver.DefaultBridgedListed {
		t.Errorf("templates of the server of 1,000 listed: %d, want %d", n, mcpserver.DefaultBridgedListed)
	}
	if count(templates, mcpserver.ResourcePrefix) == 0 {
		t.Errorf("codecell's own templates are not listed: %v", templates)
	}
	// mcp-go's client follows nextCursor by itself.
	if whole, err := c.ListPrompts(t.Context(), mcp.ListPromptsRequest{}); err != nil || len(whole.Prompts) != len(prompts) {
		t.Errorf("mcp-go's ListPrompts, which follows the cursors: %d prompts, %v; want %d", len(whole.Prompts), err, len(prompts))
	}
	// Code mode's three tools are one page.
	tl, err := c.ListToolsByPage(t.Context(), mcp.ListToolsRequest{})
	if err != nil || len(tl.Tools) != 3 || tl.NextCursor != "" {
		t.Errorf("tools/list: %d tools, next %q, %v", len(tl.Tools), tl.NextCursor, err)
	}
	// A prompt past the bound is not served.
	if _, err := c.GetPrompt(t.Context(), mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "many__p0999"}}); err == nil {
		t.Error("a prompt past the bound was served")
	}
	if l := logs.String(); !strings.Contains(l, "limits.bridged_listed") || !strings.Contains(l, "left_out=744") {
		t.Errorf("no warning names the bound: %s", l)
	}
}

// TestBridgedPromptNamesAreOneEach (attack15): a bridged prompt is named
// category + "__" + its name, and categories may hold "_": a's prompt
// "__x" and a_'s prompt "_x" are both a____x, and the later replaced the
// earlier. The first by category is served, and the other is logged.
func TestBridgedPromptNamesAreOneEach(t *testing.T) {
	t.Parallel()
	var asked []string
	var mu sync.Mutex
	b := &fakeBridge{
		prompts: []upstream.Prompt{{Category: "a_", Prompt: mcp.Prompt{Name: "_x"}}, {Category: "a", Prompt: mcp.Prompt{Name: "__x"}}},
		getPrompt: func(category, name string) (*mcp.GetPromptResult, error) {
			mu.Lock()
			asked = append(asked, category+" "+name)
			mu.Unlock()
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("from " + category)}}}, nil
		},
	}
	var logs logBuffer
	srv, err := mcpserver.New(forTests(t, mcpserver.Config{Bridge: b, Logger: slog.New(slog.NewTextHandler(&logs, nil))}), tools.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c := start(t, transports[0].connect(t, srv))
	if _, err := c.GetPrompt(t.Context(), mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "a____x"}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[0] != "a __x" {
		t.Errorf("prompts/get a____x asked the bridge for %v, want category a's __x (the first by category)", asked)
	}
	if l := logs.String(); !strings.Contains(l, "prompt=a____x") || !strings.Contains(l, "category=a_") || !strings.Contains(l, "served_for=a") {
		t.Errorf("the collision is not logged: %s", l)
	}
}

// TestBridgedUpdatesReachOnlyTheCategory (attack15): a session that
// cannot reach a bridged server's category subscribed to one of its
// resources by a URI it named itself, and was told when the server said
// the resource changed. A subscription is followed only for a caller
// that reaches the category.
func TestBridgedUpdatesReachOnlyTheCategory(t *testing.T) {
	t.Parallel()
	reg := tools.NewRegistry()
	for _, name := range []string{"secret.get", "open.get"} {
		if err := reg.Register(tools.Tool{Name: name, Summary: "Get.", Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`1`), nil }}); err != nil {
			t.Fatal(err)
		}
	}
	b := &fakeBridge{}
	srv, err := mcpserver.New(forTests(t, mcpserver.Config{
		Bridge: b,
		Auth:   []mcpserver.Token{{Principal: "reader", Token: readerToken}, {Principal: "writer", Token: writerToken}},
		Access: engine.Access{Principals: map[string]engine.AccessRule{"reader": {Deny: []string{"secret.*"}}}},
	}), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	connect := func(token string) chan string {
		//lint:ignore SA1019 protocol 2025-11-25 sends resources/updated on the standalone GET stream
		c, err := client.NewStreamableHttpClient(ts.URL+mcpserver.PathStreamable, transport.WithContinuousListening(),
			transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
		if err != nil {
			t.Fatal(err)
		}
		updated := make(chan string, 16)
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == string(mcp.MethodNotificationResourceUpdated) {
				uri, _ := n.Params.AdditionalFields["uri"].(string)
				updated <- uri
			}
		})
		start(t, c)
		for _, uri := range []string{mcpserver.UpstreamPrefix + "secret/mem://x", mcpserver.UpstreamPrefix + "open/mem://y"} {
			//lint:ignore SA1019 resources/subscribe is how protocol 2025-11-25 subscribes
			if err := c.Subscribe(t.Context(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}}); err != nil {
				t.Fatal(err)
			}
		}
		return updated
	}
	writer, reader := connect(writerToken), connect(readerToken)
	b.send(upstream.Event{Category: "secret", Updated: "mem://x"})
	b.send(upstream.Event{Category: "open", Updated: "mem://y"})
	next := func(who string, ch chan string) string {
		select {
		case uri := <-ch:
			return uri
		case <-time.After(30 * time.Second): // a bound for a broken build, not a timing
			t.Fatalf("%s: no resources/updated", who)
			return ""
		}
	}
	if got := next("writer", writer); got != mcpserver.UpstreamPrefix+"secret/mem://x" {
		t.Errorf("writer's first update: %s", got)
	}
	// Notifications of a session arrive in order: the reader's first is
	// the category it reaches.
	if got := next("reader", reader); got != mcpserver.UpstreamPrefix+"open/mem://y" {
		t.Errorf("the reader, denied secret.*, was told of %s", got)
	}
}
