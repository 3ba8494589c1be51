package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/tools"
)

const (
	readerToken = "reader-token-0123456789"
	writerToken = "writer-token-0123456789"
)

// accessTransports connect a client as a principal in each way codecell
// serves: stdio (whose principal is the server's Config.Principal; the
// token is not used), Streamable HTTP and SSE (a static bearer token).
var accessTransports = []struct {
	name    string
	stdio   bool
	connect func(t testing.TB, srv *mcpserver.Server, token string) *client.Client
}{
	{"stdio", true, func(t testing.TB, srv *mcpserver.Server, _ string) *client.Client {
		holdStdio(t)
		toServer, fromClient := io.Pipe()
		fromServer, toClient := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- srv.ServeStdio(context.Background(), toServer, toClient)
			toClient.Close()
		}()
		t.Cleanup(func() {
			fromClient.Close() // EOF: the server returns once it has answered
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Error("ServeStdio did not return after EOF")
			}
		})
		return client.NewClient(transport.NewIO(fromServer, fromClient, nil))
	}},
	{"streamable-http", false, func(t testing.TB, srv *mcpserver.Server, token string) *client.Client {
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		c, err := client.NewStreamableHttpClient(ts.URL+mcpserver.PathStreamable, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}},
	{"sse", false, func(t testing.TB, srv *mcpserver.Server, token string) *client.Client {
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		c, err := client.NewSSEMCPClient(ts.URL+mcpserver.PathSSE, transport.WithHeaders(map[string]string{"Authorization": "Bearer " + token}))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}},
}

// startWithInstructions starts c and returns the instructions it was
// given at initialize.
func startWithInstructions(t testing.TB, c *client.Client) (*client.Client, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "codecell-test", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c, res.Instructions
}

// accessServer is a server over the built-in and memory tools, directly
// exposed too, whose stdio user is the principal "reader" and whose HTTP
// clients are "reader" and "writer" by their tokens.
func accessServer(t testing.TB, access engine.Access) (*mcpserver.Server, *sqlite.Store) {
	t.Helper()
	return storeServerTB(t, filepath.Join(t.TempDir(), "codecell.db"), mcpserver.Config{
		Principal: "reader",
		Expose:    mcpserver.ExposeBoth,
		Auth:      []mcpserver.Token{{Principal: "reader", Token: readerToken}, {Principal: "writer", Token: writerToken}},
		Access:    access,
	})
}

// notReadOnly lists the tools of srv's catalogue that are neither
// annotated read-only nor skills.
func notReadOnly(srv *mcpserver.Server) []string {
	var out []string
	for _, t := range srv.Registry().List() {
		if !t.Annotations.ReadOnly && t.Source == "" {
			out = append(out, t.Name)
		}
	}
	return out
}

// observe is everything a client sees of the catalogue and of calls of
// tools it may not use, each as the bytes the server sent (less what
// changes from run to run: a run's stats).
func observe(t *testing.T, c *client.Client, instructions string) map[string]string {
	t.Helper()
	ctx := t.Context()
	seen := map[string]string{"instructions": instructions}
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	call := func(name string, args map[string]any) string {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return "error: " + err.Error()
		}
		return js(res)
	}
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	seen["tools/list"] = js(list.Tools)
	for _, p := range []string{"/", "/manifest.json", "/memory/", "/memory/index.json", "/memory/recall.d.ts", "/memory/remember.d.ts",
		"/memory/remember.md", "/memory/forget.md", "/workspace/index.json", "/skills/index.json", "/skills/save.d.ts"} {
		seen["read_tools "+p] = call("read_tools", map[string]any{"path": p})
	}
	for _, q := range []string{"store a memory", "forget delete remove", "write a workspace file", "search memories"} {
		for _, detail := range []string{"name", "full"} {
			seen["search_tools "+q+" "+detail] = call("search_tools", map[string]any{"query": q, "detail": detail, "limit": 50})
		}
	}
	for _, uri := range []string{"manifest.json", "memory/index.json", "memory/remember.d.ts", "memory/forget.md", "memory/recall.md"} {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = mcpserver.ResourcePrefix + uri
		res, err := c.ReadResource(ctx, req)
		if err != nil {
			seen["resource "+uri] = "error: " + err.Error()
		} else {
			seen["resource "+uri] = js(res.Contents)
		}
	}
	for _, arg := range []struct{ name, value, category string }{{"category", "", ""}, {"tool", "", "memory"}, {"tool", "re", "memory"}, {"tool", "", "workspace"}} {
		req := mcp.CompleteRequest{}
		req.Params.Ref = mcp.ResourceReference{Type: "ref/resource", URI: mcpserver.ResourcePrefix + "{category}/{tool}.d.ts"}
		req.Params.Argument.Name, req.Params.Argument.Value = arg.name, arg.value
		if arg.category != "" {
			req.Params.Context.Arguments = map[string]string{"category": arg.category}
		}
		res, err := c.Complete(ctx, req)
		if err != nil {
			t.Fatalf("complete %s: %v", arg.name, err)
		}
		seen["complete "+arg.name+" "+arg.category+" "+arg.value] = js(res.Completion)
	}
	// Direct mode: a hidden tool is not found, as a name never listed.
	seen["direct memory__remember"] = call("memory__remember", map[string]any{"content": "x"})
	seen["direct memory__forge"] = call("memory__forge", map[string]any{"id": "x"})
	for _, code := range []string{
		`await tools.call("memory.remember", {content: "x"})`,
		`await tools.call("memory.remembr", {content: "x"})`,
		`await tools.call("memory.forget", {id: "x"})`,
		`await memory.remember({content: "x"})`,
		`await workspace.write({path: "a", data: "b"})`,
		`[Object.keys(memory).sort(), Object.keys(workspace).sort(), typeof skills.save, typeof memory.forget]`,
	} {
		_, rec := execute(t, c, map[string]any{"code": code})
		if rec == nil {
			t.Fatalf("%s: no run record", code)
		}
		seen["execute_code "+code] = js(map[string]any{"status": rec.Status, "result": rec.Result, "error": rec.Error, "calls": rec.Calls})
	}
	return seen
}

// TestReadOnlyPrincipalOverTransports: a read-only principal sees and
// reaches only read-only tools, and a tool hidden from it is
// indistinguishable from one that does not exist: what it observes,
// byte for byte, is what it observes of a server whose catalogue never
// had those tools. Another principal of the same server sees everything.
func TestReadOnlyPrincipalOverTransports(t *testing.T) {
	t.Parallel()
	access := engine.Access{Principals: map[string]engine.AccessRule{"reader": {ReadOnly: true}}}
	for _, tr := range accessTransports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			restricted, st := accessServer(t, access)
			hidden := notReadOnly(restricted)
			for _, want := range []string{"memory.remember", "memory.forget", "workspace.write", "skills.save"} {
				if !slices.Contains(hidden, want) {
					t.Fatalf("%s is annotated read-only; the test expects it hidden", want)
				}
			}
			// The reference: no access rules, and the tools the reader
			// may not use were never there for anybody.
			reference, _ := accessServer(t, engine.Access{})
			if n := reference.Registry().Unregister(hidden...); n != len(hidden) {
				t.Fatalf("unregistered %d of %d", n, len(hidden))
			}
			rc, rInstr := startWithInstructions(t, tr.connect(t, restricted, readerToken))
			got := observe(t, rc, rInstr)
			fc, fInstr := startWithInstructions(t, tr.connect(t, reference, readerToken))
			want := observe(t, fc, fInstr)
			for _, k := range slices.Sorted(maps.Keys(want)) {
				if got[k] != want[k] {
					i := 0
					for i < len(got[k]) && i < len(want[k]) && got[k][i] == want[k][i] {
						i++
					}
					from := max(i-200, 0)
					t.Errorf("%s differs from a server without the tools, at byte %d:\n got …%.400s\nwant …%.400s", k, i, got[k][from:], want[k][from:])
				}
			}
			// What it sees is what it may use: read-only tools only.
			for _, name := range hidden {
				if strings.Contains(got["tools/list"], `"`+mcpserver.DirectName(name)+`"`) {
					t.Errorf("tools/list lists %s", name)
				}
			}
			if !strings.Contains(got["tools/list"], `"memory__recall"`) {
				t.Errorf("tools/list lacks memory__recall: %.300s", got["tools/list"])
			}
			// One client per server: mcp-go's stdio session is one per
			// process and server.
			if got := mustRun(t, rc, `const r = await memory.recall({query: "x"}); const n = await tools.call("memory.stats", {}); [Array.isArray(r.results), typeof n]`); string(got) != `[true,"object"]` {
				t.Errorf("read-only calls: %s", got)
			}
			if tr.stdio {
				return // one principal over stdio
			}
			w, _ := startWithInstructions(t, tr.connect(t, restricted, writerToken))
			if got := mustRun(t, w, `const m = await memory.remember({content: "writer was here"}); typeof m.id`); string(got) != `"number"` {
				t.Errorf("the writer's remember: %s", got)
			}
			list, err := w.ListTools(t.Context(), mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(list.Tools, func(mt mcp.Tool) bool { return mt.Name == "memory__remember" }) {
				t.Error("the writer's tools/list lacks memory__remember")
			}
			// The audit log names each run's toolset.
			restricted.Close() // flushes the audit log
			for _, tt := range []struct{ principal, desc string }{{"reader", "read_only"}, {"writer", ""}} {
				p := tt.principal
				runs, err := st.ListExecutions(t.Context(), memory.ExecutionQuery{Principal: &p})
				if err != nil || len(runs) == 0 {
					t.Fatalf("%s's runs: %d, %v", p, len(runs), err)
				}
				for _, r := range runs {
					if r.ToolsetDescription != tt.desc || (r.Toolset == "") != (tt.desc == "") {
						t.Errorf("%s's run %s: toolset %q %q, want description %q", p, r.ID, r.Toolset, r.ToolsetDescription, tt.desc)
					}
				}
			}
		})
	}
}

// TestServerReadOnly hides, for every principal, each tool not annotated
// read-only, in code mode and in direct mode.
func TestServerReadOnly(t *testing.T) {
	t.Parallel()
	srv, _ := accessServer(t, engine.Access{ReadOnly: true})
	hidden := notReadOnly(srv)
	for _, token := range []string{readerToken, writerToken} {
		c, _ := startWithInstructions(t, accessTransports[1].connect(t, srv, token))
		list, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, mt := range list.Tools {
			names = append(names, mt.Name)
		}
		for _, h := range hidden {
			if slices.Contains(names, mcpserver.DirectName(h)) {
				t.Errorf("tools/list lists %s", h)
			}
		}
		if !slices.Contains(names, "execute_code") || !slices.Contains(names, "memory__recall") {
			t.Errorf("tools/list: %v", names)
		}
		got := mustRun(t, c, `[Object.keys(memory).sort(), Object.keys(skills).sort(), Object.keys(util).sort(), Object.keys(workspace).sort()]`)
		if want := `[["get","neighbors","path","recall","stats","task_list"],["list"],["echo","now","sleep"],["list","read"]]`; string(got) != want {
			t.Errorf("namespaces %s, want %s", got, want)
		}
	}
}

// TestReadOnlySkills: read_only keeps a principal's skills, but a skill
// runs as its caller and reaches only its caller's tools.
func TestReadOnlySkills(t *testing.T) {
	t.Parallel()
	srv, st := accessServer(t, engine.Access{Principals: map[string]engine.AccessRule{"reader": {ReadOnly: true}}})
	code := `const out = {recalled: (await memory.recall({query: "x"})).results.length}; ` +
		`try { await tools.call("memory.remember", {content: "from a skill"}); out.remembered = true } catch (e) { out.error = e.code || String(e) } return out`
	for _, p := range []string{"reader", "writer"} {
		if _, err := st.SaveSkill(tools.WithCaller(t.Context(), tools.Caller{Principal: p}), memory.Skill{Name: "note", Description: "Recalls, then remembers.", Code: code}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ token, want string }{
		{readerToken, `{"error":"unknown_tool","recalled":0}`},
		{writerToken, `{"recalled":0,"remembered":true}`},
	} {
		c, _ := startWithInstructions(t, accessTransports[1].connect(t, srv, tt.token))
		if got := mustRun(t, c, `await skills.note({})`); string(got) != tt.want {
			t.Errorf("skill run: %s, want %s", got, tt.want)
		}
	}
}

// TestToolsetRules: allow and deny globs, on names and aliases, deny
// winning, and rules combined by intersection, seen through a program.
func TestToolsetRules(t *testing.T) {
	t.Parallel()
	srv, _ := accessServer(t, engine.Access{Principals: map[string]engine.AccessRule{
		"reader": {Allow: []string{"memory.*", "util.e*"}, Deny: []string{"*.forget", "memory.task_*"}},
		"*":      {Allow: []string{"util.*"}, Deny: []string{"util.sleep"}},
	}})
	for _, tt := range []struct{ token, want string }{
		{readerToken, `[["consolidate","entity_upsert","get","neighbors","path","recall","relate","remember","stats","update"],["echo"],"undefined"]`},
		{writerToken, `[[],["echo","now"],"undefined"]`},
	} {
		c, _ := startWithInstructions(t, accessTransports[1].connect(t, srv, tt.token))
		got := mustRun(t, c, `[Object.keys(globalThis.memory || {}).sort(), Object.keys(util).sort(), typeof globalThis.workspace]`)
		if string(got) != tt.want {
			t.Errorf("namespaces %s, want %s", got, tt.want)
		}
	}
	_, rec := execute(t, startAccess(t, srv, readerToken), map[string]any{"code": `await tools.call("memory.forget", {id: "x"})`})
	if rec == nil || rec.Error == nil || rec.Error.Kind != executor.KindTool || !strings.Contains(rec.Error.Message, "unknown tool") {
		t.Errorf("a denied tool: %+v", rec)
	}
}

func startAccess(t testing.TB, srv *mcpserver.Server, token string) *client.Client {
	t.Helper()
	c, _ := startWithInstructions(t, accessTransports[1].connect(t, srv, token))
	return c
}

// TestAccessGlobErrors refuses a server whose rules hold a bad glob, and
// names the rule.
func TestAccessGlobErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		access engine.Access
		want   string
	}{
		{"bad pattern", engine.Access{Principals: map[string]engine.AccessRule{"alice": {Allow: []string{"memory.[a"}}}}, `principal "alice": allow[0]`},
		{"category alone", engine.Access{Scopes: map[string]engine.AccessRule{"codecell:read": {Deny: []string{"util.*", "memory"}}}}, `scope "codecell:read": deny[1]: glob "memory" matches no tool: names are category.tool; for a whole category write "memory.*"`},
		{"empty", engine.Access{Principals: map[string]engine.AccessRule{"*": {Allow: []string{""}}}}, `principal "*": allow[0]: empty glob`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := mcpserver.New(forTests(t, mcpserver.Config{Access: tt.access}), tools.NewRegistry())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want an error with %q", err, tt.want)
			}
		})
	}
}
