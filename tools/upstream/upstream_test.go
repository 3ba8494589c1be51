package upstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
	"github.com/codecell/codecell/tools/upstream"
)

// fake is the configuration of the fake upstream server in a mode, with
// extra env.
func fake(t testing.TB, mode string, env ...string) upstream.Server {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := upstream.Server{Command: exe, Env: map[string]string{"CODECELL_FAKE_UPSTREAM": mode}}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		s.Env[k] = v
	}
	return s
}

// environ is codecell's environment as the tests' Lookup sees it: the
// real PATH and HOME, a secret of codecell's own, and a token to expand.
func environ(name string) (string, bool) {
	switch name {
	case "PATH", "HOME":
		return os.LookupEnv(name)
	case "CODECELL_AUTH_TOKENS":
		return "alice=codecell-own-secret-token", true
	case "MY_TOKEN":
		return "tok-8f3a9c2e71", true
	}
	return "", false
}

// logBuffer collects a Source's logs, safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// memBlobs keeps blobs in memory.
type memBlobs struct {
	mu   sync.Mutex
	data map[string][]byte
}

func (b *memBlobs) PutBlob(_ context.Context, mime string, data []byte) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.data == nil {
		b.data = map[string][]byte{}
	}
	uri := fmt.Sprintf("codecell://results/blob%d", len(b.data)+1)
	b.data[uri] = bytes.Clone(data)
	return uri, nil
}

type env struct {
	reg   *tools.Registry
	src   *upstream.Source
	logs  *logBuffer
	blobs *memBlobs
}

// start starts a Source over servers in a registry with the built-in
// tools and waits for every server to be tried once.
func start(t testing.TB, servers map[string]upstream.Server, tweak ...func(*upstream.Config)) *env {
	t.Helper()
	return startWithin(t, 30*time.Second, servers, tweak...)
}

// startWithin is start waiting up to wait for the servers.
func startWithin(t testing.TB, wait time.Duration, servers map[string]upstream.Server, tweak ...func(*upstream.Config)) *env {
	t.Helper()
	e := &env{reg: tools.NewRegistry(), logs: &logBuffer{}, blobs: &memBlobs{}}
	if err := builtin.Register(e.reg); err != nil {
		t.Fatal(err)
	}
	cfg := upstream.Config{
		Servers:          servers,
		Registry:         e.reg,
		Lookup:           environ,
		Blobs:            e.blobs,
		Logger:           slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		HandshakeTimeout: 20 * time.Second,
		Grace:            time.Second,
		Backoff:          50 * time.Millisecond,
		MaxBackoff:       time.Second,
	}
	for _, f := range tweak {
		f(&cfg)
	}
	src, err := upstream.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.src = src
	t.Cleanup(func() { src.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	if err := src.Wait(ctx); err != nil {
		t.Fatalf("wait: %v; status %v; logs:\n%s", err, src.Status(), e.logs)
	}
	return e
}

func (e *env) call(t *testing.T, name, args string) (json.RawMessage, error) {
	t.Helper()
	return e.reg.Call(t.Context(), name, json.RawMessage(args))
}

func (e *env) status(name string) upstream.Status {
	for _, s := range e.src.Status() {
		if s.Name == name {
			return s
		}
	}
	return upstream.Status{}
}

// eventually polls cond until it holds, failing after a generous bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: did not happen", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func compactJSON(t *testing.T, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return buf.String()
}

// TestCallsAndResults calls the fake server's tools through the registry
// by their registered names and their originals, and checks how each kind
// of result reaches a program.
func TestCallsAndResults(t *testing.T) {
	t.Parallel()
	e := start(t, map[string]upstream.Server{"Fake Server": fake(t, "serve")})
	if st := e.status("Fake Server"); st.State != upstream.StateReady || st.Category != "fake_server" {
		t.Fatalf("status %+v", st)
	}
	tests := []struct {
		name, tool, args, want string
	}{
		{"hyphenated name registered", "fake_server.get_sum_2", `{"a":2,"b":3}`, `5`},
		{"hyphenated name as alias", "fake_server.get-sum", `{"a":2,"b":3}`, `5`},
		{"a name that is already valid keeps it", "fake_server.get_sum", `{}`, `"other"`},
		{"camel case registered in snake case", "fake_server.create_entities", `{}`, `{"created":2}`},
		{"camel case as alias", "fake_server.createEntities", `{}`, `{"created":2}`},
		{"text stays text", "fake_server.echo", `{"text":"hello there"}`, `"hello there"`},
		{"text that is JSON is parsed", "fake_server.echo", `{"text":" [1, {\"a\": true}] "}`, `[1,{"a":true}]`},
		{"structured content wins", "fake_server.structured", `{}`, `{"temperature":21.5}`},
		{"several contents are an array", "fake_server.multi", `{}`, `["first",[1,2]]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := e.call(t, tt.tool, tt.args)
			if err != nil {
				t.Fatalf("%s: %v", tt.tool, err)
			}
			if got := compactJSON(t, out); got != tt.want {
				t.Errorf("%s = %s, want %s", tt.tool, got, tt.want)
			}
		})
	}
	t.Run("binary contents are handles and artifacts", func(t *testing.T) {
		var arts []tools.Artifact
		var mu sync.Mutex
		ctx := tools.WithReporter(t.Context(), tools.Reporter{Artifact: func(a tools.Artifact) { mu.Lock(); arts = append(arts, a); mu.Unlock() }})
		out, err := e.reg.Call(ctx, "fake_server.image", nil)
		if err != nil {
			t.Fatal(err)
		}
		var hs []upstream.Handle
		if err := json.Unmarshal(out, &hs); err != nil || len(hs) != 2 {
			t.Fatalf("result %s: %v", out, err)
		}
		if hs[0].Type != "image" || hs[0].MimeType != "image/png" || hs[0].Bytes != int64(len(tinyPNG)) || !strings.HasPrefix(hs[0].URI, "codecell://results/") {
			t.Errorf("image handle %+v", hs[0])
		}
		if hs[1].Type != "resource" || hs[1].ResourceURI != "file:///notes.txt" || string(e.blobs.data[hs[1].URI]) != "hello notes" {
			t.Errorf("resource handle %+v", hs[1])
		}
		if strings.Contains(string(out), "iVBOR") {
			t.Error("the image's base64 reached the result")
		}
		mu.Lock()
		defer mu.Unlock()
		if len(arts) != 2 || arts[0].URI != hs[0].URI || arts[0].Tool != "fake_server.image" {
			t.Errorf("artifacts %+v", arts)
		}
	})
	t.Run("isError is an upstream_error with the message", func(t *testing.T) {
		_, err := e.call(t, "fake_server.fail", `{}`)
		var te *tools.Error
		if !errors.As(err, &te) || te.Code != upstream.CodeUpstreamError || !strings.Contains(te.Message, "boom: the widget is broken") {
			t.Fatalf("err = %#v", err)
		}
	})
	t.Run("arguments are validated against the upstream schema", func(t *testing.T) {
		_, err := e.call(t, "fake_server.get-sum", `{"a":"two"}`)
		if tools.CodeOf(err) != tools.CodeInvalidArguments {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestToolDescriptions checks what the registry says of upstream tools:
// names, aliases, title, summary, annotations, schemas, notes.
func TestToolDescriptions(t *testing.T) {
	t.Parallel()
	e := start(t, map[string]upstream.Server{"fake": fake(t, "serve")})
	sum, ok := e.reg.Get("fake.get_sum_2")
	if !ok {
		t.Fatalf("no fake.get_sum_2 in %v", names(e.reg.ListCategory("fake")))
	}
	if !slices.Equal(sum.Aliases, []string{"get-sum"}) || sum.Title != "Get Sum" || sum.Summary != "Returns the sum of two numbers." ||
		!sum.Annotations.ReadOnly || sum.Annotations.Destructive {
		t.Errorf("get-sum: %+v", sum)
	}
	if !strings.Contains(sum.Notes, `Registered as get_sum_2 because get_sum is the name of the upstream tool "get_sum"`) ||
		!strings.Contains(sum.Notes, `named "get-sum"`) {
		t.Errorf("notes: %s", sum.Notes)
	}
	if !strings.Contains(string(sum.InputSchema), `"required":["a","b"]`) {
		t.Errorf("input schema %s", sum.InputSchema)
	}
	st, _ := e.reg.Get("fake.structured")
	if !strings.Contains(string(st.OutputSchema), "temperature") {
		t.Errorf("output schema %s", st.OutputSchema)
	}
	// A tool without annotations has MCP's defaults.
	if ce, _ := e.reg.Get("fake.create_entities"); !ce.Annotations.Destructive || !ce.Annotations.OpenWorld || ce.Annotations.ReadOnly {
		t.Errorf("defaults: %+v", ce.Annotations)
	}
	if s := e.reg.CategorySummary("fake"); s != "Fake tools for codecell's tests." { // the server's instructions
		t.Errorf("category summary %q", s)
	}
}

func names(ts []*tools.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// TestChildEnvironment gives a stdio server only the minimal environment
// and its own env, ${VAR} expanded, and keeps its values out of logs and
// results.
func TestChildEnvironment(t *testing.T) {
	t.Parallel()
	e := start(t, map[string]upstream.Server{"fake": fake(t, "serve", "FAKE_TOKEN=${MY_TOKEN}", "PLAIN=${UNSET_VAR:-dflt}")})
	for _, tt := range []struct{ name, want string }{
		{"PATH", strconv.Quote(os.Getenv("PATH"))},
		{"CODECELL_AUTH_TOKENS", "null"},
		{"CODECELL_FAKE_UPSTREAM", `"serve"`},
		{"PLAIN", `"dflt"`},
		{"FAKE_TOKEN", `"[secret]"`},
	} {
		out, err := e.call(t, "fake.env", `{"name":"`+tt.name+`"}`)
		if err != nil || string(out) != tt.want {
			t.Errorf("env %s = %s, %v; want %s", tt.name, out, err, tt.want)
		}
	}
	eventually(t, "the server's stderr logged", func() bool { return strings.Contains(e.logs.String(), "fake upstream ready") })
	if logs := e.logs.String(); strings.Contains(logs, "tok-8f3a9c2e71") || !strings.Contains(logs, "token in env is [secret]") {
		t.Errorf("the secret or its mark is wrong in the logs:\n%s", logs)
	}
}

// TestUnavailable starts servers that cannot be used: each is listed as
// unavailable with the precise reason, and the others still work.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	missing := upstream.Server{Command: "codecell-no-such-command"}
	tests := []struct {
		name   string
		server upstream.Server
		want   []string
	}{
		{"missing command", missing, []string{"command not found", "codecell-no-such-command"}},
		{"exits at start", fake(t, "exit"), []string{"exited with status 2", "fatal: the configuration file /etc/fake.conf is missing"}},
		{"unset variable", fake(t, "serve", "KEY=${NOT_SET_ANYWHERE}"), []string{"${NOT_SET_ANYWHERE} is not set"}},
	}
	servers := map[string]upstream.Server{"good": fake(t, "serve")}
	for i, tt := range tests {
		servers[fmt.Sprintf("bad%d", i)] = tt.server
	}
	e := start(t, servers, func(c *upstream.Config) { c.Backoff = time.Minute })
	view := e.reg.View(tools.Caller{})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("bad%d", i)
			st := e.status(name)
			if st.State != upstream.StateUnavailable {
				t.Fatalf("state %s: %s", st.State, st.Reason)
			}
			for _, w := range tt.want {
				if !strings.Contains(st.Reason, w) {
					t.Errorf("reason %q lacks %q", st.Reason, w)
				}
			}
			cs := view.CategoryStatus(name)
			if !cs.Unavailable || !strings.Contains(cs.Reason, tt.want[0]) || !slices.Contains(view.Categories(), name) {
				t.Errorf("category %s: %+v in %v", name, cs, view.Categories())
			}
		})
	}
	if _, err := e.call(t, "good.echo", `{"text":"still here"}`); err != nil {
		t.Errorf("the good server: %v", err)
	}
}

// TestHandshakeTimeout gives up on a server that never answers initialize.
func TestHandshakeTimeout(t *testing.T) {
	t.Parallel()
	e := start(t, map[string]upstream.Server{"silent": fake(t, "silent")}, func(c *upstream.Config) {
		c.HandshakeTimeout = 500 * time.Millisecond
		c.Backoff = time.Minute
	})
	st := e.status("silent")
	if st.State != upstream.StateUnavailable || !strings.Contains(st.Reason, "handshake timeout: no answer to initialize within 500ms") {
		t.Errorf("status %+v", st)
	}
}

// TestCrashMidCallRestarts: a server that dies during a call gives the
// call a clear upstream_error with the exit status and last stderr, and
// is started again; calls work after it.
func TestCrashMidCallRestarts(t *testing.T) {
	t.Parallel()
	e := start(t, map[string]upstream.Server{"fake": fake(t, "serve")})
	first, err := e.call(t, "fake.pid", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.call(t, "fake.crash", `{}`)
	var te *tools.Error
	if !errors.As(err, &te) || te.Code != upstream.CodeUpstreamError ||
		!strings.Contains(te.Message, "exited with status 3") || !strings.Contains(te.Message, "crashes on purpose") {
		t.Fatalf("err = %v", err)
	}
	// Calls wait while it reconnects.
	second, err := e.call(t, "fake.pid", `{}`)
	if err != nil {
		t.Fatalf("after the restart: %v (status %+v)", err, e.status("fake"))
	}
	if string(first) == string(second) {
		t.Errorf("the same process answered before and after the crash: %s", first)
	}
	if st := e.status("fake"); st.Restarts < 1 || st.State != upstream.StateReady {
		t.Errorf("status %+v", st)
	}
}

// TestCancellationReachesTheServer: a call whose context ends is answered
// at once and the server hears notifications/cancelled.
func TestCancellationReachesTheServer(t *testing.T) {
	t.Parallel()
	e := start(t, map[string]upstream.Server{"fake": fake(t, "serve")})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := e.reg.Call(ctx, "fake.hang", nil)
	if tools.CodeOf(err) != tools.CodeCanceled {
		t.Fatalf("err = %v", err)
	}
	eventually(t, "the server saw the cancellation", func() bool { return strings.Contains(e.logs.String(), "hang: cancelled by the client") })
}

// TestTimeoutSetting ends a call at the server's timeout.
func TestTimeoutSetting(t *testing.T) {
	t.Parallel()
	s := fake(t, "serve")
	s.Timeout = tools.Duration(200 * time.Millisecond)
	e := start(t, map[string]upstream.Server{"fake": s})
	_, err := e.call(t, "fake.hang", `{}`)
	var te *tools.Error
	if !errors.As(err, &te) || te.Code != upstream.CodeUpstreamTimeout || !strings.Contains(te.Message, "200ms") {
		t.Fatalf("err = %v", err)
	}
}

// TestConcurrencyLimitQueues: more calls than max_concurrent_calls wait
// their turn; none fails.
func TestConcurrencyLimitQueues(t *testing.T) {
	t.Parallel()
	s := fake(t, "serve")
	s.MaxConcurrentCalls = 2
	e := start(t, map[string]upstream.Server{"fake": s})
	var wg sync.WaitGroup
	results := make([]string, 8)
	errs := make([]error, 8)
	for i := range results {
		wg.Go(func() {
			out, err := e.call(t, "fake.concurrent", `{}`)
			results[i], errs[i] = string(out), err
		})
	}
	wg.Wait()
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if n, _ := strconv.Atoi(results[i]); n < 1 || n > 2 {
			t.Errorf("call %d saw %s calls at once, limit 2", i, results[i])
		}
	}
}

// TestSlotsAreSharedOut (issue 19): where several principals call, one
// principal's hanging calls hold at most its share of a server's slots,
// and another principal's call goes through.
func TestSlotsAreSharedOut(t *testing.T) {
	t.Parallel()
	s := fake(t, "serve")
	s.MaxConcurrentCalls = 4
	e := start(t, map[string]upstream.Server{"fake": s}, func(c *upstream.Config) { c.Shared = true })
	alice, stop := context.WithCancel(tools.WithCaller(t.Context(), tools.Caller{Principal: "alice"}))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	for range 4 {
		wg.Go(func() { _, _ = e.reg.Call(alice, "fake.hang", json.RawMessage(`{}`)) })
	}
	// Alice's fourth waits for her share; bob's call does not wait for her.
	eventually(t, "alice's calls in flight", func() bool { return strings.Count(e.logs.String(), "hang: started") >= 3 })
	bob, cancel := context.WithTimeout(tools.WithCaller(t.Context(), tools.Caller{Principal: "bob"}), 10*time.Second)
	defer cancel()
	if out, err := e.reg.Call(bob, "fake.echo", json.RawMessage(`{"text":"bob"}`)); err != nil || string(out) != `"bob"` {
		t.Errorf("bob's call while alice's hang: %s, %v", out, err)
	}
	if n := strings.Count(e.logs.String(), "hang: started"); n != 3 {
		t.Errorf("%d of alice's calls in flight, want her share of 3", n)
	}
	// Alice's own next call says why it waits.
	short, cancel2 := context.WithTimeout(alice, 200*time.Millisecond)
	defer cancel2()
	_, err := e.reg.Call(short, "fake.echo", json.RawMessage(`{"text":"alice"}`))
	if err == nil || !strings.Contains(err.Error(), "max_calls_per_principal") {
		t.Errorf("alice's call beyond her share: %v", err)
	}
}

// TestProgressIsForwarded passes the server's progress notifications to
// the caller's reporter.
func TestProgressIsForwarded(t *testing.T) {
	t.Parallel()
	e := start(t, map[string]upstream.Server{"fake": fake(t, "serve")})
	var mu sync.Mutex
	var got []string
	ctx := tools.WithReporter(t.Context(), tools.Reporter{Progress: func(m string, f float64) {
		mu.Lock()
		got = append(got, fmt.Sprintf("%s %.2f", m, f))
		mu.Unlock()
	}})
	if _, err := e.reg.Call(ctx, "fake.slow", json.RawMessage(`{"ms":30,"steps":3}`)); err != nil {
		t.Fatal(err)
	}
	// The server may send its last notification after the result (mcp-go
	// writes them from another goroutine): those are dropped.
	mu.Lock()
	defer mu.Unlock()
	want := []string{"step 1 0.33", "step 2 0.67", "step 3 1.00"}
	if len(got) < 2 || !slices.Equal(got, want[:len(got)]) {
		t.Errorf("progress %v, want %v or the start of it", got, want)
	}
}

// TestListChangedRefreshesTools registers a tool the server adds later.
func TestListChangedRefreshesTools(t *testing.T) {
	t.Parallel()
	e := start(t, map[string]upstream.Server{"fake": fake(t, "serve")})
	if _, ok := e.reg.Get("fake.late"); ok {
		t.Fatal("fake.late exists before it was added")
	}
	if _, err := e.call(t, "fake.add-tool", `{}`); err != nil {
		t.Fatal(err)
	}
	eventually(t, "fake.late registered", func() bool { _, ok := e.reg.Get("fake.late"); return ok })
	if out, err := e.call(t, "fake.late", `{}`); err != nil || string(out) != `"late"` {
		t.Errorf("fake.late = %s, %v", out, err)
	}
}

// TestBadToolNamesAreSkipped (issue 19): a tool whose name has a
// newline, a NUL, 300 bytes or no UTF-8 is left out with a warning that
// names the server, not the bytes, and the server's other tools serve.
func TestBadToolNamesAreSkipped(t *testing.T) {
	t.Parallel()
	e := start(t, map[string]upstream.Server{"fake": fake(t, "serve", "CODECELL_FAKE_BAD_NAMES=1")})
	if st := e.status("fake"); st.State != upstream.StateReady {
		t.Fatalf("status %v; logs:\n%s", st, e.logs)
	}
	if out, err := e.call(t, "fake.echo", `{"text":"ok"}`); err != nil || string(out) != `"ok"` {
		t.Errorf("fake.echo = %s, %v", out, err)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "skipped tools whose names cannot be registered") || !strings.Contains(logs, "upstream=fake") ||
		!strings.Contains(logs, "count=4") || !strings.Contains(logs, "a name with a control character") || !strings.Contains(logs, "a name of 300 bytes") {
		t.Errorf("no warning naming the server and why:\n%s", logs)
	}
	if strings.Contains(logs, "longlonglong") || strings.Contains(logs, "bad\\nname") {
		t.Errorf("the warning quotes a bad name:\n%s", logs)
	}
}

// TestConfine starts stdio servers through Config.Confine unless they are
// unconfined, and a confined server that ends with a permission error is
// unavailable with a reason that says how to lift the confinement.
func TestConfine(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []upstream.Launch
	denied := fake(t, "serve")
	free := fake(t, "serve")
	free.Unconfined = true
	e := start(t, map[string]upstream.Server{"denied": denied, "free": free, "other": fake(t, "exit")}, func(c *upstream.Config) {
		c.Backoff = time.Minute
		c.Confine = func(l upstream.Launch) (upstream.Launch, error) {
			mu.Lock()
			seen = append(seen, l)
			mu.Unlock()
			if l.Name == "denied" {
				return upstream.Launch{Name: l.Name, Path: "/bin/sh", Args: []string{"-c", "echo 'open /data/key: permission denied' >&2; exit 1"}, Env: l.Env}, nil
			}
			return l, nil
		}
	})
	if st := e.status("denied"); st.State != upstream.StateUnavailable || !strings.Contains(st.Reason, "set unconfined = true") {
		t.Errorf("denied: %+v", st)
	}
	if st := e.status("other"); strings.Contains(st.Reason, "unconfined") {
		t.Errorf("a server that failed for another reason is told about the confinement: %+v", st)
	}
	if st := e.status("free"); st.State != upstream.StateReady {
		t.Errorf("free: %+v", st)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range seen {
		if l.Name == "free" {
			t.Error("an unconfined server went through Confine")
		}
		if l.Name == "denied" && !slices.Contains(l.ConfigEnv, "CODECELL_FAKE_UPSTREAM=serve") {
			t.Errorf("Launch.ConfigEnv %q lacks the server's env", l.ConfigEnv)
		}
	}
}

// TestAllowAndDeny filters tools by glob, on original or registered names.
func TestAllowAndDeny(t *testing.T) {
	t.Parallel()
	s := fake(t, "serve")
	s.Allow = []string{"get*", "echo", "createEntities"}
	s.Deny = []string{"get-sum", "create_entities"}
	e := start(t, map[string]upstream.Server{"fake": s})
	if got := names(e.reg.ListCategory("fake")); !slices.Equal(got, []string{"fake.echo", "fake.get_sum"}) {
		t.Errorf("tools %v", got)
	}
}

// TestCategoryConflict refuses a category that holds other tools.
func TestCategoryConflict(t *testing.T) {
	t.Parallel()
	e := start(t, map[string]upstream.Server{"util": fake(t, "serve")})
	if st := e.status("util"); st.State != upstream.StateUnavailable || !strings.Contains(st.Reason, `category "util" already holds util.`) {
		t.Errorf("status %+v", st)
	}
	if _, err := e.call(t, "util.echo", `{"text":"built-in"}`); err != nil {
		t.Errorf("the built-in tool: %v", err)
	}
}

// TestCloseLeavesNoProcess ends the child and its grandchild, even a
// child that ignores SIGTERM, and removes the tools.
func TestCloseLeavesNoProcess(t *testing.T) {
	t.Parallel()
	e := start(t, map[string]upstream.Server{"fake": fake(t, "serve"), "stubborn": fake(t, "ignore-term")},
		func(c *upstream.Config) { c.Grace = 300 * time.Millisecond })
	var pids []int
	for _, tool := range []string{"fake.pid", "fake.spawn", "stubborn.pid", "stubborn.spawn"} {
		out, err := e.call(t, tool, `{}`)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(string(out))
		if err != nil {
			t.Fatalf("%s = %s", tool, out)
		}
		pids = append(pids, pid)
	}
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("process %d is not running before Close", pid)
		}
	}
	if err := e.src.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		eventually(t, fmt.Sprintf("process %d gone", pid), func() bool { return !alive(pid) })
	}
	if got := e.reg.ListCategory("fake"); len(got) != 0 {
		t.Errorf("tools left after Close: %v", names(got))
	}
	if slices.Contains(e.reg.View(tools.Caller{}).Categories(), "stubborn") {
		t.Error("category left after Close")
	}
}

// alive reports whether a process runs (a zombie waiting to be reaped by
// init does not).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return processExists(pid)
	}
	// The state follows the command name in parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// TestStartDoesNotWait: Start returns while a server is still starting,
// and calls to it wait until it is ready.
func TestStartDoesNotWait(t *testing.T) {
	t.Parallel()
	reg := tools.NewRegistry()
	src, err := upstream.Start(upstream.Config{
		Servers:  map[string]upstream.Server{"slow": fake(t, "slow-start", "CODECELL_FAKE_DELAY=1s")},
		Registry: reg,
		Lookup:   environ,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if st := src.Status()[0]; st.State != upstream.StateConnecting {
		t.Fatalf("status right after Start: %+v", st)
	}
	if cs := reg.View(tools.Caller{}).CategoryStatus("slow"); !cs.Unavailable || !strings.Contains(cs.Reason, "connecting") {
		t.Errorf("category status while starting: %+v", cs)
	}
	if err := src.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if out, err := reg.Call(t.Context(), "slow.echo", json.RawMessage(`{"text":"late but here"}`)); err != nil || string(out) != `"late but here"` {
		t.Errorf("slow.echo = %s, %v", out, err)
	}
}

// TestStartRefusesBadConfiguration names each problem.
func TestStartRefusesBadConfiguration(t *testing.T) {
	t.Parallel()
	_, err := upstream.Start(upstream.Config{Registry: tools.NewRegistry(), Servers: map[string]upstream.Server{
		"a": {},
		"b": {Command: "x", URL: "http://localhost/mcp"},
		"c": {URL: "ftp://example.com", Type: "sse"},
	}})
	var ce *upstream.ConfigError
	if !errors.As(err, &ce) || len(ce.Problems) != 3 {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"a: needs a command", "b: has both a command and a url", `c.url: "ftp://example.com" is not an http`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

// TestTraceContextReachesServer: a call made under a span carries its W3C
// trace context to the server in _meta, so the server's spans join the
// run's trace; a call without one carries none.
func TestTraceContextReachesServer(t *testing.T) {
	t.Parallel()
	e := start(t, map[string]upstream.Server{"fake": fake(t, "serve")})
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(t.Context(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled}))
	out, err := e.reg.Call(ctx, "fake.trace_meta", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"`; string(out) != want {
		t.Errorf("the server saw traceparent %s, want %s", out, want)
	}
	if out, err := e.call(t, "fake.trace_meta", `{}`); err != nil || string(out) != `""` {
		t.Errorf("without a span: %s, %v", out, err)
	}
}
