package security

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rss is the resident memory of process pid now, in bytes (VmRSS), or -1
// where /proc does not say.
func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return -1
}

// TestBodiesReadBeforeOpenBound (issue 19, fourth round, A1): the guard
// read a POST's whole body (up to limits.max_body_bytes) before the
// open-requests bound counted the request, and counted its bytes
// nowhere: a principal's uploads that stop one byte short of their
// Content-Length were held in the server's memory until
// server.read_timeout, as many at once as it opened connections.
//
// Here sessions_per_principal = 2, so alice may have 8 requests open;
// she starts 48 uploads of 4 MiB. The server's memory must not grow by
// more than her 8 requests' bodies (with slack), and bob is served
// meanwhile.
func TestBodiesReadBeforeOpenBound(t *testing.T) {
	s := start(t, "CODECELL_LIMITS_SESSIONS_PER_PRINCIPAL=2")
	if rss(s.cmd.Process.Pid) < 0 {
		t.Skip("no /proc/<pid>/status here")
	}
	bob := s.open(t, bobToken)
	pid := s.cmd.Process.Pid
	addr := strings.TrimPrefix(s.base, "http://")
	before := rss(pid)
	const conns = 48
	const body = 4 << 20 // limits.max_body_bytes' default
	chunk := []byte(strings.Repeat("x", 256<<10))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		for _, c := range open {
			c.Close()
		}
	})
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
			fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", addr, aliceToken, body)
			for sent := 0; sent < body-1; {
				n := min(len(chunk), body-1-sent)
				if _, err := c.Write(chunk[:n]); err != nil {
					return // refused unread, and the connection closed
				}
				sent += n
			}
		}()
	}
	wg.Wait()
	// Let the server's reads catch up with what was written.
	var grown int64
	for range 50 {
		time.Sleep(100 * time.Millisecond)
		grown = max(grown, rss(pid)-before)
	}
	t.Logf("server RSS %d MiB before, grew by %d MiB while alice held %d uploads of %d MiB (her open-request bound: 8)", before>>20, grown>>20, conns, body>>20)
	const allowed = 8*body*2 + 64<<20
	if grown > allowed {
		t.Errorf("the server holds %d MiB of one principal's request bodies, more than her 8 open requests' (%d MiB allowed): bodies are read before the request is counted open", grown>>20, allowed>>20)
	}
	bob.normal()
}
