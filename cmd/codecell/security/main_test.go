// Package security attacks the built codecell binary over HTTP, as two
// principals, alice and bob, would: every test is an attack a review
// found (issue 10), then a normal run that shows the server still serves.
// It runs with the rest of the tests (make test).
package security

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// binary is the codecell binary built for these tests.
var binary string

const (
	aliceToken = "alice-0123456789abcdef0123456789"
	bobToken   = "bob-0123456789abcdef0123456789ab"
)

func TestMain(m *testing.M) {
	if evilMode() {
		os.Exit(serveEvil())
	}
	dir, err := os.MkdirTemp("", "codecell-security")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// CODECELL_SECURITY_BINARY runs the attacks against another build,
	// such as one from before a fix.
	binary = os.Getenv("CODECELL_SECURITY_BINARY")
	if binary == "" {
		binary = filepath.Join(dir, "codecell")
		// Stamped as the Makefile stamps it, so that nothing depends on
		// the user's Go settings (-buildvcs).
		build := exec.Command("go", "build", "-tags", "sqlite_fts5", "-ldflags", "-X main.version=0.0.0-test", "-o", binary, "..")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build codecell:", err)
			os.Exit(1)
		}
	}
	os.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is a codecell serving HTTP on loopback with alice's and bob's
// tokens.
type server struct {
	base   string
	cmd    *exec.Cmd
	stderr *syncBuffer
}

// start runs the binary with extra flags and environment variables
// (KEY=VALUE entries of extra go to the environment, the rest are flags).
func start(t testing.TB, extra ...string) *server {
	t.Helper()
	return startBinary(t, binary, extra...)
}

// startBinary is start with another codecell binary.
func startBinary(t testing.TB, binary string, extra ...string) *server {
	t.Helper()
	return startFiles(t, binary, nil, extra...)
}

// startFiles is startBinary with files the server inherits, as fds 3 on,
// as a host's may.
func startFiles(t testing.TB, binary string, files []*os.File, extra ...string) *server {
	t.Helper()
	return startWrapped(t, nil, binary, files, extra...)
}

// startWrapped is startFiles with the binary run by wrap (a command and
// its arguments, the binary's path and arguments appended), which execs
// it: the server's pid is the wrapper's.
func startWrapped(t testing.TB, wrap []string, binary string, files []*os.File, extra ...string) *server {
	t.Helper()
	args := []string{"serve", "--http", "127.0.0.1:0"}
	env := append(os.Environ(),
		"CODECELL_SERVER_DATA_DIR="+t.TempDir(),
		"CODECELL_AUTH_TOKENS=alice="+aliceToken+",bob="+bobToken,
	)
	for _, e := range extra {
		if strings.Contains(e, "=") && !strings.HasPrefix(e, "-") {
			env = append(env, e)
		} else {
			args = append(args, e)
		}
	}
	cmd := exec.Command(binary, args...)
	if len(wrap) > 0 {
		cmd = exec.Command(wrap[0], append(append(wrap[1:], binary), args...)...)
	}
	cmd.Env = env
	cmd.ExtraFiles = files
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s := &server{cmd: cmd, stderr: &syncBuffer{}}
	urlRE := regexp.MustCompile(`(http://127\.0\.0\.1:\d+)/mcp`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.stderr.WriteString(sc.Text() + "\n")
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
		t.Fatalf("the server did not print its address:\n%s", s.stderr.String())
	}
	return s
}

// syncBuffer is a bytes.Buffer safe for one writer and many readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// do sends one HTTP request and returns its status, headers and body.
func do(t *testing.T, method, url string, header map[string]string, body string) (int, http.Header, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// session is a Streamable HTTP session of one principal.
type session struct {
	t     *testing.T
	url   string
	token string
	id    string
	next  int
}

// open initializes a session as token's principal.
func (s *server) open(t *testing.T, token string) *session {
	t.Helper()
	code, h, body := do(t, http.MethodPost, s.base+"/mcp", map[string]string{"Authorization": "Bearer " + token},
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"attacker","version":"1"}}}`)
	if code != 200 {
		t.Fatalf("initialize: %d %s", code, body)
	}
	ss := &session{t: t, url: s.base + "/mcp", token: token, id: h.Get("Mcp-Session-Id"), next: 1}
	do(t, http.MethodPost, ss.url, ss.header(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return ss
}

func (ss *session) header() map[string]string {
	return map[string]string{"Authorization": "Bearer " + ss.token, "Mcp-Session-Id": ss.id}
}

// rpc calls method and returns the JSON-RPC result (or fails the test on
// an HTTP or JSON-RPC error).
func (ss *session) rpc(method string, params any) json.RawMessage {
	ss.t.Helper()
	ss.next++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": ss.next, "method": method, "params": params})
	code, _, out := do(ss.t, http.MethodPost, ss.url, ss.header(), string(body))
	if code != 200 {
		ss.t.Fatalf("%s: HTTP %d %s", method, code, out)
	}
	msg := lastMessage(out)
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal([]byte(msg), &r); err != nil || r.Error != nil {
		ss.t.Fatalf("%s: %s", method, msg)
	}
	return r.Result
}

// lastMessage returns the last JSON-RPC message of a JSON or event-stream
// response body.
func lastMessage(body string) string {
	// An event stream's lines start with their field; a JSON answer has
	// no line break outside its strings, whatever "data:" they hold.
	if !strings.HasPrefix(body, "data:") && !strings.Contains(body, "\ndata:") {
		return body
	}
	last := ""
	for _, l := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(l, "data:"); ok {
			last = strings.TrimSpace(d)
		}
	}
	return last
}

// record is the run record execute_code returns.
type record struct {
	Status string          `json:"status"`
	Result json.RawMessage `json:"result"`
	Table  string          `json:"table"`
	Error  *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
		Code    string `json:"code"`
	} `json:"error"`
	Logs []struct {
		Message string `json:"message"`
	} `json:"logs"`
	Stats struct {
		DurationMS   float64 `json:"ms"`
		QueueMS      float64 `json:"queue_ms"`
		ToModelBytes int     `json:"to_model_bytes"`
	} `json:"stats"`
	raw string
}

// run executes code and returns its record.
func (ss *session) run(code string, extra ...any) record {
	ss.t.Helper()
	args := map[string]any{"code": code}
	for i := 0; i+1 < len(extra); i += 2 {
		args[extra[i].(string)] = extra[i+1]
	}
	res := ss.rpc("tools/call", map[string]any{"name": "execute_code", "arguments": args})
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	json.Unmarshal(res, &r)
	var rec record
	if len(r.Content) == 0 || json.Unmarshal([]byte(r.Content[0].Text), &rec) != nil {
		ss.t.Fatalf("no run record: %s", res)
	}
	rec.raw = r.Content[0].Text
	return rec
}

// normal checks that ss still runs programs.
func (ss *session) normal() {
	ss.t.Helper()
	if rec := ss.run(`(await util.echo({text: "still serving"})).text`); rec.Status != "ok" || string(rec.Result) != `"still serving"` {
		ss.t.Fatalf("a normal run after the attack failed: %s", rec.raw)
	}
}
