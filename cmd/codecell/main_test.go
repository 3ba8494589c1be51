package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver/engine"
)

// binary is the codecell binary built for these tests.
var binary string

// testVersion is the version the binary under test is stamped with, as
// the Makefile stamps its own (-ldflags "-X main.version=…"). Unstamped, a
// binary built in a git clone reports the VCS pseudo-version where Go's
// settings allow it (-buildvcs), and the tests would pass or fail with
// the user's Go settings.
const testVersion = "0.0.0-test"

// buildFlags are the go build flags of the binary under test.
var buildFlags = []string{"-tags", "sqlite_fts5", "-ldflags", "-X main.version=" + testVersion}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "codecell-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "codecell")
	build := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-o", binary, ".")...)
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build codecell:", err)
		os.Exit(1)
	}
	// Every server these tests start keeps its store in a directory of
	// its own, never in the user's data directory.
	os.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// dataDir returns the environment that gives a server its own data
// directory.
func dataDir(t testing.TB) []string {
	return []string{"CODECELL_SERVER_DATA_DIR=" + t.TempDir()}
}

func initialize(t testing.TB, c *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "codecell-cmd-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
}

func callExecute(t testing.TB, c *client.Client, args map[string]any) (bool, *engine.Record, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "execute_code"
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("execute_code: %v", err)
	}
	var txt strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			txt.WriteString(tc.Text)
		}
	}
	var rec engine.Record
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("structured content: %v", err)
	}
	return res.IsError, &rec, txt.String()
}

// exercise runs the same checks over any transport.
func exercise(t *testing.T, c *client.Client) {
	t.Helper()
	cases := []struct {
		name   string
		args   map[string]any
		result string
		kind   executor.Kind
	}{
		{"result", map[string]any{"code": "1 + 1"}, "2", ""},
		{"tool call", map[string]any{"code": "(await util.echo({text: 'hi'})).text"}, `"hi"`, ""},
		{"promise all", map[string]any{"code": "(await Promise.all([util.echo({text: 'a'}), util.echo({text: 'b'})])).map(r => r.text).join('')"}, `"ab"`, ""},
		{"typescript", map[string]any{"code": "const n: number = 40;\nn + 2", "language": "typescript"}, "42", ""},
		{"console", map[string]any{"code": "console.info('x'); 'y'"}, `"y"`, ""},
		{"syntax error", map[string]any{"code": "let = ;"}, "", executor.KindSyntax},
		{"runtime error", map[string]any{"code": "null.x"}, "", executor.KindRuntime},
		{"tool error", map[string]any{"code": "await util.echo({})"}, "", executor.KindTool},
		{"timeout", map[string]any{"code": "while (true) {}", "timeout_ms": 200}, "", executor.KindTimeout},
		{"memory", map[string]any{"code": "const a = []; for (;;) a.push('x'.repeat(1 << 16) + a.length)", "timeout_ms": 30000}, "", executor.KindMemory},
		{"stack", map[string]any{"code": "function f() { return f() } f()"}, "", executor.KindStack},
		{"tool call limit", map[string]any{"code": "for (;;) util.echo({text: 'x'})", "timeout_ms": 30000}, "", executor.KindToolCalls},
		{"output limit", map[string]any{"code": "for (;;) console.log('spam')", "timeout_ms": 30000}, "", executor.KindOutput},
		{"large result", map[string]any{"code": "'x'.repeat(2 << 20).length", "timeout_ms": 30000}, "2097152", ""},
		{"code too large", map[string]any{"code": "/*" + strings.Repeat("x", 200<<10) + "*/"}, "", executor.KindCodeSize},
		{"unsettled promise", map[string]any{"code": "await new Promise(() => {})"}, "", executor.KindUnsettled},
		{"unserializable", map[string]any{"code": "() => 1"}, "", executor.KindResult},
		{"no host access", map[string]any{"code": "[typeof require, typeof process, typeof std, typeof os].join()"}, `"undefined,undefined,undefined,undefined"`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			isErr, rec, txt := callExecute(t, c, tc.args)
			if tc.kind != "" {
				if !isErr || rec.Error == nil || rec.Error.Kind != tc.kind {
					t.Fatalf("want %s error, got isError=%v %+v (%s)", tc.kind, isErr, rec.Error, txt)
				}
				return
			}
			if isErr || string(rec.Result) != tc.result {
				t.Fatalf("result %s (isError %v: %s), want %s", rec.Result, isErr, txt, tc.result)
			}
		})
	}
}

func TestServeStdio(t *testing.T) {
	t.Parallel()
	c, err := client.NewStdioMCPClient(binary, dataDir(t), "serve", "-log-level", "debug", "-memory-limit", "16")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	initialize(t, c)
	exercise(t, c)

	// Cancelling a runaway call sends notifications/cancelled, which
	// interrupts its VM: with a pool of one, the next run starts at once.
	one, err := client.NewStdioMCPClient(binary, dataDir(t), "serve", "-pool", "1", "-queue-wait", "3s")
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	initialize(t, one)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "execute_code"
	req.Params.Arguments = map[string]any{"code": "while (true) {}", "timeout_ms": 30000}
	if _, err := one.CallTool(ctx, req); err == nil {
		t.Fatal("runaway call returned")
	}
	// Had the runaway kept the only VM, this would fail as busy after 3s.
	if isErr, rec, txt := callExecute(t, one, map[string]any{"code": "'next'"}); isErr || string(rec.Result) != `"next"` {
		t.Fatalf("run after cancel: %s", txt)
	}
}

// startHTTP starts `codecell serve -http 127.0.0.1:0` and returns the
// process and its base URL, read from the connection help it prints.
func startHTTP(t *testing.T, extra ...string) (*exec.Cmd, string, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "-http", "127.0.0.1:0", "-memory-limit", "16"}, extra...)...)
	cmd.Env = append(os.Environ(), dataDir(t)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	urlRE := regexp.MustCompile(`Streamable HTTP\s+(http://\S+)/mcp`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case base := <-found:
		return cmd, base, &stdout
	case <-time.After(15 * time.Second):
		t.Fatal("server did not print its address")
	}
	return nil, "", nil
}

func TestServeHTTP(t *testing.T) {
	t.Parallel()
	cmd, base, stdout := startHTTP(t)
	for _, tr := range []struct {
		name string
		new  func() (*client.Client, error)
	}{
		{"streamable-http", func() (*client.Client, error) { return client.NewStreamableHttpClient(base + "/mcp") }},
		{"sse", func() (*client.Client, error) { return client.NewSSEMCPClient(base + "/sse") }},
	} {
		t.Run(tr.name, func(t *testing.T) {
			c, err := tr.new()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			initialize(t, c)
			exercise(t, c)
		})
	}

	// SIGTERM stops the server cleanly, with nothing on stdout.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("server exited with %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("server did not stop on SIGTERM")
	}
	if stdout.Len() != 0 {
		t.Errorf("HTTP mode wrote to stdout: %q", stdout.String())
	}
}

func TestExecCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts := filepath.Join(dir, "prog.ts")
	if err := os.WriteFile(ts, []byte("const r: {text: string} = await util.echo({text: 'file'});\nconsole.log(r.text);\nr.text"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "typescript file", args: []string{"exec", ts}, wantOut: `"result": "file"`},
		{name: "stdin", args: []string{"exec", "-"}, stdin: "6 * 7", wantOut: `"result": 42`},
		{name: "failed run exits 1", args: []string{"exec", "-"}, stdin: "null.x", wantCode: 1, wantOut: `"kind": "runtime_error"`},
		{name: "missing file", args: []string{"exec", filepath.Join(dir, "nope.js")}, wantCode: 1, wantErr: "read program"},
		{name: "no file", args: []string{"exec"}, wantCode: 2, wantErr: "exec takes one argument"},
		{name: "unknown language", args: []string{"exec", "-lang", "python", "-"}, stdin: "1", wantCode: 2, wantErr: `--lang "python": want javascript (js) or typescript (ts)`},
		{name: "unknown command", args: []string{"frobnicate"}, wantCode: 2, wantErr: `unknown command "frobnicate"`},
		{name: "bad flag value", args: []string{"serve", "-log-level", "loud"}, wantCode: 2, wantErr: `server.log_level (from --log-level): "loud" is not one of`},
		{name: "public bind without auth", args: []string{"serve", "-http", "0.0.0.0:0"}, wantCode: 1, wantErr: "refusing to serve on 0.0.0.0:0 without authentication"},
		{name: "version", args: []string{"version"}, wantOut: "codecell " + testVersion + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(binary, tt.args...)
			cmd.Env = append(os.Environ(), dataDir(t)...)
			cmd.Stdin = strings.NewReader(tt.stdin)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr %s", code, tt.wantCode, errb.String())
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("stdout %q does not contain %q", out.String(), tt.wantOut)
			}
			if !strings.Contains(errb.String(), tt.wantErr) {
				t.Errorf("stderr %q does not contain %q", errb.String(), tt.wantErr)
			}
		})
	}
}

// TestMemoryAndKeyCommands runs the store and key commands a user runs at
// the terminal against a store that programs wrote to.
func TestMemoryAndKeyCommands(t *testing.T) {
	t.Parallel()
	data, other := t.TempDir(), t.TempDir()
	run := func(dir, stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "CODECELL_SERVER_DATA_DIR="+dir)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errb.String())
		}
		return out.String()
	}
	run(data, `await memory.remember({content: "The staging database moved to Frankfurt in March", tags: ["infra"]}); await memory.remember("Lunch is at noon"); 1`, "exec", "-")
	if out := run(data, "", "memory", "search", "where is the staging database"); !strings.Contains(out, "Frankfurt") {
		t.Errorf("memory search:\n%s", out)
	}
	if out := run(data, "", "memory", "stats"); !regexp.MustCompile(`(?m)^memories\s+2\s`).MatchString(out) || !regexp.MustCompile(`(?m)^executions, tool calls\s+1, 2$`).MatchString(out) {
		t.Errorf("memory stats:\n%s", out)
	}
	backup := filepath.Join(t.TempDir(), "backup.jsonl")
	run(data, "", "memory", "export", backup)
	run(other, "", "memory", "import", backup)
	if out := run(other, "", "memory", "search", "-json", "staging database"); !strings.Contains(out, "Frankfurt") {
		t.Errorf("search after import:\n%s", out)
	}
	if out := run(data, "", "config", "rotate-key"); !strings.Contains(out, "new key") {
		t.Errorf("rotate-key: %s", out)
	}
}
