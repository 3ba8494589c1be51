package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
)

func newServer(t testing.TB, cfg mcpserver.Config, sandbox ...executor.Config) *mcpserver.Server {
	t.Helper()
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(forTests(t, cfg, sandbox...), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// forTests gives cfg an executor, configured by sandbox when given, that
// is closed after the server. Runs get a generous default deadline: under
// -race on a loaded two-core machine the engine is ten times slower.
// Tests of the deadline pass timeout_ms.
func forTests(t testing.TB, cfg mcpserver.Config, sandbox ...executor.Config) mcpserver.Config {
	t.Helper()
	var ec executor.Config
	if len(sandbox) > 0 {
		ec = sandbox[0]
	}
	if ec.Timeout == 0 {
		ec.Timeout = 30 * time.Second
	}
	exec, err := executor.New(ec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Close() })
	cfg.Executor = exec
	return cfg
}

// transports connect an MCP client to a server in each way codecell
// serves: in-process, Streamable HTTP and SSE.
var transports = []struct {
	name    string
	connect func(t testing.TB, srv *mcpserver.Server) *client.Client
}{
	{"inprocess", func(t testing.TB, srv *mcpserver.Server) *client.Client {
		c, err := client.NewInProcessClient(srv.MCP())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}},
	{"streamable-http", func(t testing.TB, srv *mcpserver.Server) *client.Client {
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		c, err := client.NewStreamableHttpClient(ts.URL + mcpserver.PathStreamable)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}},
	{"sse", func(t testing.TB, srv *mcpserver.Server) *client.Client {
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		c, err := client.NewSSEMCPClient(ts.URL + mcpserver.PathSSE)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}},
}

func start(t testing.TB, c *client.Client) *client.Client {
	t.Helper()
	return startVersion(t, c, mcp.LATEST_PROTOCOL_VERSION)
}

// startVersion starts c and initializes it with a protocol version.
func startVersion(t testing.TB, c *client.Client, version string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The SSE client keeps its stream on the context given to Start.
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "codecell-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

// execute calls execute_code and decodes the run record.
func execute(t testing.TB, c *client.Client, args map[string]any) (*mcp.CallToolResult, *engine.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "execute_code"
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("call execute_code: %v", err)
	}
	if res.StructuredContent == nil {
		return res, nil
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var rec engine.Record
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("structured content is not a run record: %v\n%s", err, b)
	}
	return res, &rec
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestExecuteCodeOverTransports(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		args    map[string]any
		wantErr bool
		result  string        // the result as JSON, for successful runs
		kind    executor.Kind // the error kind, for failed runs
		check   func(t testing.TB, rec *engine.Record)
		inText  string // the text content must contain this
	}{
		{name: "result", args: map[string]any{"code": "1 + 1"}, result: "2", inText: `"status":"ok"`},
		{name: "tool call", args: map[string]any{"code": `const r = await util.echo({text: "hi"}); return r.text`}, result: `"hi"`,
			check: func(t testing.TB, rec *engine.Record) {
				if len(rec.Calls) != 1 || rec.Calls[0].Tool != "util.echo" || rec.Calls[0].Calls != 1 || rec.Calls[0].Failed != 0 {
					t.Errorf("calls %+v", rec.Calls)
				}
			}},
		{name: "promise all", args: map[string]any{"code": `const rs = await Promise.all([1, 2, 3].map(i => util.echo({text: String(i)}))); rs.map(r => r.text).join("")`}, result: `"123"`,
			check: func(t testing.TB, rec *engine.Record) {
				if rec.Stats.ToolCalls != 3 {
					t.Errorf("tool calls %d", rec.Stats.ToolCalls)
				}
			}},
		{name: "typescript", args: map[string]any{"code": "interface R { text: string }\nconst r: R = await util.echo({text: 'ts'});\nr.text", "language": "typescript"}, result: `"ts"`},
		{name: "console", args: map[string]any{"code": `console.log("one"); console.warn("two", {n: 2}); 3`}, result: "3", inText: `{"level":"warn","message":"two {\"n\":2}"}`,
			check: func(t testing.TB, rec *engine.Record) {
				if len(rec.Logs) != 2 || rec.Logs[0].Message != "one" || rec.Logs[1].Level != "warn" {
					t.Errorf("logs %+v", rec.Logs)
				}
			}},
		{name: "syntax error", args: map[string]any{"code": "let x = ;"}, wantErr: true, kind: executor.KindSyntax, inText: `"line":1,"column":9`},
		{name: "runtime error", args: map[string]any{"code": "null.x"}, wantErr: true, kind: executor.KindRuntime, inText: "TypeError"},
		{name: "tool error", args: map[string]any{"code": "await util.echo({})"}, wantErr: true, kind: executor.KindTool, inText: "missing property 'text'"},
		{name: "timeout", args: map[string]any{"code": "while (true) {}", "timeout_ms": 200}, wantErr: true, kind: executor.KindTimeout, inText: "200ms deadline"},
		{name: "memory", args: map[string]any{"code": "const a = []; for (;;) a.push('x'.repeat(1 << 16) + a.length)", "timeout_ms": 30000}, wantErr: true, kind: executor.KindMemory, inText: "heap limit"},
		{name: "stack", args: map[string]any{"code": "function f() { return f() } f()"}, wantErr: true, kind: executor.KindStack},
		{name: "tool call limit", args: map[string]any{"code": "for (;;) util.echo({text: 'x'})"}, wantErr: true, kind: executor.KindToolCalls},
		{name: "large result", args: map[string]any{"code": "'x'.repeat(2 << 20)"},
			check: func(t testing.TB, rec *engine.Record) {
				// 2 MiB, over the old 1 MiB limit: cut to the budget.
				if rec.Status != executor.StatusOK || rec.Filter == nil || !rec.Filter.Cut || rec.Filter.FullBytes < 2<<20 {
					t.Errorf("a large result: %+v %+v", rec.Status, rec.Filter)
				}
			}},
		{name: "output limit", args: map[string]any{"code": "for (;;) console.log('spam')"}, wantErr: true, kind: executor.KindOutput},
		{name: "unsettled", args: map[string]any{"code": "await new Promise(() => {})"}, wantErr: true, kind: executor.KindUnsettled},
		{name: "unserializable", args: map[string]any{"code": "() => 1"}, wantErr: true, kind: executor.KindResult},
		{name: "bad language", args: map[string]any{"code": "1", "language": "python"}, wantErr: true, kind: executor.KindInvalidRequest, inText: "language"},
		{name: "missing code", args: map[string]any{}, wantErr: true, kind: executor.KindInvalidRequest, inText: "missing property 'code'"},
		{name: "timeout above cap", args: map[string]any{"code": "1", "timeout_ms": 10_000_000}, wantErr: true, kind: executor.KindInvalidRequest, inText: "timeout_ms"},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, mcpserver.Config{}, executor.Config{PoolSize: 2, MemoryLimit: 16 << 20})
			c := start(t, tr.connect(t, srv))
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					res, rec := execute(t, c, tc.args)
					if res.IsError != tc.wantErr {
						t.Fatalf("isError = %v, want %v: %s", res.IsError, tc.wantErr, text(res))
					}
					if !strings.Contains(text(res), tc.inText) {
						t.Errorf("text %q does not contain %q", text(res), tc.inText)
					}
					if tc.kind != "" || tc.result != "" {
						if rec == nil {
							t.Fatalf("no structured content: %s", text(res))
						}
					}
					if tc.result != "" && string(rec.Result) != tc.result {
						t.Errorf("result %s, want %s", rec.Result, tc.result)
					}
					if tc.kind != "" && (rec.Error == nil || rec.Error.Kind != tc.kind) {
						t.Errorf("error %+v, want kind %s", rec.Error, tc.kind)
					}
					if tc.check != nil {
						tc.check(t, rec)
					}
				})
			}
			// The server is still healthy after every failure above.
			if _, rec := execute(t, c, map[string]any{"code": "'alive'"}); rec == nil || string(rec.Result) != `"alive"` {
				t.Fatalf("server not healthy after hostile runs: %+v", rec)
			}
		})
	}
}

func TestListToolsIsCodeMode(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{})
	c := start(t, transports[0].connect(t, srv))
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Name == "execute_code" {
			if !strings.Contains(tool.Description, "search_tools") {
				t.Errorf("execute_code description does not point at search_tools")
			}
			b, err := json.Marshal(tool)
			if err != nil {
				t.Fatal(err)
			}
			var wire struct {
				OutputSchema map[string]any `json:"outputSchema"`
			}
			if err := json.Unmarshal(b, &wire); err != nil || wire.OutputSchema["type"] != "object" {
				t.Errorf("output schema in %s: %v", b, err)
			}
		}
	}
	if !strings.Contains(strings.Join(names, ","), "execute_code") {
		t.Errorf("tools %v", names)
	}
}

// TestConcurrentClients runs many programs at once over Streamable HTTP
// against a small pool: they queue, and all succeed.
func TestConcurrentClients(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{}, executor.Config{PoolSize: 2})
	c := start(t, transports[1].connect(t, srv))
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, rec := execute(t, c, map[string]any{"code": "(await util.echo({text: 'x'})).text + " + strings.Repeat("1", i+1)})
			if rec == nil || rec.Status != executor.StatusOK {
				t.Errorf("run %d: %+v", i, rec)
			}
		}()
	}
	wg.Wait()
}

func TestHealth(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	resp, err := ts.Client().Get(ts.URL + mcpserver.PathHealth)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}
}

// TestDirectOnly: --expose direct lists the catalogue, not the code-mode
// tools.
func TestDirectOnly(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{Expose: mcpserver.ExposeDirect})
	c := start(t, transports[0].connect(t, srv))
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if !strings.Contains(tool.Name, "__") {
			t.Errorf("direct mode lists %s", tool.Name)
		}
	}
	if len(res.Tools) < 3 {
		t.Errorf("direct mode lists %d tools", len(res.Tools))
	}
	// Its instructions speak of the tools it lists, not of execute_code.
	c2, err := client.NewInProcessClient(srv.MCP())
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "t", Version: "1"}
	got, err := c2.Initialize(t.Context(), init)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got.Instructions, "execute_code") || !strings.Contains(got.Instructions, "category__tool") {
		t.Errorf("direct mode's instructions: %q", got.Instructions)
	}
}

func TestDirectMode(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{Expose: mcpserver.ExposeBoth})
	c := start(t, transports[0].connect(t, srv))
	changed := make(chan struct{}, 10)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/tools/list_changed" {
			changed <- struct{}{}
		}
	})
	list := func() map[string]mcp.Tool {
		res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]mcp.Tool{}
		for _, tool := range res.Tools {
			m[tool.Name] = tool
		}
		return m
	}
	got := list()
	for _, name := range []string{"execute_code", "util__echo", "util__now", "util__sleep"} {
		if _, ok := got[name]; !ok {
			t.Errorf("tools/list lacks %s", name)
		}
	}

	call := func(name string, args map[string]any) *mcp.CallToolResult {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		res, err := c.CallTool(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := call("util__echo", map[string]any{"text": "direct"})
	if res.IsError || !strings.Contains(text(res), `"direct"`) || res.StructuredContent != nil || got["util__echo"].RawOutputSchema != nil || got["util__echo"].OutputSchema.Type != "" {
		t.Errorf("util__echo: %+v; a direct tool advertises no output schema and sends its filtered result as text", res)
	}
	res = call("util__echo", map[string]any{"text": 5})
	if !res.IsError || !strings.Contains(text(res), "arguments/text") {
		t.Errorf("invalid args: %s", text(res))
	}

	// A tool registered at run time appears, and clients are told.
	err := srv.Registry().Register(tools.Tool{Name: "extra.ping", Summary: "Answer pong.", Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`"pong"`), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Error("no tools/list_changed notification")
	}
	if _, ok := list()["extra__ping"]; !ok {
		t.Error("runtime tool not listed")
	}
	if res := call("extra__ping", nil); res.IsError || text(res) != `"pong"` {
		t.Errorf("extra__ping: %s", text(res))
	}
	// ... and programs see it at once.
	if _, rec := execute(t, c, map[string]any{"code": "await extra.ping()"}); rec == nil || string(rec.Result) != `"pong"` {
		t.Errorf("program call of a runtime tool: %+v", rec)
	}
}
