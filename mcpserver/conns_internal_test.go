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
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: time.Minute}
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

// TestConnectionsPastTheBoundAreClosed: past the bound, a new
// connection is closed as soon as it is accepted, and a connection
// closed makes room for the next.
func TestConnectionsPastTheBoundAreClosed(t *testing.T) {
	t.Parallel()
	cl := serveConns(t, 2, 10*time.Second, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	a, _ := dial(), dial()
	waitOpen(t, cl, 2)
	over := dial()
	over.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := over.Read(make([]byte, 1)); err == nil || n != 0 {
		t.Fatalf("a connection past the bound was kept (read %d, %v)", n, err)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("a connection past the bound was neither served nor closed")
	}
	a.Close()
	waitOpen(t, cl, 1)
	c := dial()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, _ := io.ReadAll(io.LimitReader(c, 1<<10))
	if !strings.Contains(string(got), "200 OK") {
		t.Fatalf("a connection within the bound again was not served: %q", got)
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
