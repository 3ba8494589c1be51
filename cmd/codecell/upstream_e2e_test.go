package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
)

// upstreamsDir holds the MCP servers codecell bridges in these tests,
// installed by `make node-deps` (testdata/upstreams).
var upstreamsDir = filepath.Join("..", "..", "testdata", "upstreams")

// upstreamNode returns the Node.js of testdata/upstreams and the absolute
// path of the directory. Without them the test is skipped, unless
// CODECELL_REQUIRE_NODE is set, as `make test` does.
func upstreamNode(t *testing.T) (node, dir string) {
	t.Helper()
	dir, err := filepath.Abs(upstreamsDir)
	if err == nil {
		node = filepath.Join(dir, "node_modules", ".bin", "node")
		if _, err = os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything")); err == nil {
			_, err = os.Stat(node)
		}
	}
	if err != nil {
		if os.Getenv("CODECELL_REQUIRE_NODE") != "" {
			t.Fatalf("the reference MCP servers are not installed (%v); run make node-deps", err)
		}
		t.Skip("run make node-deps to test with the reference MCP servers")
	}
	return node, dir
}

// serverScript is the entry point of a reference server.
func serverScript(dir, name string) string {
	return filepath.Join(dir, "node_modules", "@modelcontextprotocol", name, "dist", "index.js")
}

// syncBuffer collects a process's output, safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// served is a `codecell serve --http` process of a test, with all it logs.
type served struct {
	cmd  *exec.Cmd
	base string
	log  *syncBuffer
	data string
}

// serveUpstreams starts codecell over HTTP with extra environment and
// flags, its data in a directory of its own.
func serveUpstreams(t *testing.T, env []string, args ...string) *served {
	t.Helper()
	s := &served{log: &syncBuffer{}, data: t.TempDir()}
	s.cmd = exec.Command(binary, append([]string{"serve", "--http", "127.0.0.1:0", "--log-level", "debug"}, args...)...)
	s.cmd.Env = append(append(os.Environ(), "CODECELL_SERVER_DATA_DIR="+s.data), env...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = pw
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	t.Cleanup(func() { s.cmd.Process.Kill(); s.cmd.Wait() })
	urlRE := regexp.MustCompile(`Streamable HTTP\s+(http://\S+)/mcp`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(s.log, sc.Text())
			if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case s.base = <-found:
	case <-time.After(60 * time.Second):
		t.Fatalf("server did not print its address:\n%s", s.log)
	}
	return s
}

// startEverything runs server-everything over HTTP (mode streamableHttp or
// sse) on a free loopback port and returns its base URL.
func startEverything(t *testing.T, node, dir, mode string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	cmd := exec.Command(node, serverScript(dir, "server-everything"), mode)
	cmd.Env = append(os.Environ(), "PORT="+port)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			c.Close()
			return "http://127.0.0.1:" + port
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything %s did not listen on %s:\n%s", mode, port, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// callTool calls one of codecell's MCP tools and returns its text.
func callTool(t *testing.T, c *client.Client, name string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// eventuallyTrue polls cond until it holds or a generous bound passes.
func eventuallyTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: did not happen", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestUpstreamsEndToEnd bridges the reference MCP servers — filesystem,
// memory and everything over stdio, everything over Streamable HTTP and
// SSE — and the faulty one, through the built binary, and drives it with
// an MCP client: the tree at four levels, one program over three servers,
// names with hyphens, artifacts, a crash, a hang, a missing command, a
// slow start, secrets, and shutdown.
func TestUpstreamsEndToEnd(t *testing.T) {
	t.Parallel()
	node, dir := upstreamNode(t)
	work := t.TempDir()
	const files = 30
	for i := 1; i <= files; i++ {
		os.WriteFile(filepath.Join(work, fmt.Sprintf("f%02d.txt", i)), []byte(fmt.Sprintf("invoice %d\namount: %d\n", i, i)), 0o644)
	}
	httpURL := startEverything(t, node, dir, "streamableHttp")
	sseURL := startEverything(t, node, dir, "sse")
	secretBytes := make([]byte, 12)
	rand.Read(secretBytes)
	secret := "e2e-" + hex.EncodeToString(secretBytes)
	faulty := filepath.Join(dir, "faulty.mjs")
	config := map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": node, "args": []string{serverScript(dir, "server-everything"), "stdio"}},
		"kg":         map[string]any{"command": node, "args": []string{serverScript(dir, "server-memory")}, "env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(work, "kg.jsonl")}},
		"fs":         map[string]any{"command": node, "args": []string{serverScript(dir, "server-filesystem"), work}},
		"web":        map[string]any{"url": httpURL + "/mcp", "headers": map[string]string{"Authorization": "Bearer ${E2E_SECRET}"}},
		"websse":     map[string]any{"url": sseURL + "/sse", "type": "sse", "headers": map[string]string{"X-Api-Key": "${E2E_SECRET}"}},
		"faulty":     map[string]any{"command": node, "args": []string{faulty}, "env": map[string]string{"SECRET": "${E2E_SECRET}"}},
		"Slow Start": map[string]any{"command": node, "args": []string{faulty}, "env": map[string]string{"START_DELAY_MS": "10000"}},
		"missing":    map[string]any{"command": "codecell-e2e-no-such-command"},
		"codecell":   map[string]any{"command": binary, "args": []string{"serve"}},
	}}
	b, _ := json.Marshal(config)
	mcpConfig := filepath.Join(work, "mcp.json")
	os.WriteFile(mcpConfig, b, 0o600)

	s := serveUpstreams(t, []string{"E2E_SECRET=" + secret}, "--mcp-config", mcpConfig)
	c, err := client.NewStreamableHttpClient(s.base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	initialize(t, c)
	var seen syncBuffer // everything the client was told, for the secret check
	read := func(path string) string {
		t.Helper()
		out := callTool(t, c, "read_tools", map[string]any{"path": path})
		fmt.Fprintln(&seen, out)
		return out
	}
	run := func(code string, timeoutMS int) (bool, string, *recordView) {
		t.Helper()
		isErr, _, txt := callExecute(t, c, map[string]any{"code": code, "timeout_ms": timeoutMS})
		fmt.Fprintln(&seen, txt)
		var rec recordView
		if err := json.Unmarshal([]byte(txt), &rec); err != nil {
			t.Fatalf("record %s: %v", txt, err)
		}
		return isErr, txt, &rec
	}

	t.Run("initialize is served before the slowest upstream is ready", func(t *testing.T) {
		m := read("/manifest.json")
		if !strings.Contains(m, `"slow_start":"0 tools, unavailable (connecting: starting)`) {
			t.Errorf("manifest right after initialize:\n%s", m)
		}
	})
	t.Run("a missing command is unavailable and says why", func(t *testing.T) {
		m := read("/manifest.json")
		if !strings.Contains(m, `"missing":"0 tools, unavailable (command not found`) {
			t.Errorf("manifest:\n%s", m)
		}
		if idx := read("/missing/index.json"); !strings.Contains(idx, `"status":"unavailable","reason":"command not found: codecell-e2e-no-such-command`) {
			t.Errorf("index:\n%s", idx)
		}
		if strings.Contains(m, `"codecell"`) {
			t.Errorf("codecell bridged itself:\n%s", m)
		}
	})
	ready := regexp.MustCompile(`"(everything|kg|fs|web|websse|faulty)":"\d+ tools?(:|")`)
	eventuallyTrue(t, "the stdio and HTTP upstreams ready", func() bool {
		return len(ready.FindAllString(read("/manifest.json"), -1)) == 6
	})

	t.Run("the tree shows upstream tools at four levels", func(t *testing.T) {
		for _, tt := range []struct{ path, want string }{
			{"/manifest.json", `"everything":"`},
			{"/everything/index.json", `"get_sum":{"summary":"Returns the sum of two numbers","readOnly":true}`},
			{"/everything/get_sum.d.ts", `function get_sum(args: GetSumArgs): Promise<unknown>;`},
			{"/everything/get_sum.d.ts", `Also everything["get-sum"](...).`},
			{"/everything/get_sum.md", "- Title: Get Sum Tool"},
			{"/everything/get_sum.md", "or `await everything[\"get-sum\"](args)`"},
			{"/everything/get_structured_content.md", `"humidity"`},
			{"/fs/read_text_file.d.ts", "function read_text_file("},
			{"/kg/create_entities.md", `From the MCP server "kg" (stdio: node), where it is named "create_entities".`},
			{"/websse/index.json", `"get_sum"`},
		} {
			if got := read(tt.path); !strings.Contains(got, tt.want) {
				t.Errorf("%s lacks %q:\n%s", tt.path, tt.want, got)
			}
		}
		hits := callTool(t, c, "search_tools", map[string]any{"query": "add two numbers sum", "detail": "name", "limit": 10})
		fmt.Fprintln(&seen, hits)
		if !strings.Contains(hits, "everything.get_sum") {
			t.Errorf("search: %s", hits)
		}
	})

	t.Run("one program reads files, builds a knowledge graph and sums", func(t *testing.T) {
		code := fmt.Sprintf(`
const dir = %q;
const list = await fs.list_directory({path: dir});
const names = list.content.split("\n").filter(l => /^\[FILE\] f\d+\.txt$/.test(l)).map(l => l.slice(7));
const texts = await Promise.all(names.map(n => fs.read_text_file({path: dir + "/" + n})));
const amounts = texts.map(t => Number(t.content.match(/amount: (\d+)/)[1]));
await kg.create_entities({entities: names.map((n, i) => ({name: n, entityType: "invoice", observations: ["amount " + amounts[i]]}))});
await kg.create_relations({relations: names.slice(1).map((n, i) => ({from: names[i], to: n, relationType: "precedes"}))});
let total = 0;
for (const a of amounts) {
  const r = await everything["get-sum"]({a: total, b: a});
  total = Number(r.match(/is (-?[\d.]+)\.$/)[1]);
}
const check = await tools.call("everything.get-sum", {a: total, b: 0});
const graph = await kg.read_graph({});
return {files: names.length, total, check, entities: graph.entities.length, relations: graph.relations.length};`, work)
		isErr, txt, rec := run(code, 60000)
		want := fmt.Sprintf(`{"files":%d,"total":%d,"check":"The sum of %d and 0 is %d.","entities":%d,"relations":%d}`, files, files*(files+1)/2, files*(files+1)/2, files*(files+1)/2, files, files-1)
		if isErr || compact(rec.Result) != want {
			t.Fatalf("result %s, want %s:\n%s", rec.Result, want, txt)
		}
	})

	t.Run("hyphenated names both ways, over stdio, Streamable HTTP and SSE", func(t *testing.T) {
		isErr, txt, rec := run(`[await everything.get_sum({a: 1, b: 2}), await web["get-sum"]({a: 3, b: 4}), await websse.get_sum({a: 5, b: 6}), await tools.call("websse.get-sum", {a: 7, b: 8})]`, 30000)
		if want := `["The sum of 1 and 2 is 3.","The sum of 3 and 4 is 7.","The sum of 5 and 6 is 11.","The sum of 7 and 8 is 15."]`; isErr || compact(rec.Result) != want {
			t.Errorf("result %s, want %s:\n%s", rec.Result, want, txt)
		}
	})

	t.Run("an image is a handle and an artifact of the run", func(t *testing.T) {
		isErr, txt, rec := run(`(await everything.get_tiny_image({})).find(x => x.type === "image")`, 30000)
		var h struct {
			Type, MimeType, URI string
			Bytes               int
		}
		json.Unmarshal(rec.Result, &h)
		if isErr || h.Type != "image" || h.MimeType != "image/png" || !strings.HasPrefix(h.URI, "codecell://results/") || h.Bytes < 100 {
			t.Fatalf("handle %s:\n%s", rec.Result, txt)
		}
		if len(rec.Artifacts) != 1 || rec.Artifacts[0].URI != h.URI {
			t.Errorf("artifacts %+v", rec.Artifacts)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: h.URI}})
		if err != nil {
			t.Fatal(err)
		}
		if blob, ok := res.Contents[0].(mcp.BlobResourceContents); !ok || blob.MIMEType != "image/png" || len(blob.Blob) < h.Bytes {
			t.Errorf("resource %T %+v", res.Contents[0], res.Contents[0])
		}
	})

	t.Run("an upstream that crashes mid-run gives an upstream_error and is restarted", func(t *testing.T) {
		_, txt, rec := run(`const before = await faulty.pid({});
let error;
try { await faulty.crash({}); } catch (e) { error = {code: e.code, message: e.message}; }
const after = await faulty.pid({});
({error, restarted: after !== before})`, 60000)
		var got struct {
			Error     struct{ Code, Message string }
			Restarted bool
		}
		json.Unmarshal(rec.Result, &got)
		if got.Error.Code != "upstream_error" || !strings.Contains(got.Error.Message, "exited with status 3") ||
			!strings.Contains(got.Error.Message, "faulty: crashing on purpose") || !got.Restarted {
			t.Errorf("result %s:\n%s", rec.Result, txt)
		}
	})

	t.Run("an upstream that never answers hits the deadline and is told", func(t *testing.T) {
		isErr, txt, rec := run(`await faulty.hang({})`, 1500)
		if !isErr || rec.Error == nil || rec.Error.Kind != executor.KindTimeout {
			t.Fatalf("record:\n%s", txt)
		}
		eventuallyTrue(t, "the upstream saw the cancellation", func() bool {
			return strings.Contains(s.log.String(), "faulty: the hanging call was cancelled")
		})
		if _, txt, rec := run(`await faulty.pid({})`, 30000); rec.Status != "ok" {
			t.Errorf("after the hang:\n%s", txt)
		}
	})

	t.Run("an upstream's progress reaches the client", func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		c.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == string(mcp.MethodNotificationProgress) {
				mu.Lock()
				got = append(got, fmt.Sprint(n.Params.AdditionalFields["message"]))
				mu.Unlock()
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		req := mcp.CallToolRequest{}
		req.Params.Name = "execute_code"
		req.Params.Arguments = map[string]any{"code": `await everything["trigger-long-running-operation"]({duration: 1, steps: 4})`, "timeout_ms": 30000}
		req.Params.Meta = &mcp.Meta{ProgressToken: "e2e-progress"}
		if _, err := c.CallTool(ctx, req); err != nil {
			t.Fatal(err)
		}
		eventuallyTrue(t, "progress notifications", func() bool {
			mu.Lock()
			defer mu.Unlock()
			// The tool's name as the catalogue writes it, whatever name
			// the program called it by.
			for _, m := range got {
				if strings.HasPrefix(m, "everything.trigger_long_running_operation: ") {
					return true
				}
			}
			return false
		})
	})

	t.Run("a stdio upstream gets a minimal environment and its own env", func(t *testing.T) {
		_, txt, rec := run(`({fromEnv: await faulty.env({name: "SECRET"}), own: await faulty.env({name: "E2E_SECRET"}),
  data: await faulty.env({name: "CODECELL_SERVER_DATA_DIR"}), path: typeof await faulty.env({name: "PATH"})})`, 30000)
		if want := `{"fromEnv":"[secret]","own":null,"data":null,"path":"string"}`; compact(rec.Result) != want {
			t.Errorf("result %s, want %s:\n%s", rec.Result, want, txt)
		}
	})

	t.Run("the slow upstream joins when it is ready", func(t *testing.T) {
		eventuallyTrue(t, "slow_start ready", func() bool {
			return regexp.MustCompile(`"slow_start":"4 tools[^,]`).MatchString(read("/manifest.json"))
		})
		if _, txt, rec := run(`typeof await slow_start.pid({})`, 30000); compact(rec.Result) != `"number"` {
			t.Errorf("slow_start.pid:\n%s", txt)
		}
	})

	// Every child of codecell, before it stops.
	children := descendants(s.cmd.Process.Pid)
	if len(children) < 5 && len(children) != 0 { // the stdio servers, and what they started
		t.Errorf("only %d processes below codecell: %v", len(children), children)
	}
	metrics, err := http.Get(s.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(metrics.Body)
	metrics.Body.Close()

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("codecell exited with %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("codecell did not stop on SIGTERM")
	}

	t.Run("no child survives shutdown", func(t *testing.T) {
		if len(children) == 0 {
			t.Skip("no /proc to list codecell's children")
		}
		for _, pid := range children {
			eventuallyTrue(t, fmt.Sprintf("process %d gone", pid), func() bool { return !running(pid) })
		}
	})
	t.Run("secrets appear in no output", func(t *testing.T) {
		outputs := map[string]string{"what the client read": seen.String(), "codecell's log": s.log.String(), "/metrics": string(body)}
		filepath.WalkDir(s.data, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(p)
				outputs[p] = string(b)
			}
			return nil
		})
		for where, text := range outputs {
			if strings.Contains(text, secret) {
				t.Errorf("the secret is in %s", where)
			}
		}
		if !strings.Contains(s.log.String(), "SECRET is [secret]") {
			t.Error("the faulty server's stderr line was not logged with its secret replaced")
		}
	})
}

// recordView is the part of a run record these tests read.
type recordView struct {
	Status    string          `json:"status"`
	Result    json.RawMessage `json:"result"`
	Error     *struct{ Kind executor.Kind }
	Artifacts []struct{ URI string }
}

func compact(b []byte) string {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return string(b)
	}
	return out.String()
}

// descendants lists the processes below pid, from /proc; none where there
// is no /proc.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 {
			pp, _ := strconv.Atoi(f[1])
			parent[p] = pp
		}
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for c, pp := range parent {
			if pp == p {
				out = append(out, c)
				walk(c)
			}
		}
	}
	walk(pid)
	return out
}

// running reports whether a process runs; a zombie does not.
func running(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}
