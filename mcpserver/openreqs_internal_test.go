package mcpserver

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/codecell/codecell/tools"
)

// TestOpenRequestsKeepCalls (issue 19, third attack round, L14): every
// open request counted toward one total, so 32 principals' streams (256
// each, the most one may hold) took all 8,192, and then every call of
// everyone was refused 429. Streams together leave a part for calls.
func TestOpenRequestsKeepCalls(t *testing.T) {
	o := newOpenRequests(64)
	hold := make(chan struct{})
	var held sync.WaitGroup
	streaming := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hold })
	serve := func(r *http.Request, principal string, next http.Handler) int {
		w := httptest.NewRecorder()
		o.bounded(w, r, principal, true, 4<<20, func(string) {}, next)
		return w.Code
	}
	// Each principal opens as many streams as it may, half Streamable
	// HTTP GETs, half 2026-07-28 subscriptions/listen.
	listen := []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}`)
	var refused int
	var mu sync.Mutex
	for p := range openTotal / o.perPrinc {
		principal := fmt.Sprintf("https://as.example.test#user%d", p)
		for i := range o.perPrinc {
			r := httptest.NewRequest(http.MethodGet, "/mcp", nil)
			if i%2 == 1 {
				r = httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(string(listen)))
			}
			entered := make(chan struct{})
			held.Add(1)
			go func() {
				defer held.Done()
				code := serve(r, principal, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					close(entered)
					streaming(w, r)
				}))
				if code == http.StatusTooManyRequests {
					mu.Lock()
					refused++
					mu.Unlock()
					close(entered)
				}
			}()
			<-entered
		}
	}
	if refused == 0 {
		t.Errorf("%d principals' streams hold all %d open requests", openTotal/o.perPrinc, openTotal)
	}
	call := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code"}}`)
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(string(call)))
	if code := serve(r, "alice", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})); code != http.StatusOK {
		t.Errorf("another principal's call, with every stream held: %d, want 200", code)
	}
	if code := serve(httptest.NewRequest(http.MethodGet, "/mcp", nil), "alice", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})); code != http.StatusTooManyRequests {
		t.Errorf("a stream past the streams' part: %d, want 429", code)
	}
	close(hold)
	held.Wait()
	if o.total != 0 || o.streams != 0 || len(o.byPrincipal) != 0 {
		t.Errorf("after every request ended: %d open, %d streams, %d principals", o.total, o.streams, len(o.byPrincipal))
	}
}

// TestOpenRequestsBodies (issue 19, fourth attack round, A1): bodies were
// read before the request was counted open, and their bytes were counted
// nowhere, so one principal's stalled uploads held the server's memory
// without bound. A request is counted before its body is read, and a
// body whose bytes do not fit the principal's share is refused unread.
func TestOpenRequestsBodies(t *testing.T) {
	const maxBody = 1 << 10
	o := newOpenRequests(64)
	hold := make(chan struct{})
	var held sync.WaitGroup
	refusedWith := map[string]int{}
	var mu sync.Mutex
	serve := func(principal string, size int, next http.Handler) int {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(strings.Repeat("x", size)))
		o.bounded(w, r, principal, true, maxBody, func(reason string) {
			mu.Lock()
			refusedWith[reason]++
			mu.Unlock()
		}, next)
		return w.Code
	}
	// alice's calls hold their bodies until they end; each body (one
	// JSON value's worth of text) holds maxBody with what it decodes into.
	for range bodiesPerPrincipal {
		entered := make(chan struct{})
		held.Add(1)
		go func() {
			defer held.Done()
			serve("alice", maxBody-decodedValueBytes, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { close(entered); <-hold }))
		}()
		<-entered
	}
	if code := serve("alice", 10, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})); code != http.StatusTooManyRequests {
		t.Errorf("alice's body past her share: %d, want 429", code)
	}
	if refusedWith["body_bytes"] != 1 {
		t.Errorf("refusals: %v, want one body_bytes", refusedWith)
	}
	if code := serve("bob", maxBody, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})); code != http.StatusOK {
		t.Errorf("bob's body while alice holds her share: %d, want 200", code)
	}
	if code := serve("bob", maxBody+1, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over the limit: %d, want 413", code)
	}
	close(hold)
	held.Wait()
	if o.total != 0 || o.bodyTotal != 0 || len(o.bodyBytes) != 0 {
		t.Errorf("after every request ended: %d open, %d body bytes, %d principals holding bodies", o.total, o.bodyTotal, len(o.bodyBytes))
	}
}

func TestJSONValues(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{`1`, 1},
		{`{}`, 1},
		{`[ ]`, 1},
		{`[[],{ }]`, 3},
		{`{"a":1,"b":[1,2,3]}`, 6},
		{`"a,b,{[c"`, 1},
		{`"a\",{["`, 1},
		{`[{},{},{}]`, 4},
	} {
		if got := tools.JSONValues([]byte(c.in), 100); got != c.want {
			t.Errorf("JSONValues(%s) = %d, want %d", c.in, got, c.want)
		}
	}
	// attack7 B1: 4 MiB of empty objects is over the limit, and counting
	// stops there.
	many := []byte("[" + strings.Repeat("{},", 1<<20) + "{}]")
	if got := tools.JSONValues(many, maxJSONValues); got != maxJSONValues+1 {
		t.Errorf("jsonValues of 2^20 objects = %d, want %d", got, maxJSONValues+1)
	}
}

// TestIsStreamSpellings: a subscriptions/listen is a stream however JSON
// spells its method (attack10 E5: `subscriptions\/listen` opened a stream
// mcp-go serves that was counted as a call, past the streams' part).
func TestIsStreamSpellings(t *testing.T) {
	for _, method := range []string{`subscriptions/listen`, `subscriptions\/listen`, `subscriptions\u002flisten`, `\u0073ubscriptions/listen`} {
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{}}`)
		if !isStream(httptest.NewRequest(http.MethodPost, "/mcp", nil), body) {
			t.Errorf("%s: not counted as a stream", method)
		}
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code","arguments":{"code":"\"subscriptions/listen\""}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{"code":"a\nb"}}}`,
	} {
		if isStream(httptest.NewRequest(http.MethodPost, "/mcp", nil), []byte(body)) {
			t.Errorf("%s: counted as a stream", body)
		}
	}
}
