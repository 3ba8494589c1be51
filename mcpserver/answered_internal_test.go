package mcpserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/upstream"
)

// TestHoldsUntilAnswered: a hold given with untilAnswered lasts until the
// outermost handler of its request returns — after a writer around
// mcp-go's has written the answer it held back — not until mcp-go's
// handler returns (attack16 J2: 32 unread answers of a 13 MiB image kept
// 1.3 GiB outside every hold). Outside a Streamable HTTP request, the
// caller's deferred function gives it back.
func TestHoldsUntilAnswered(t *testing.T) {
	t.Parallel()
	var released atomic.Bool
	releasedCh := make(chan struct{})
	var releasedBeforeWrite bool
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// mcp-go's handler: it holds, answers and returns.
		defer untilAnswered(r.Context(), func() { released.Store(true); close(releasedCh) })()
		w.Write([]byte(`{"result":"…"}`))
	})
	holdingBack := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// taskResultWriter: the answer is written after inner returns.
		rec := httptest.NewRecorder()
		inner.ServeHTTP(rec, r)
		releasedBeforeWrite = released.Load()
		w.Write(rec.Body.Bytes())
	})
	answeredOnReturn(holdingBack).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/mcp", nil))
	if releasedBeforeWrite {
		t.Error("the hold was given back before the answer was written")
	}
	select { // context.AfterFunc gives it back on a goroutine of its own
	case <-releasedCh:
	case <-time.After(10 * time.Second):
		t.Fatal("the hold was not given back once the request ended")
	}
	var plain atomic.Bool
	deferred := untilAnswered(context.Background(), func() { plain.Store(true) })
	if plain.Load() {
		t.Error("outside a Streamable HTTP request, the hold went before its deferred function")
	}
	deferred()
	if !plain.Load() {
		t.Error("the deferred function did not give the hold back")
	}
}

// TestHoldsUntilTheHandlerReturns (attack22 P3): a hold given with
// untilAnswered lasts until its handler returned too, when the answer's
// context ends first — an SSE stream or a stdio client gone while the
// handler still makes the answer.
func TestHoldsUntilTheHandlerReturns(t *testing.T) {
	t.Parallel()
	answered, done := context.WithCancel(context.Background())
	released := make(chan struct{})
	deferred := untilAnswered(context.WithValue(context.Background(), answerEndsKey{}, answered), func() { close(released) })
	done()
	select {
	case <-released:
		t.Fatal("the hold was given back when the answer's context ended, while its handler still ran")
	case <-time.After(100 * time.Millisecond): // context.AfterFunc runs on a goroutine of its own
	}
	deferred()
	deferred() // a second call gives back nothing more
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the hold was not given back once the handler returned")
	}
}

// TestSSEHoldsUntilAnswered (attack17 K1): on the legacy SSE transport a
// request posted to /message is answered on the session's stream, after
// mcp-go's handler returned and encoded the answer; a hold given with
// untilAnswered lasts until that answer is written to the stream, not
// until the handler returns. 60 reads of an 8 MB file posted to one
// session whose stream was read slowly grew the server by 1.4 GiB.
func TestSSEHoldsUntilAnswered(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, Config{})
	returned, released := make(chan struct{}), make(chan struct{})
	big := strings.Repeat("x", 16<<20) // more than the connection's buffers take
	srv.mcp.AddResource(mcp.NewResource("test://big", "big"), func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		defer untilAnswered(ctx, func() { close(released) })()
		defer close(returned)
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: big}}, nil
	})
	c := openSlowSSE(t, srv)
	c.post(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"test://big"}}`)
	<-returned
	select {
	case <-released:
		t.Fatal("the hold was given back when the handler returned, before its answer was written to the stream")
	case <-time.After(time.Second): // the answer cannot be written while the stream is not read
	}
	c.until(`"id":1,`)
	select {
	case <-released:
	case <-time.After(30 * time.Second):
		t.Fatal("the hold was not given back once the answer was written")
	}
}

// TestSSEHoldsOutliveTheStream (attack22 P3): a request posted to an SSE
// session keeps its hold, and stays counted open for its principal, until
// its handler has returned — not until its stream ends. mcp-go handles a
// posted message on a goroutine the stream's end does not stop: released
// then, 4 × 60 reads of an 8 MB file posted to sessions whose streams
// closed at once were each made held by nothing, and the server grew by
// 5 GiB. The handler's context ends with the stream.
func TestSSEHoldsOutliveTheStream(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, Config{})
	started, returned, released := make(chan struct{}), make(chan struct{}), make(chan struct{})
	unblock := make(chan struct{})
	t.Cleanup(func() { close(unblock) })
	var cancelled atomic.Bool
	srv.mcp.AddResource(mcp.NewResource("test://slow", "slow"), func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		defer untilAnswered(ctx, func() { close(released) })()
		defer close(returned)
		close(started)
		select {
		case <-ctx.Done():
			cancelled.Store(true)
		case <-unblock:
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "done"}}, nil
	})
	openRequests := func() int {
		srv.open.mu.Lock()
		defer srv.open.mu.Unlock()
		return srv.open.total
	}
	before := openRequests() // the stream is counted open too, until it ends
	c := openSlowSSE(t, srv)
	c.post(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"test://slow"}}`)
	<-started
	c.end()
	select {
	case <-released:
		select {
		case <-returned:
		default:
			t.Fatalf("the hold was given back when the stream ended, while the handler still ran (%d requests counted open, %d before the stream)", openRequests(), before)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the handler of a request whose stream ended was neither stopped nor given back its hold")
	}
	if !cancelled.Load() {
		t.Error("the handler's context did not end with the stream")
	}
	for deadline := time.Now().Add(10 * time.Second); openRequests() != before; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests counted open once the handler returned, want %d", openRequests(), before)
		}
	}
}

// TestSSERequestsFollowTheirHandling: sseMessages releases a request
// posted to a session once its answer is written or never will be, and
// its handling (begin) is over; a request not begun when its stream ended
// is released then and refused when it would begin.
func TestSSERequestsFollowTheirHandling(t *testing.T) {
	t.Parallel()
	m := newSSEMessages()
	m.opened("s")
	var released [3]atomic.Int32
	follow := func(i int) *awaited {
		a, state := m.await("s", fmt.Sprint(i), func() { released[i].Add(1) })
		if state != awaiting {
			t.Fatalf("request %d: state %d", i, state)
		}
		return a
	}
	// 0: begun, answered, its handling over after.
	a0 := follow(0)
	h0, over0 := context.WithCancel(context.Background())
	if err := a0.begin(h0); err != nil {
		t.Fatal(err)
	}
	m.answered("s", "0")
	if _, state := m.await("s", "0", func() {}); state != awaiting {
		t.Errorf("an id whose answer is written is still in use (state %d)", state)
	}
	if released[0].Load() != 0 {
		t.Error("released when its answer was written, before its handling was over")
	}
	over0()
	waitFor(t, func() bool { return released[0].Load() == 1 }, "request 0 released once its handling was over")
	// 1: begun when its stream ends; 2: not begun.
	a1, a2 := follow(1), follow(2)
	h1, over1 := context.WithCancel(context.Background())
	if err := a1.begin(h1); err != nil {
		t.Fatal(err)
	}
	m.closed("s")
	if released[2].Load() != 1 {
		t.Error("a request not begun was not released when its stream ended")
	}
	if err := a2.begin(context.Background()); !errors.Is(err, errStreamEnded) {
		t.Errorf("a request begun after its stream ended: %v, want errStreamEnded", err)
	}
	if released[1].Load() != 0 {
		t.Error("a request in progress was released when its stream ended")
	}
	if a1.ended.Err() == nil {
		t.Error("the stream's context did not end")
	}
	over1()
	waitFor(t, func() bool { return released[1].Load() == 1 }, "request 1 released once its handling was over")
	for i := range released {
		if n := released[i].Load(); n != 1 {
			t.Errorf("request %d released %d times", i, n)
		}
	}
}

// waitFor waits up to 10 s for cond, else fails saying what.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not " + what)
		}
	}
}

// TestSSEBridgedReadsHeldUntilAnswered (attack17 M1): a bridged server's
// resource read holds what its answer decodes into until the answer is
// written, not until the handler returns: a blob passes whole. The
// principal's share holds one read of the blob, not two: a second read
// waits for its bytes until the first's answer is written to the stream.
func TestSSEBridgedReadsHeldUntilAnswered(t *testing.T) {
	t.Parallel()
	blob := strings.Repeat("A", 16<<20)
	held := make(chan struct{}, 2)
	b := &testBridge{read: func(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
		// As the bridge does: hold what the answer decodes into first.
		if err := tools.HoldDecoded(ctx, int64(len(blob)), 1); err != nil {
			return nil, err
		}
		held <- struct{}{}
		return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{mcp.BlobResourceContents{URI: uri, MIMEType: "application/octet-stream", Blob: blob}}}, nil
	}, resources: []upstream.Resource{{Category: "files", Resource: mcp.NewResource("file:///big.bin", "big")}}}
	// A share of 24 MiB (three quarters of 32): one read's 16 MiB, not two.
	srv := newTestServer(t, Config{Bridge: b, Limits: engine.Limits{ResultBytesInFlight: 32 << 20}})
	c := openSlowSSE(t, srv)
	read := func(id int) {
		c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":%q}}`, id, UpstreamPrefix+"files/file:///big.bin"))
	}
	read(1)
	<-held
	read(2)
	select {
	case <-held:
		t.Fatal("a second read had the bytes the first one's answer, not yet written to the stream, still takes")
	case <-time.After(2 * time.Second): // the first answer cannot be written while the stream is not read
	}
	c.until(`"id":1,`)
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the second read did not have its bytes once the first answer was written")
	}
	c.until(`"id":2,`)
}

// testBridge is a Bridge with the resources given, read by read.
type testBridge struct {
	resources []upstream.Resource
	read      func(ctx context.Context, uri string) (*mcp.ReadResourceResult, error)
}

func (b *testBridge) Prompts() []upstream.Prompt                     { return nil }
func (b *testBridge) Resources() []upstream.Resource                 { return b.resources }
func (b *testBridge) ResourceTemplates() []upstream.ResourceTemplate { return nil }
func (b *testBridge) GetPrompt(context.Context, string, string, map[string]string) (*mcp.GetPromptResult, error) {
	return nil, errors.New("no prompts")
}
func (b *testBridge) ReadResource(ctx context.Context, _, uri string) (*mcp.ReadResourceResult, error) {
	return b.read(ctx, uri)
}
func (b *testBridge) Subscribe(context.Context, string, string) (bool, error) { return false, nil }
func (b *testBridge) SetListener(func(upstream.Event))                        {}

// newTestServer is a server of cfg with a sandbox and no tools.
func newTestServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	exec, err := executor.New(executor.Config{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Close() })
	cfg.Executor, cfg.Expose = exec, ExposeBoth
	srv, err := New(cfg, tools.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// slowSSE is an initialized SSE session of a client that reads its
// stream only when told (until), with a small receive buffer.
type slowSSE struct {
	t        *testing.T
	base     string
	endpoint string
	events   *bufio.Reader
	end      func() // ends the stream
}

func openSlowSSE(t *testing.T, srv *Server) *slowSSE {
	t.Helper()
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}).DialContext}}
	t.Cleanup(client.CloseIdleConnections)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+PathSSE, nil)
	stream, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stream.Body.Close() })
	c := &slowSSE{t: t, base: ts.URL, events: bufio.NewReaderSize(stream.Body, 64<<10), end: func() { cancel(); stream.Body.Close() }}
	c.endpoint = c.until("sessionId=")
	c.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"slow","version":"1"}}}`)
	c.until(`"id":0,`)
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// until reads the stream up to the data line that contains want.
func (c *slowSSE) until(want string) string {
	c.t.Helper()
	for {
		l, err := c.events.ReadString('\n')
		if err != nil {
			c.t.Fatalf("the stream ended before %q: %v", want, err)
		}
		if d, ok := strings.CutPrefix(l, "data: "); ok && strings.Contains(d, want) {
			return strings.TrimSpace(d)
		}
	}
}

// post posts body to the session: mcp-go accepts it.
func (c *slowSSE) post(body string) {
	c.t.Helper()
	resp, err := http.Post(c.base+c.endpoint, "application/json", strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("posted %.60s: %d", body, resp.StatusCode)
	}
}

// TestStdioHoldsUntilAnswered: over stdio mcp-go encodes a request's
// answer after its handler returned and waits for stdout; a hold given
// with untilAnswered lasts until the answer's line is written, not until
// the handler returns — a client that stops reading stdout keeps the
// holds, not answers held by nothing. A client's header of the name the
// stdio transport uses means nothing over HTTP.
func TestStdioHoldsUntilAnswered(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, Config{})
	returned, released := make(chan struct{}), make(chan struct{})
	srv.mcp.AddResource(mcp.NewResource("test://doc", "doc"), func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		defer untilAnswered(ctx, func() { close(released) })()
		defer close(returned)
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "doc"}}, nil
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe() // a write waits until it is read
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, inR, outW) }()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		go io.Copy(io.Discard, outR)
		<-done
	})
	out := bufio.NewReader(outR)
	line := func(want string) {
		t.Helper()
		for {
			l, err := out.ReadString('\n')
			if err != nil {
				t.Fatalf("stdout ended before %q: %v", want, err)
			}
			if strings.Contains(l, want) {
				return
			}
		}
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"slow","version":"1"}}}`+"\n")
	line(`"id":0,`)
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	io.WriteString(inW, `{"jsonrpc":"2.0","id":"r1","method":"resources/read","params":{"uri":"test://doc"}}`+"\n")
	<-returned
	select {
	case <-released:
		t.Fatal("the hold was given back when the handler returned, before its answer was written to stdout")
	case <-time.After(time.Second): // stdout is not read: the answer cannot be written
	}
	line(`"id":"r1",`)
	select {
	case <-released:
	case <-time.After(30 * time.Second):
		t.Fatal("the hold was not given back once the answer was written")
	}

	// Over HTTP the header is a client's, and nothing follows it.
	header := http.Header{stdioRequestHeader: {"s:r1"}}
	if got := stdioAnswered(context.Background(), header); got.Value(answerEndsKey{}) != nil {
		t.Error("a request that did not come over stdio was given an answer's context by its header")
	}
}

// TestSSESessionsPerPrincipal (attack17 M3): an SSE session counts among
// its principal's sessions (sessions_per_principal) as a Streamable HTTP
// session does: opening one too many ends the least recently used — an
// SSE session's stream ends — and the others are served.
func TestSSESessionsPerPrincipal(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, Config{Sessions: engine.SessionLimits{PerPrincipal: 2}})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	type stream struct {
		endpoint string
		ended    chan struct{}
	}
	open := func() stream {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+PathSSE, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		st := stream{ended: make(chan struct{})}
		br := bufio.NewReader(resp.Body)
		for st.endpoint == "" {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("no endpoint: %v", err)
			}
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				st.endpoint = strings.TrimSpace(d)
			}
		}
		go func() {
			defer close(st.ended)
			io.Copy(io.Discard, br)
		}()
		return st
	}
	ping := func(st stream) int {
		t.Helper()
		resp, err := http.Post(ts.URL+st.endpoint, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":"p","method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	first, second := open(), open()
	ping(second) // the first is now the least recently used
	third := open()
	select {
	case <-first.ended:
	case <-time.After(30 * time.Second):
		t.Fatal("a third SSE session of a principal allowed two did not end its least recently used one")
	}
	for i, st := range []stream{second, third} {
		select {
		case <-st.ended:
			t.Errorf("session %d ended", i+2)
		default:
		}
		if code := ping(st); code != http.StatusAccepted {
			t.Errorf("a ping to session %d: %d", i+2, code)
		}
	}
	if code := ping(first); code == http.StatusAccepted {
		t.Errorf("a ping to the ended session: %d", code)
	}
}
