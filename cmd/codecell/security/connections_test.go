package security

import (
	"net"
	"strings"
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
