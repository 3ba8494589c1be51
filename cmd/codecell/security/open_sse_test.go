package security

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSSEMessagesOutliveTheirRequests (issue 19, fourth round, A6): on
// the SSE transport, POST /message answers 202 at once and mcp-go
// handles the message on a goroutine of its own, which queues the
// answer for the session's stream and waits for room when the stream's
// queue is full. The open-requests bound counted the POST only until the
// 202, and the stream had no write deadline: a client that stopped
// reading its stream made every later message wait, with its body, as
// long as the connection stayed open — 128 messages of 4 MiB posted one
// at a time held 655 MiB.
//
// Alice (sessions_per_principal = 2: 8 requests open) opens one SSE
// stream, reads its endpoint, stops reading, and posts 400 KB answers'
// worth of runs and then 128 messages of 4 MiB, one at a time. The
// server must not hold more than her 8 requests' bodies, and bob is
// served meanwhile.
func TestSSEMessagesOutliveTheirRequests(t *testing.T) {
	s := start(t, "CODECELL_LIMITS_SESSIONS_PER_PRINCIPAL=2")
	pid := s.cmd.Process.Pid
	if rss(pid) < 0 {
		t.Skip("no /proc/<pid>/status here")
	}
	bob := s.open(t, bobToken)
	addr := strings.TrimPrefix(s.base, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(4096) // a slow reader: its window fills early
	}
	fmt.Fprintf(c, "GET /sse HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", addr, aliceToken)
	url := s.base + sseEndpoint(t, bufio.NewReader(c))
	codes := map[int]int{}
	post := func(body string) int {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		res.Body.Close()
		codes[res.StatusCode]++
		return res.StatusCode
	}
	post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"slow","version":"1"}}}`)
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// From here on alice reads nothing. Large answers fill the
	// connection's buffers and then the stream's queue.
	for i := range 160 {
		post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"execute_code","arguments":{"code":"'x'.repeat(200000)","budget_bytes":262144}}}`, 100+i))
	}
	time.Sleep(2 * time.Second)
	before := rss(pid)
	pad := strings.Repeat("p", 4<<20-200)
	// One at a time: alice never has more than one request open.
	for i := range 128 {
		post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"_meta":{"pad":%q}}}`, 1000+i, pad))
	}
	var grown int64
	for range 30 {
		time.Sleep(100 * time.Millisecond)
		grown = max(grown, rss(pid)-before)
	}
	t.Logf("the server's RSS grew by %d MiB; answers to alice's posts: %v", grown>>20, codes)
	const allowed = 8*(4<<20)*2 + 64<<20
	if grown > allowed {
		t.Errorf("the server holds %d MiB of one SSE session's messages, more than her 8 open requests' (%d MiB allowed): messages outlive their requests", grown>>20, allowed>>20)
	}
	if codes[http.StatusTooManyRequests] == 0 {
		t.Errorf("no request was refused while the session's stream was not read: %v", codes)
	}
	bob.normal()
}
