package mcpserver

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/codecell/codecell/mcpserver/engine"
)

func TestLogsHideSessionIDs(t *testing.T) {
	var buf bytes.Buffer
	log := hideSessions(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	const id = "mcp-session-0f3b1c2a-1111-4222-8333-444455556666"
	log.With("session", id).Info("a")
	log.Info("b", "sessionID", id, "other", "kept")
	log.Warn("c", "Session", id)
	out := buf.String()
	if strings.Contains(out, id) || strings.Contains(out, "0f3b1c2a") {
		t.Fatalf("a session ID reached the log:\n%s", out)
	}
	if strings.Count(out, "_hash="+engine.SessionHash(id)) != 3 || !strings.Contains(out, "other=kept") {
		t.Errorf("log:\n%s", out)
	}
}
