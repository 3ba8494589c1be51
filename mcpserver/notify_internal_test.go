package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestTaskNoteWriter drops the task status events of other principals'
// tasks from an event stream, however the events are cut into writes,
// and passes everything else through.
func TestTaskNoteWriter(t *testing.T) {
	t.Parallel()
	event := func(id, method, task string) string {
		return "id: " + id + "\n" + `event: message` + "\n" + `data: {"jsonrpc":"2.0","method":"` + method + `","params":{"taskId":"` + task + `","status":"completed"}}` + "\n\n"
	}
	mine, theirs := event("1", "notifications/tasks/status", "t-mine"), event("2", "notifications/tasks/status", "t-theirs")
	other := event("3", "notifications/message", "t-theirs")
	endpoint := "event: endpoint\ndata: /message?sessionId=x\r\n\r\n" // as mcp-go's SSE transport ends it
	stream := endpoint + mine + theirs + other + ": ping\n\n"
	for _, cut := range []int{1, 7, 64, len(stream)} {
		rec := httptest.NewRecorder()
		rec.Header().Set("Content-Type", "text/event-stream")
		w := &taskNoteWriter{ResponseWriter: rec, keep: func(id string) bool { return id == "t-mine" }}
		w.WriteHeader(http.StatusOK)
		for rest := stream; rest != ""; {
			n := min(cut, len(rest))
			if k, err := w.Write([]byte(rest[:n])); err != nil || k != n {
				t.Fatalf("write: %d, %v", k, err)
			}
			rest = rest[n:]
		}
		w.Flush()
		if got, want := rec.Body.String(), endpoint+mine+other+": ping\n\n"; got != want {
			t.Errorf("writes of %d bytes: the stream reads\n%s\nwant\n%s", cut, got, want)
		}
	}
	// A response that is no event stream passes as it is.
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "application/json")
	w := &taskNoteWriter{ResponseWriter: rec, keep: func(string) bool { return false }}
	w.Write([]byte(strings.TrimSpace(theirs)))
	if rec.Body.String() != strings.TrimSpace(theirs) {
		t.Errorf("a JSON body was changed: %s", rec.Body.String())
	}
}
