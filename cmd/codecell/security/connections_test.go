package security

import (
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestIdleAndSlowConnectionsAreClosed (issue 10, medium): 300 idle
// keep-alive connections were held forever, and with a low descriptor
// limit they blocked real clients. Idle connections and requests whose
// body never finishes arriving are now closed.
func TestIdleAndSlowConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	s := start(t, "CODECELL_SERVER_IDLE_TIMEOUT=1s", "CODECELL_SERVER_READ_TIMEOUT=1s")
	addr := strings.TrimPrefix(s.base, "http://")
	var conns []net.Conn
	for range 300 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	// One more sends the headers of a POST and a little of its body.
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	slow.Write([]byte("POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + aliceToken + "\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\""))
	time.Sleep(3 * time.Second)
	closed := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 512)
		for {
			if _, err := c.Read(buf); err != nil {
				return !strings.Contains(err.Error(), "timeout")
			}
		}
	}
	open := 0
	for _, c := range conns[:20] {
		if !closed(c) {
			open++
		}
	}
	if open > 0 {
		t.Errorf("%d of 20 idle connections are still open after the idle timeout", open)
	}
	if !closed(slow) {
		t.Error("a request whose body never arrives keeps its connection")
	}
	s.open(t, aliceToken).normal()
}

// TestUnreadAnswersLoseTheirConnection (attack17): anyone who can reach
// the port — no token needed — pipelined requests to /healthz on
// connections whose answers it never read, and each connection stayed
// open for ever, its goroutine blocked in a write no deadline bounded,
// keeping a descriptor of the server. Every write to a client now has a
// deadline, so such connections are closed.
func TestUnreadAnswersLoseTheirConnection(t *testing.T) {
	t.Parallel()
	// Idle connections are not what closes these.
	s := start(t, "CODECELL_SERVER_IDLE_TIMEOUT=10m")
	addr := strings.TrimPrefix(s.base, "http://")
	pid := s.cmd.Process.Pid
	// The server's sockets: its sandbox workers' pipes come and go.
	descriptors := func() int {
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range fds {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, f.Name())); err == nil && strings.HasPrefix(l, "socket:") {
				n++
			}
		}
		return n
	}
	before := descriptors()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	// 40,000 answers of /healthz are more than the kernel buffers
	// of a connection hold (4 MiB at most here): the server's write of
	// the next one waits. Few connections: the server answers every
	// request that fits first, which under load takes a while.
	const conns, requests = 4, 40000
	for range conns {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() {
			c.SetWriteDeadline(time.Now().Add(time.Minute))
			c.Write([]byte(strings.Repeat("GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n\r\n", requests)))
		}()
	}
	// Every connection is open.
	for deadline := time.Now().Add(30 * time.Second); descriptors() < before+conns; {
		if time.Now().After(deadline) {
			t.Fatalf("the %d connections did not open: %d descriptors, %d before", conns, descriptors(), before)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Its answers fill it, and a write waits at most 10 s (and a
	// second a MiB): then the connection goes.
	deadline := time.Now().Add(180 * time.Second)
	for descriptors() > before+1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d connections whose answers are never read still hold a descriptor after 180 s", descriptors()-before, conns)
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.open(t, aliceToken).normal()
}
