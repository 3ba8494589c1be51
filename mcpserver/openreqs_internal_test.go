package mcpserver

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
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
	serve := func(r *http.Request, body []byte, principal string, next http.Handler) int {
		w := httptest.NewRecorder()
		o.bounded(w, r, body, principal, true, func() {}, next)
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
			var body []byte
			if i%2 == 1 {
				body = listen
				r = httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(string(body)))
			}
			entered := make(chan struct{})
			held.Add(1)
			go func() {
				defer held.Done()
				code := serve(r, body, principal, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	if code := serve(r, call, "alice", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})); code != http.StatusOK {
		t.Errorf("another principal's call, with every stream held: %d, want 200", code)
	}
	if code := serve(httptest.NewRequest(http.MethodGet, "/mcp", nil), nil, "alice", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})); code != http.StatusTooManyRequests {
		t.Errorf("a stream past the streams' part: %d, want 429", code)
	}
	close(hold)
	held.Wait()
	if o.total != 0 || o.streams != 0 || len(o.byPrincipal) != 0 {
		t.Errorf("after every request ended: %d open, %d streams, %d principals", o.total, o.streams, len(o.byPrincipal))
	}
}
