package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver/engine"
)

// logLevels maps console levels to MCP logging levels.
var logLevels = map[string]mcp.LoggingLevel{
	"debug": mcp.LoggingLevelDebug,
	"log":   mcp.LoggingLevelInfo,
	"info":  mcp.LoggingLevelInfo,
	"warn":  mcp.LoggingLevelWarning,
	"error": mcp.LoggingLevelError,
}

// levelSet remembers the sessions that asked for log messages with
// logging/setLevel; only those receive console lines as they happen.
type levelSet struct{ sessions sync.Map }

func (l *levelSet) hooks() *server.Hooks {
	h := &server.Hooks{}
	h.AddAfterSetLevel(func(ctx context.Context, _ any, _ *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			l.sessions.Store(cs.SessionID(), true)
		}
	})
	h.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		l.sessions.Delete(cs.SessionID())
	})
	return h
}

// wants reports whether the request's client asked for log messages: a
// request of protocol 2026-07-28 or later declares a level in its _meta;
// an older session has called logging/setLevel.
func (l *levelSet) wants(ctx context.Context) bool {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.LogLevel != ""
	}
	cs := server.ClientSessionFromContext(ctx)
	if cs == nil {
		return false
	}
	_, ok := l.sessions.Load(cs.SessionID())
	return ok
}

// streamTo arranges for a run's progress to reach the client as
// notifications/progress, when the request carries a progress token, and
// its console lines as notifications/message, when the client set a log
// level. Notifications are best effort: a client that went away only
// loses them.
func (s *Server) streamTo(ctx context.Context, req mcp.CallToolRequest, x *engine.Execution) (sent *atomic.Bool) {
	sent = &atomic.Bool{}
	if meta := req.Params.Meta; meta != nil && meta.ProgressToken != nil {
		token := meta.ProgressToken
		last := 0.0
		x.OnProgress = func(message string, fraction float64) {
			p := last + 0.001 // progress must increase with every notification
			params := map[string]any{"progressToken": token, "message": message}
			if fraction >= 0 {
				p = max(fraction*100, p)
				params["total"] = 100
			}
			last = p
			params["progress"] = p
			if err := s.mcp.SendNotificationToClient(ctx, "notifications/progress", params); err != nil {
				s.log.Debug("progress notification", "err", err)
			}
			sent.Store(true)
		}
	}
	if s.levels.wants(ctx) {
		x.OnLog = func(l executor.LogLine) {
			n := mcp.NewLoggingMessageNotification(logLevels[l.Level], "codecell.console", l.Message)
			if err := s.mcp.SendLogMessageToClient(ctx, n); err != nil {
				s.log.Debug("log notification", "err", err)
			}
			sent.Store(true)
		}
	}
	return sent
}

// flushNotifications waits, briefly, until the session's queued
// notifications are written, so that they reach the client before the
// response they belong to: mcp-go writes notifications from a goroutine of
// its own, and a client ignores progress for a request it has answered.
func flushNotifications(ctx context.Context) {
	cs := server.ClientSessionFromContext(ctx)
	if cs == nil {
		return
	}
	ch := cs.NotificationChannel()
	deadline := time.Now().Add(200 * time.Millisecond)
	for len(ch) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
	// The last one may be taken from the queue but not yet written.
	runtime.Gosched()
	time.Sleep(2 * time.Millisecond)
}

// Task status notifications (notifications/tasks/status) carry a task's
// id and status. mcp-go sends each to every session; ownTaskNotes keeps
// them to the sessions of the task's principal. It filters the event
// streams the HTTP transports write — a GET listening stream, a POST's
// stream, a resumed one, the legacy SSE stream — dropping the events of
// tasks that are not the requester's. Over stdio there is one principal,
// whose tasks they all are.

// ownTaskNotes wraps an HTTP transport's handler.
func (s *Server) ownTaskNotes(next http.Handler) http.Handler {
	if s.eng.Tasks().Disabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		principal := s.cfg.Principal
		if p, ok := principalFrom(r.Context()); ok {
			principal = p
		}
		tw := &taskNoteWriter{ResponseWriter: w, keep: func(id string) bool { return s.eng.Tasks().OwnedBy(id, principal) }}
		next.ServeHTTP(tw, r)
	})
}

// taskNoteWriter passes a response through, except, in an event stream,
// the task status events whose task keep refuses. It holds back the part
// of an event written so far until the event is whole.
type taskNoteWriter struct {
	http.ResponseWriter
	keep func(taskID string) bool

	decided, events bool // whether the body is an event stream, once known
	pending         []byte
}

func (w *taskNoteWriter) decide() {
	if !w.decided {
		w.decided = true
		w.events = strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream")
	}
}

func (w *taskNoteWriter) WriteHeader(code int) {
	w.decide()
	w.ResponseWriter.WriteHeader(code)
}

func (w *taskNoteWriter) Write(p []byte) (int, error) {
	w.decide()
	if !w.events {
		return w.ResponseWriter.Write(p)
	}
	w.pending = append(w.pending, p...)
	for {
		end := eventEnd(w.pending)
		if end < 0 {
			return len(p), nil
		}
		event := w.pending[:end]
		if !w.foreignTask(event) {
			if _, err := w.ResponseWriter.Write(event); err != nil {
				return 0, err
			}
		}
		w.pending = w.pending[end:]
	}
}

// eventEnd returns where the first event of an event stream ends, after
// the blank line that ends it (lines end with CRLF, LF or CR), or -1
// when it has not ended yet.
func eventEnd(b []byte) int {
	end := -1
	for _, sep := range []string{"\n\n", "\r\n\r\n", "\r\r", "\n\r\n"} {
		if i := bytes.Index(b, []byte(sep)); i >= 0 && (end < 0 || i+len(sep) < end) {
			end = i + len(sep)
		}
	}
	return end
}

// foreignTask reports whether event is a task status notification of a
// task that is not the requester's.
func (w *taskNoteWriter) foreignTask(event []byte) bool {
	if !bytes.Contains(event, []byte(mcp.MethodNotificationTasksStatus)) {
		return false
	}
	var data []byte
	for _, line := range bytes.FieldsFunc(event, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
		}
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			TaskID string `json:"taskId"`
		} `json:"params"`
	}
	if json.Unmarshal(data, &msg) != nil || msg.Method != mcp.MethodNotificationTasksStatus {
		return false
	}
	return !w.keep(msg.Params.TaskID)
}

// Flush sends what was written on; an event still incomplete waits for
// its end.
func (w *taskNoteWriter) Flush() {
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (w *taskNoteWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
