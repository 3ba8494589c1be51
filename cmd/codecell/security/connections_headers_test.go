package security

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLongHeadersRefused (issue 19, attack26 T5): net/http reads a
// request's headers before any handler — before the guard and the token
// — and codecell left its bound at net/http's 1 MiB: 1,000 connections
// with no token, each sending most of a megabyte of header and never
// ending it, took the server from 50 to 1,190 MiB until
// ReadHeaderTimeout closed them. Now a request's headers are bounded at
// 16 KiB: a longer one is answered 431 at once, and as many connections
// cost the server what as many short requests do. A 12 KiB header (a
// long OAuth token) still passes.
func TestLongHeadersRefused(t *testing.T) {
	t.Parallel()
	s := start(t)
	addr := strings.TrimPrefix(s.base, "http://")
	status := func(header int) (string, error) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return "", err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		go c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\nX-Pad: " + strings.Repeat("a", header) + "\r\n\r\n"))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return "", err
		}
		resp.Body.Close()
		return resp.Status, nil
	}
	if got, err := status(12 << 10); err != nil || got != "200 OK" {
		t.Errorf("a 12 KiB header: %s %v, want 200 OK", got, err)
	}
	if got, err := status(1 << 20); err != nil || !strings.HasPrefix(got, "431") {
		t.Errorf("a 1 MiB header: %s %v, want 431 at once", got, err)
	}

	// Connections that each send most of a megabyte of header and never
	// end it, against as many that send 100 bytes of one.
	const conns = 300
	hold := func(pad int) []net.Conn {
		var mu sync.Mutex
		var held []net.Conn
		var wg sync.WaitGroup
		head := []byte("POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nX-Pad: ")
		body := bytes.Repeat([]byte("a"), pad)
		for range conns {
			wg.Go(func() {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				c.SetWriteDeadline(time.Now().Add(8 * time.Second))
				c.Write(head)
				c.Write(body) // fails once the server has answered 431 and closed
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			})
		}
		wg.Wait()
		return held
	}
	pid := s.cmd.Process.Pid
	var peaks [2]int
	for i, pad := range []int{100, 1_040_000} {
		held := hold(pad)
		time.Sleep(3 * time.Second)
		peaks[i] = peakMiB(pid)
		t.Logf("%d connections of %d header bytes: RSS %d MiB, peak %d MiB", conns, pad, rssMiB(pid), peaks[i])
		for _, c := range held {
			c.Close()
		}
	}
	if peaks[1] > peaks[0]+64 {
		t.Errorf("unauthenticated connections' headers took the server's peak to %d MiB, as many short ones %d MiB", peaks[1], peaks[0])
	}
	s.open(t, aliceToken).normal()
}
