package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/tools"
)

// TestAnswerID: the stream's writer releases a request when it writes the
// answer carrying its id, and nothing else: not a request or
// notification of the server's, not an event of another kind.
func TestAnswerID(t *testing.T) {
	for _, tc := range []struct {
		event, id string
		ok        bool
	}{
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n", "n:7", true},
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"7\",\"error\":{\"code\":-32600}}\n\n", "s:7", true},
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"sampling/createMessage\",\"params\":{}}\n\n", "", false},
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n", "", false},
		{"event: endpoint\ndata: /message?sessionId=x\r\n\r\n", "", false},
		{"event: message\ndata: not json\n\n", "", false},
	} {
		id, ok := answerID([]byte(tc.event))
		if id != tc.id || ok != tc.ok {
			t.Errorf("answerID(%q) = %q, %v; want %q, %v", tc.event, id, ok, tc.id, tc.ok)
		}
	}
}

// TestSSEReservationsBelongToTheirRequests (issue 19, attack8 C2): on
// SSE the client picks the ids, and each answer written to the stream
// released the request posted first under its id: a quick request
// reusing a slow one's id released the slow one's bytes, and an id
// spelled 1.0 (answered by mcp-go as 1) was never released while the
// stream lasted. A request's reservation is released by its own answer:
// an id already awaiting its answer is refused, and ids are followed as
// mcp-go answers them.
func TestSSEReservationsBelongToTheirRequests(t *testing.T) {
	t.Parallel()
	entered, finish := make(chan struct{}, 1), make(chan struct{})
	reg := tools.NewRegistry()
	if err := reg.Register(tools.Tool{Name: "notes.slow", Summary: "Wait until told.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: tools.Annotations{ReadOnly: true},
		Handler: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			entered <- struct{}{}
			select {
			case <-finish:
			case <-ctx.Done():
			}
			return json.RawMessage(`"slow"`), nil
		}}); err != nil {
		t.Fatal(err)
	}
	exec, err := executor.New(executor.Config{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Close() })
	srv, err := New(Config{Executor: exec, Expose: ExposeBoth}, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	stream, err := http.Get(ts.URL + PathSSE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stream.Body.Close() })
	events := make(chan string, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(stream.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- d
			}
		}
	}()
	next := func() string {
		t.Helper()
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatal("the stream ended")
			}
			return e
		case <-time.After(30 * time.Second):
			t.Fatal("no event on the stream in 30 s")
		}
		return ""
	}
	endpoint := next()
	post := func(body string) int {
		t.Helper()
		resp, err := http.Post(ts.URL+endpoint, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// answer waits for the answer carrying id, as mcp-go writes it.
	answer := func(id string) {
		t.Helper()
		for {
			if e := next(); strings.Contains(e, `"id":`+id+`,`) && !strings.Contains(e, `"method"`) {
				return
			}
		}
	}
	barrier := 100
	// awaiting counts the requests followed until their answers.
	awaiting := func() int {
		m := srv.sseMsgs
		m.mu.Lock()
		defer m.mu.Unlock()
		n := 0
		for _, f := range m.bySession {
			n += len(f.byID)
		}
		return n
	}
	// settled answers a ping after everything posted before, then waits
	// until want requests are still followed: mcp-go answers the requests
	// of a stream concurrently, and one's answer may follow the ping's. A
	// request released is forgotten after its bytes are given back.
	settled := func(want int) (bytes int64, open int) {
		t.Helper()
		barrier++
		if code := post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, barrier)); code != http.StatusAccepted {
			t.Fatalf("ping: %d", code)
		}
		answer(fmt.Sprint(barrier))
		for deadline := time.Now().Add(10 * time.Second); awaiting() > want && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		o := srv.open
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.bodyTotal, o.total
	}
	if code := post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c2","version":"1"}}}`); code != http.StatusAccepted {
		t.Fatalf("initialize: %d", code)
	}
	answer("0")
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	baseBytes, baseOpen := settled(0)

	slow := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notes__slow","arguments":{"pad":"` + strings.Repeat("x", 64<<10) + `"}}}`
	if code := post(slow); code != http.StatusAccepted {
		t.Fatalf("the slow call: %d", code)
	}
	<-entered
	held, _ := settled(1)
	if held-baseBytes < 64<<10 {
		t.Fatalf("the slow call holds %d bytes, want its body's %d at least", held-baseBytes, len(slow))
	}
	for _, tc := range []struct {
		name, body string
		code       int
	}{
		{"the slow call's id again", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, http.StatusConflict},
		{"the slow call's id spelled 1e0", `{"jsonrpc":"2.0","id":1e0,"method":"ping"}`, http.StatusConflict},
		{"the slow call's id spelled 1.0, trailing bytes", `{"jsonrpc":"2.0","id":1.0,"method":"ping"} {}`, http.StatusConflict},
		{"a string id of the same text", `{"jsonrpc":"2.0","id":"1","method":"ping"}`, http.StatusAccepted},
		{"another id spelled 2.0", `{"jsonrpc":"2.0","id":2.0,"method":"ping"}`, http.StatusAccepted},
		{"an id that is not a string or a number", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code := post(tc.body); code != tc.code {
				t.Errorf("posted: %d, want %d", code, tc.code)
			}
			if got, _ := settled(1); got != held {
				t.Errorf("held %d bytes after its answer, want the slow call's %d still, and no more", got-baseBytes, held-baseBytes)
			}
		})
	}
	close(finish)
	answer("1")
	if b, open := settled(0); b != baseBytes || open != baseOpen {
		t.Errorf("after every answer: %d bytes, %d requests held; want %d, %d", b, open, baseBytes, baseOpen)
	}
}
