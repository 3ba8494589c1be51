package mcpserver

import (
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveConns serves handler on a connListener of at most max
// connections whose writes wait at most wait.
func serveConns(t *testing.T, max int, wait time.Duration, handler http.Handler) *connListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := newConnListener(ln, max, func(int) time.Duration { return wait }, nil)
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: time.Minute, ConnState: cl.track, ConnContext: cl.connContext}
	go srv.Serve(cl)
	t.Cleanup(func() { srv.Close() })
	return cl
}

// waitOpen waits until cl has want connections open.
func waitOpen(t *testing.T, cl *connListener, want int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for cl.open.Load() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", cl.open.Load(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestUnreadConnectionsAreClosed: a client that pipelines requests and
// never reads their answers loses its connection once a write waits
// past its deadline — the answers of a handler that sets no deadline of
// its own too (attack17: 100 such connections to /healthz stayed open
// for ever, each with a goroutine blocked in a write).
func TestUnreadConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("x", 64<<10)
	cl := serveConns(t, 64, 200*time.Millisecond, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body)
	}))
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", cl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go conn.Write([]byte(strings.Repeat("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 1000)))
	waitOpen(t, cl, 1)
	// The answers fill the connection; the write that no longer fits
	// fails at its deadline and the server closes the connection.
	waitOpen(t, cl, 0)
}

// TestConnectionsPastTheBoundAreClosed: past the bound, while every
// connection serves a request that passed the guard, a new connection is
// closed as soon as it is accepted; once one is idle, a new one takes its
// place.
func TestConnectionsPastTheBoundAreClosed(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	cl := serveConns(t, 2, 10*time.Second, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			serving(r.Context())
			<-release
		}
		io.WriteString(w, "ok")
	}))
	dial := func() net.Conn {
		c, err := net.Dial("tcp", cl.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := dial(), dial()
	for _, c := range []net.Conn{a, b} {
		io.WriteString(c, "GET /block HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	waitOpen(t, cl, 2)
	waitBusy(t, cl, 2)
	over := dial()
	over.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := over.Read(make([]byte, 1)); err == nil || n != 0 {
		t.Fatalf("a connection past the bound was kept (read %d, %v)", n, err)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a connection past the bound was neither served nor closed")
	}
	// Once they have answered, a new connection takes an idle one's place.
	close(release)
	waitBusy(t, cl, 0)
	c := dial()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, _ := io.ReadAll(io.LimitReader(c, 1<<10))
	if !strings.Contains(string(got), "200 OK") {
		t.Fatalf("a connection once the others are idle was not served: %q", got)
	}
}

// waitBusy waits until want of cl's connections serve a request that
// passed the guard.
func waitBusy(t *testing.T, cl *connListener, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cl.mu.Lock()
		n := 0
		for c := range cl.conns {
			if c.busy.Load() {
				n++
			}
		}
		cl.mu.Unlock()
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections serve a request, want %d", n, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestIdleConnectionsGiveWay (attack19 L1): at the bound, a new
// connection takes the place of the one idle the longest — a client with
// no token that held the bound in idle keep-alive connections kept every
// other client out.
func TestIdleConnectionsGiveWay(t *testing.T) {
	t.Parallel()
	cl := serveConns(t, 2, 10*time.Second, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	ask := func(c net.Conn, keep bool) string {
		req := "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
		if !keep {
			req = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
		}
		io.WriteString(c, req)
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		buf := make([]byte, 1<<10)
		n, _ := c.Read(buf)
		return string(buf[:n])
	}
	var idle []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", cl.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got := ask(c, true); !strings.Contains(got, "200 OK") {
			t.Fatalf("a connection within the bound: %q", got)
		}
		idle = append(idle, c)
	}
	waitBusy(t, cl, 0)
	c, err := net.Dial("tcp", cl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := ask(c, false); !strings.Contains(got, "200 OK") {
		t.Fatalf("a new connection while the bound is held by idle ones: %q", got)
	}
	// The first, idle the longest, was closed for it.
	idle[0].SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := idle[0].Read(make([]byte, 1)); err == nil || n != 0 {
		t.Fatalf("the connection idle the longest is still open (read %d, %v)", n, err)
	}
}

// TestUnknownClientsGiveWay (attack22 P2): at the bound, a connection
// whose request has not passed the guard gives way to a new one, though
// it serves the request: a client with no token held the bound with
// connections in which net/http discarded the late bodies of requests to
// /healthz, and every other client's connection was closed at accept.
// Once a request passed the guard, its connection stays.
func TestUnknownClientsGiveWay(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{}, 2)
	cl := serveConns(t, 2, 10*time.Second, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" {
			serving(r.Context())
		} else {
			entered <- struct{}{}
		}
		io.WriteString(w, "ok")
	}))
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", cl.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// A body that comes late: once the handler returns, net/http
		// waits for the body to discard it before it answers, the
		// connection active.
		io.WriteString(c, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n")
		<-entered
		held = append(held, c)
	}
	waitOpen(t, cl, 2)
	ask := func() string {
		c, err := net.Dial("tcp", cl.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET /mcp HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		got, _ := io.ReadAll(io.LimitReader(c, 1<<10))
		return string(got)
	}
	for i := range 2 {
		if got := ask(); !strings.Contains(got, "200 OK") {
			t.Fatalf("request %d: a client was kept out by connections discarding late bodies: %q", i, got)
		}
	}
	// The one discarding the longest went first.
	held[0].SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := held[0].Read(make([]byte, 1)); err == nil || n != 0 {
		t.Fatalf("the first connection discarding a body is still open (read %d, %v)", n, err)
	}
}

// TestCrowdedAddressGivesWay: at the bound, the connection closed for a
// new one is of the address holding the most, though another address's
// has been idle longer: one peer's connections give way to each other
// before another's.
func TestCrowdedAddressGivesWay(t *testing.T) {
	t.Parallel()
	cl := serveConns(t, 3, 10*time.Second, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	dialFrom := func(ip string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		c, err := d.Dial("tcp", cl.Addr().String())
		if err != nil {
			t.Skipf("dial from %s: %v", ip, err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if n, _ := c.Read(make([]byte, 1<<10)); n == 0 {
			t.Fatalf("no answer from %s", ip)
		}
		return c
	}
	alice := dialFrom("127.0.0.1") // idle the longest
	for range 2 {
		dialFrom("127.0.0.2")
	}
	waitOpen(t, cl, 3)
	waitBusy(t, cl, 0)
	dialFrom("127.0.0.2")
	waitOpen(t, cl, 3)
	io.WriteString(alice, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	alice.SetReadDeadline(time.Now().Add(30 * time.Second))
	if got, _ := io.ReadAll(io.LimitReader(alice, 1<<10)); !strings.Contains(string(got), "200 OK") {
		t.Fatalf("the connection of the address holding one was closed for the address holding two: %q", got)
	}
}

// TestExplicitWriteDeadlineStands: a deadline its holder set (an SSE
// event's, an answer's of its size) is not replaced by each write's.
func TestExplicitWriteDeadlineStands(t *testing.T) {
	t.Parallel()
	wrote := make(chan error, 1)
	cl := serveConns(t, 4, time.Nanosecond, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		rc.SetWriteDeadline(time.Now().Add(time.Minute))
		io.WriteString(w, "ok")
		wrote <- rc.Flush()
	}))
	c, err := net.Dial("tcp", cl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if err := <-wrote; err != nil {
		t.Fatalf("a write within its holder's deadline failed: %v", err)
	}
}
