package mcpserver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestDetachOnReturn: a writer kept past its request — as mcp-go keeps a
// resumable stream's — no longer reaches the request's writer, nor
// whatever that holds (attack15 I7: the answers' bytes, ~500 MiB for 544
// answers of 250 KB), and passes everything on while the request runs.
func TestDetachOnReturn(t *testing.T) {
	t.Parallel()
	var kept http.ResponseWriter
	h := detachOnReturn(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		kept = w
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: 1\n\n"))
		w.(http.Flusher).Flush()
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", nil))
	if rec.Body.String() != "data: 1\n\n" || !rec.Flushed || rec.Header().Get("Content-Type") != "text/event-stream" {
		t.Fatalf("while the request ran: %q flushed %v", rec.Body.String(), rec.Flushed)
	}
	if _, err := kept.Write([]byte("late")); !errors.Is(err, errResponseFinished) {
		t.Errorf("a write after the request: %v", err)
	}
	if w := kept.(*detachingWriter).Unwrap(); w != nil {
		t.Errorf("the kept writer still holds the request's")
	}
	if rec.Body.String() != "data: 1\n\n" {
		t.Errorf("the late write reached the response: %q", rec.Body.String())
	}
}
