package balancer

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// backend answers with its name; POSTs without a session open one named
// after it; draining backends answer 503.
func backend(t *testing.T, name string, draining bool) *httptest.Server {
	t.Helper()
	n := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		if r.Header.Get(sessionHeader) == "" {
			n++
			w.Header().Set(sessionHeader, fmt.Sprintf("%s-%d", name, n))
		}
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s:%s", name, b)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestBalancer(t *testing.T) {
	t.Parallel()
	a, b := backend(t, "a", false), backend(t, "b", false)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	drain := backend(t, "drain", true)

	send := func(t *testing.T, lb http.Handler, sid, body string) (int, string, string) {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		if sid != "" {
			req.Header.Set(sessionHeader, sid)
		}
		rec := httptest.NewRecorder()
		lb.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String(), rec.Header().Get(sessionHeader)
	}
	mk := func(t *testing.T, urls ...string) *Balancer {
		t.Helper()
		lb, err := New(urls)
		if err != nil {
			t.Fatal(err)
		}
		return lb
	}

	t.Run("round robin, then affinity", func(t *testing.T) {
		lb := mk(t, a.URL, b.URL)
		seen := map[string]string{}
		for range 4 {
			_, body, sid := send(t, lb, "", "init")
			seen[sid] = body[:1]
		}
		if len(seen) != 4 || lb.Sessions()[0] != 2 || lb.Sessions()[1] != 2 {
			t.Fatalf("sessions %v, per backend %v; want two on each", seen, lb.Sessions())
		}
		for sid, who := range seen {
			for range 3 {
				if _, body, _ := send(t, lb, sid, "call"); body != who+":call" {
					t.Errorf("session %s answered by %q, want %s", sid, body, who)
				}
			}
		}
	})
	t.Run("failover of requests without a session", func(t *testing.T) {
		lb := mk(t, dead.URL, drain.URL, a.URL)
		for range 3 {
			if code, body, _ := send(t, lb, "", "x"); code != 200 || body != "a:x" {
				t.Errorf("got %d %q, want a's answer", code, body)
			}
		}
		if f, _ := lb.Stats(); f == 0 {
			t.Error("no failover counted")
		}
	})
	t.Run("a session whose backend is gone is 404", func(t *testing.T) {
		c := backend(t, "c", false)
		lb := mk(t, c.URL)
		_, _, sid := send(t, lb, "", "init")
		c.Close()
		if code, body, _ := send(t, lb, sid, "call"); code != 404 || !strings.Contains(body, "initialize a new session") {
			t.Errorf("got %d %q, want 404 asking to initialize", code, body)
		}
		if code, _, _ := send(t, lb, "unknown", "call"); code != 404 {
			t.Errorf("unknown session: %d, want 404", code)
		}
	})
	t.Run("all draining", func(t *testing.T) {
		lb := mk(t, drain.URL)
		if code, _, _ := send(t, lb, "", "x"); code != 503 {
			t.Errorf("got %d, want the last backend's 503", code)
		}
	})
	if _, err := New(nil); err == nil {
		t.Error("New without backends")
	}
}
