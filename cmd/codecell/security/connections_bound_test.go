package security

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSlowBodiesGiveWay (issue 19, attack22 P2): at the connection bound
// a new connection took the place only of one idle, and a client with no
// token kept every one of its connections serving: it sent requests to
// /healthz whose 10-byte bodies came late, which net/http waits for, to
// discard them, in StateActive. Every other client's connection was
// closed at accept: 6 of 6 of alice's initializes failed. A connection
// whose request has not passed the guard (token checked, body read) now
// gives way. The server runs with a descriptor limit of 256: its bound
// is 128 connections.
func TestSlowBodiesGiveWay(t *testing.T) {
	t.Parallel()
	s := startWrapped(t, []string{"sh", "-c", `ulimit -n 256 && exec "$@"`, "sh"}, binary, nil)
	addr := strings.TrimPrefix(s.base, "http://")
	hdr := "POST /healthz HTTP/1.1\r\nHost: " + addr + "\r\nContent-Length: 10\r\n\r\n"
	held := 0
	for range 140 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		// The first request's body with the second's headers: once the
		// first is answered, the server waits for the second's body.
		if _, err := io.WriteString(c, hdr+"0123456789"+hdr); err != nil {
			continue
		}
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			continue // closed for a newer one past the bound
		}
		resp.Body.Close()
		held++
	}
	t.Logf("%d connections each waiting for a request's body (load %s)", held, loadAverage())
	if held < 128 {
		t.Fatalf("only %d connections were held: the bound of 128 was not reached", held)
	}
	failed := 0
	for i := range 6 {
		cl := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		req, _ := http.NewRequest(http.MethodPost, s.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"alice","version":"1"}}}`))
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := cl.Do(req)
		if err != nil {
			failed++
			t.Logf("alice's initialize %d: %v", i, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			failed++
			t.Logf("alice's initialize %d: %s", i, resp.Status)
		}
	}
	if failed > 0 {
		t.Errorf("%d of alice's 6 initializes failed while a client with no token held %d connections waiting for late bodies: they do not give way at the bound", failed, held)
	}
}
