package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestBanner starts an HTTP server from the repository root with a
// relative catalogue and a setting from the environment, then starts the
// stdio server its Claude Desktop snippet describes, from another
// directory: it must serve the same tools, as many as the startup log
// counted.
func TestBanner(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cmd := exec.Command(binary, "serve", "--http", "127.0.0.1:0", "--catalog", "testdata/catalog", "--data-dir", data)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "CODECELL_SANDBOX_MAX_LOG_LINES=500")
	text, logged := startBanner(t, cmd)
	for _, w := range []string{"/mcp", "/sse", "/healthz", "/metrics"} {
		if !regexp.MustCompile(`http://127\.0\.0\.1:\d+` + w).MatchString(text) {
			t.Errorf("banner does not print the %s URL:\n%s", w, text)
		}
	}
	catalog, err := filepath.Abs(filepath.Join("..", "..", "testdata", "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	inspector := "npx @modelcontextprotocol/inspector -e CODECELL_SANDBOX_MAX_LOG_LINES=500 -- " + binary + " serve --stdio --catalog " + catalog + " --data-dir " + data
	if !strings.Contains(text, inspector) {
		t.Errorf("banner does not contain the Inspector command\n%s\n%s", inspector, text)
	}

	desktop := desktopEntry(t, text)
	if want := []string{"serve", "--stdio", "--catalog", catalog, "--data-dir", data}; desktop.Command != binary || !slices.Equal(desktop.Args, want) {
		t.Errorf("snippet runs %s %q, want %s %q", desktop.Command, desktop.Args, binary, want)
	}
	if desktop.Env["CODECELL_SANDBOX_MAX_LOG_LINES"] != "500" {
		t.Errorf("snippet env %v lacks CODECELL_SANDBOX_MAX_LOG_LINES", desktop.Env)
	}

	var env []string
	for k, v := range desktop.Env {
		env = append(env, k+"="+v)
	}
	c, err := client.NewStdioMCPClient(desktop.Command, env, desktop.Args...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	initialize(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "read_tools"
	req.Params.Arguments = map[string]any{"path": "/manifest.json"}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("read_tools: %v %+v", err, res)
	}
	var manifest struct {
		Total      int            `json:"total"`
		Categories map[string]any `json:"categories"`
	}
	txt, _ := res.Content[0].(mcp.TextContent)
	if err := json.Unmarshal([]byte(txt.Text), &manifest); err != nil {
		t.Fatalf("manifest %q: %v", txt.Text, err)
	}
	if manifest.Categories["github"] == nil {
		t.Errorf("the stdio server lacks the demo catalogue: %s", txt.Text)
	}
	if manifest.Total != logged {
		t.Errorf("the startup log counted %d tools, the manifest shows %d", logged, manifest.Total)
	}
}

// TestPortInUse checks that a taken port fails at once, in one line that
// names another port and the make variable.
func TestPortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().(*net.TCPAddr)
	data := t.TempDir()
	code, stdout, stderr := runCLI(t, "", "serve", "--http", addr.String(), "--data-dir", data)
	next := "127.0.0.1:" + strconv.Itoa(addr.Port+1)
	want := "codecell: listen on " + addr.String() + ": the address is in use (another codecell?); serve on another with --http " + next + ", or make run ADDR=" + next + "\n"
	if code != 1 || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr\n%q\nwant exit 1 and\n%q", code, stdout, stderr, want)
	}
	// It failed before opening the store.
	if entries, _ := os.ReadDir(data); len(entries) != 0 {
		t.Errorf("the data directory has %d entries", len(entries))
	}
}

func TestShellJoin(t *testing.T) {
	t.Parallel()
	got := shellJoin([]string{"npx", "-e", "A=b,c", "/a dir/codecell", "it's", ""})
	want := `npx -e A=b,c '/a dir/codecell' 'it'\''s' ''`
	if got != want {
		t.Errorf("shellJoin = %s, want %s", got, want)
	}
}

// startBanner starts an HTTP server and returns its banner, up to "Press
// Ctrl-C", and the number of tools its startup log counted (-1 when it
// did not). The server is killed when the test ends.
func startBanner(t *testing.T, cmd *exec.Cmd) (string, int) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	// Read the banner up to "Press Ctrl-C", and the startup log's count.
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var banner strings.Builder
	logged := -1
	countRE := regexp.MustCompile(`msg="tools ready" tools=(\d+)`)
	deadline := time.After(30 * time.Second)
	for !strings.Contains(banner.String(), "Press Ctrl-C") {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("server exited:\n%s", banner.String())
			}
			if m := countRE.FindStringSubmatch(l); m != nil {
				logged, _ = strconv.Atoi(m[1])
			}
			banner.WriteString(l + "\n")
		case <-deadline:
			t.Fatalf("no banner:\n%s", banner.String())
		}
	}
	go func() {
		for range lines {
		}
	}()
	return banner.String(), logged
}

// desktopServer is an entry of claude_desktop_config.json's mcpServers.
type desktopServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// desktopEntry is the codecell entry of the Claude Desktop snippet a
// banner prints.
func desktopEntry(t *testing.T, banner string) desktopServer {
	t.Helper()
	var snippet struct {
		MCPServers map[string]desktopServer `json:"mcpServers"`
	}
	_, rest, _ := strings.Cut(banner, "claude_desktop_config.json")
	if i := strings.Index(rest, "{"); i < 0 {
		t.Fatalf("no Claude Desktop snippet:\n%s", banner)
	} else if err := json.NewDecoder(strings.NewReader(rest[i:])).Decode(&snippet); err != nil {
		t.Fatalf("Claude Desktop snippet: %v\n%s", err, banner)
	}
	return snippet.MCPServers["codecell"]
}

// TestBannerEntryServesStdio starts an HTTP server from a configuration
// file that sets server.http, as a team's file may, and runs the Claude
// Desktop entry its banner prints as a host does: with a minimal
// environment, over pipes. The entry copies the file; it must still answer
// on stdio, and once the host closes its stdin, the server and every
// process it started (the sandbox workers) must end on their own.
func TestBannerEntryServesStdio(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to find the server's processes")
	}
	dir := t.TempDir()
	// A free port for the file to name: were the entry to serve HTTP, it
	// would listen there and never answer on stdio.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fileAddr := ln.Addr().String()
	ln.Close()
	cfgFile := filepath.Join(dir, "codecell.toml")
	if err := os.WriteFile(cfgFile, []byte("[server]\nhttp = \""+fileAddr+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	text, _ := startBanner(t, exec.Command(binary, "serve", "--config", cfgFile, "--http", "127.0.0.1:0", "--data-dir", data))

	inspector := "npx @modelcontextprotocol/inspector -- " + binary + " serve --stdio --config " + cfgFile + " --data-dir " + data
	if !strings.Contains(text, inspector) {
		t.Errorf("banner does not contain the Inspector command\n%s\n%s", inspector, text)
	}
	desktop := desktopEntry(t, text)
	if want := []string{"serve", "--stdio", "--config", cfgFile, "--data-dir", data}; desktop.Command != binary || !slices.Equal(desktop.Args, want) {
		t.Fatalf("snippet runs %s %q, want %s %q", desktop.Command, desktop.Args, binary, want)
	}

	host := exec.Command(desktop.Command, desktop.Args...)
	host.Dir = dir
	host.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for k, v := range desktop.Env {
		host.Env = append(host.Env, k+"="+v)
	}
	stdin, err := host.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = host.Wait(); close(exited) }()
	t.Cleanup(func() {
		host.Process.Kill()
		<-exited
	})
	c := client.NewClient(transport.NewIO(stdout, stdin, nil))
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	initialize(t, c)
	isErr, rec, txt := callExecute(t, c, map[string]any{"code": "(await util.echo({text: 'stdio'})).text"})
	if isErr || string(rec.Result) != `"stdio"` {
		t.Fatalf("execute_code over the entry's stdio: %s", txt)
	}
	if conn, err := net.DialTimeout("tcp", fileAddr, time.Second); err == nil {
		conn.Close()
		t.Errorf("the entry also listens on the file's address %s", fileAddr)
	}
	children := descendants(host.Process.Pid)
	if len(children) == 0 {
		t.Errorf("the server started no sandbox worker (process isolation is the default)")
	}

	// The host goes away: it closes the server's stdin.
	c.Close()
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("the server exited with %v once its stdin closed", waitErr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the server still runs 20 s after its host closed stdin")
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range children {
		for running(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if running(pid) {
			t.Errorf("process %d, started by the server, outlived it", pid)
		}
	}
}
