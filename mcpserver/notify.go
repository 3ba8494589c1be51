package mcpserver

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/executor"
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
func (s *Server) streamTo(ctx context.Context, req mcp.CallToolRequest, x *Execution) (sent *atomic.Bool) {
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
