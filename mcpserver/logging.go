package mcpserver

import (
	"context"
	"log/slog"
	"strings"

	"github.com/codecell/codecell/mcpserver/engine"
)

// sessionHider is a slog.Handler that never writes an MCP session ID: a
// session ID is a bearer credential for that session, so logs carry a
// short hash of it instead, enough to tell sessions apart. mcp-go's
// transports log session IDs by their own keys.
type sessionHider struct{ slog.Handler }

func hideSessions(log *slog.Logger) *slog.Logger { return slog.New(sessionHider{log.Handler()}) }

func (h sessionHider) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(hideSession(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h sessionHider) WithAttrs(as []slog.Attr) slog.Handler {
	hidden := make([]slog.Attr, len(as))
	for i, a := range as {
		hidden[i] = hideSession(a)
	}
	return sessionHider{h.Handler.WithAttrs(hidden)}
}

func (h sessionHider) WithGroup(name string) slog.Handler {
	return sessionHider{h.Handler.WithGroup(name)}
}

func hideSession(a slog.Attr) slog.Attr {
	if !strings.Contains(strings.ToLower(a.Key), "session") || a.Value.Kind() != slog.KindString || a.Value.String() == "" {
		return a
	}
	return slog.String(a.Key+"_hash", engine.SessionHash(a.Value.String()))
}
