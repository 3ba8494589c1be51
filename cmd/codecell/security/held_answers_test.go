package security

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// slowDialer dials connections with a 4 KiB receive buffer: a client
// that reads slowly, or not at all, fills it at once.
var slowDialer = net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
	return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
}}

// TestSSEReadsHeldUntilWritten (issue 19, attack17 K1): on the legacy
// SSE transport a read's answer is written to the session's stream after
// its handler returned; the read's hold was given back then, and the
// answer — an 8 MB file's base64, encoded once more into its event —
// waited in the session's queue held by nothing. 60 reads posted to one
// session whose stream was read at 1 MB/s grew the server by 1.4 GiB.
// Bob posts 32 reads of his 8 MB file to a session whose stream he does
// not read: his share of the results in flight holds four.
func TestSSEReadsHeldUntilWritten(t *testing.T) {
	t.Parallel()
	s := start(t)
	bob := s.open(t, bobToken)
	if rec := bob.run(`await workspace.write({path: "big.bin", data: "////".repeat(2666666), encoding: "base64"}); return 1`); rec.Status != "ok" {
		t.Fatalf("write: %.400s", rec.raw)
	}
	pid := s.cmd.Process.Pid
	before := peakRSS(pid)
	if before < 0 {
		t.Skip("no VmHWM in /proc/<pid>/status to measure memory")
	}
	addr := strings.TrimPrefix(s.base, "http://")
	c, err := slowDialer.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /sse HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", addr, bobToken)
	// From here on the stream is not read.
	postSSE := s.sseSession(t, bufio.NewReader(c), bobToken)
	accepted := 0
	for i := range 32 {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "resources/read", "params": map[string]any{"uri": "codecell://workspace/big.bin"}})
		if postSSE(string(body)) == http.StatusAccepted {
			accepted++
		}
	}
	// The reads are answered within seconds; their answers wait for the
	// stream, 30 s at most an event.
	time.Sleep(10 * time.Second)
	after := peakRSS(pid)
	t.Logf("32 reads of an 8 MB workspace file posted to an SSE session whose stream is not read (%d accepted): peak RSS %d → %d MiB (load %s)", accepted, before>>20, after>>20, loadAverage())
	if accepted == 0 {
		t.Fatal("no read was accepted")
	}
	if grow := after - before; grow > 512<<20 {
		t.Errorf("32 unread answers of an 8 MB file on an SSE stream grew the server by %d MiB: they are held by nothing once their handlers return", grow>>20)
	}
	c.Close()
	bob.normal()
}

// TestSSEHoldsOutliveTheStream (issue 19, attack22 P3): a read posted to
// an SSE session gave its hold back when its stream ended, while mcp-go's
// goroutine, which the stream's end does not stop, went on to read,
// filter and encode the file held by nothing; and the next session's
// reads were admitted at once. 4 × 60 reads of an 8 MB file posted to
// sessions whose streams bob closed at once grew the server from 153 to
// 5,286 MiB (control, the streams kept and read: +505 MiB). Bob does it
// 3 × 40 times: his share of the results in flight (192 MiB, three
// quarters of 256) holds four reads of 48 MB (six times the file); the
// bar is three times the share — what it holds, as much garbage before
// the collector runs, and room for the reads being stopped.
func TestSSEHoldsOutliveTheStream(t *testing.T) {
	t.Parallel()
	s := start(t)
	bob := s.open(t, bobToken)
	if rec := bob.run(`await workspace.write({path: "big.bin", data: "////".repeat(2666666), encoding: "base64"}); return 1`); rec.Status != "ok" {
		t.Fatalf("write: %.400s", rec.raw)
	}
	pid := s.cmd.Process.Pid
	before := peakRSS(pid)
	if before < 0 {
		t.Skip("no VmHWM in /proc/<pid>/status to measure memory")
	}
	posted := 0
	for range 3 {
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/sse", nil)
		req.Header.Set("Authorization", "Bearer "+bobToken)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		postSSE := s.sseSession(t, bufio.NewReader(resp.Body), bobToken)
		for i := range 40 {
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "resources/read", "params": map[string]any{"uri": "codecell://workspace/big.bin"}})
			if postSSE(string(body)) == http.StatusAccepted {
				posted++
			}
		}
		cancel() // the stream ends at once
		resp.Body.Close()
	}
	// What was admitted is read, or refused, within seconds.
	time.Sleep(10 * time.Second)
	after := peakRSS(pid)
	t.Logf("3 × 40 reads of an 8 MB workspace file posted to SSE sessions whose streams ended at once (%d accepted): peak RSS %d → %d MiB (load %s)", posted, before>>20, after>>20, loadAverage())
	if posted == 0 {
		t.Fatal("no read was accepted")
	}
	if grow := after - before; grow > 3*192<<20 {
		t.Errorf("reads posted to SSE sessions whose streams ended grew the server by %d MiB: their holds went with the stream while their handlers went on", grow>>20)
	}
	bob.normal()
}

// TestWorkspaceReadsSizedAsRead (issue 19, attack17 K2): a workspace read
// sizes its file, waits for its hold of six times that, and reads the
// file as it then is. Bob fills his share with four reads of an 8 MB
// file whose answers he does not read, posts 64 reads of a 1 MiB file,
// overwrites it with 8 MiB while they wait, and lets his holds go: each
// read 8 MiB under a hold of 6 — the server's peak grew by 1,061 MiB.
// A file found larger than its hold is read under a hold of its size.
func TestWorkspaceReadsSizedAsRead(t *testing.T) {
	t.Parallel()
	s := start(t)
	bob := s.open(t, bobToken)
	if rec := bob.run(`await workspace.write({path: "big.bin", data: "////".repeat(2752512), encoding: "base64"}); await workspace.write({path: "x.bin", data: "////".repeat(349525) + "//8=", encoding: "base64"}); return 1`); rec.Status != "ok" {
		t.Fatalf("write: %.400s", rec.raw)
	}
	pid := s.cmd.Process.Pid
	before := peakRSS(pid)
	if before < 0 {
		t.Skip("no VmHWM in /proc/<pid>/status to measure memory")
	}
	read := func(uri string, id int) string {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": map[string]any{"uri": uri}})
		return string(b)
	}
	addr := strings.TrimPrefix(s.base, "http://")
	// Four reads of 8 MiB hold 189 of bob's 192 MiB until their answers
	// are written, which they are not.
	var unread []net.Conn
	for i := range 4 {
		c, err := slowDialer.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		body := read("codecell://workspace/big.bin", 100+i)
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nMcp-Session-Id: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
			addr, bobToken, bob.id, len(body), body)
		unread = append(unread, c)
	}
	// Each answer begins: its read has its hold.
	for _, c := range unread {
		c.SetReadDeadline(time.Now().Add(time.Minute))
		if _, err := io.ReadFull(c, make([]byte, 16)); err != nil {
			t.Fatalf("an unread read's answer: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	answers := make([]string, 64)
	for i := range answers {
		wg.Go(func() {
			code, out, err := post(ctx, bob.url, bob.header(), read("codecell://workspace/x.bin", 200+i))
			if err != nil {
				answers[i] = err.Error()
				return
			}
			answers[i] = fmt.Sprintf("%d %d bytes %.200s", code, len(out), out)
		})
	}
	time.Sleep(2 * time.Second) // the reads are sized, and wait
	// Another session of bob's makes x.bin 8 MiB. Its 11 MB of
	// arguments are held four times of his share while the call is in
	// the gate (argsHeld, attack25 F7), so it waits with the reads until
	// the holds of the reads of big.bin go, and then races them: the
	// reads that are served after it read the file as it now is.
	other := s.open(t, bobToken)
	overwrote := make(chan record, 1)
	go func() {
		overwrote <- other.run(`await workspace.write({path: "x.bin", data: "////".repeat(2796202) + "//8=", encoding: "base64"}); return 1`, "timeout_ms", 60000)
	}()
	time.Sleep(2 * time.Second)
	for _, c := range unread {
		c.Close() // the holds of the reads of big.bin go
	}
	if rec := <-overwrote; rec.Status != "ok" {
		t.Fatalf("overwrite: %.400s", rec.raw)
	}
	wg.Wait()
	after := peakRSS(pid)
	read8 := 0
	for _, a := range answers {
		var n int
		if _, err := fmt.Sscanf(a, "200 %d bytes", &n); err == nil && n > 10<<20 {
			read8++
		}
	}
	t.Logf("64 reads of a 1 MiB file that became 8 MiB while they waited: %d read at 8 MiB, peak RSS %d → %d MiB (load %s); first: %.160s", read8, before>>20, after>>20, loadAverage(), answers[0])
	if read8 == 0 {
		// The overwrite raced the reads for bob's share and came last:
		// no read was sized before the growth and read after it.
		t.Logf("no read answered with the file as it now is: %.300s", answers[0])
	}
	if grow := after - before; grow > 640<<20 {
		t.Errorf("64 reads of a file that grew from 1 to 8 MiB while they waited grew the server by %d MiB: they read 8 MiB under holds of 6", grow>>20)
	}
	bob.normal()
}

// sseEndpoint reads an SSE stream up to the endpoint event and returns
// the path its messages are posted to.
func sseEndpoint(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the SSE stream: %v", err)
		}
		if d, ok := strings.CutPrefix(strings.TrimSpace(l), "data: "); ok && strings.Contains(d, "sessionId=") {
			return d
		}
	}
}

// sseSession initializes the session of the SSE stream br, as token, and
// returns how to post a message to it (the HTTP status of the post).
func (s *server) sseSession(t *testing.T, br *bufio.Reader, token string) func(body string) int {
	t.Helper()
	endpoint := sseEndpoint(t, br)
	postSSE := func(body string) int {
		code, _, err := post(t.Context(), s.base+endpoint, map[string]string{"Authorization": "Bearer " + token}, body)
		if err != nil {
			t.Fatalf("post: %v", err)
		}
		return code
	}
	postSSE(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sse","version":"1"}}}`)
	postSSE(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return postSSE
}
