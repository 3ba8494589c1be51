package mcpserver_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/tools"
)

// TestListChangedOncePerBurst (attack15 L1): twenty skills published and
// unpublished in a row were forty tools/list_changed and forty
// resources/list_changed sent to every client. A client now hears of a
// burst of changes once or twice (a window may close within it), and
// always after the last one.
func TestListChangedOncePerBurst(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{})
	c := start(t, transports[0].connect(t, srv))
	toolsChanged, onTools := collect("notifications/tools/list_changed")
	resChanged, onRes := collect("notifications/resources/list_changed")
	c.OnNotification(func(n mcp.JSONRPCNotification) { onTools(n); onRes(n) })
	h := func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`1`), nil }
	for range 20 {
		if err := srv.Registry().Register(tools.Tool{Name: "skills.flip", Summary: "Flip.", Handler: h}); err != nil {
			t.Fatal(err)
		}
		srv.Registry().Unregister("skills.flip")
	}
	toolsChanged.wait(t)
	resChanged.wait(t)
	time.Sleep(4 * 250 * time.Millisecond) // what else the burst sends
	for what, n := range map[string]*notes{"tools": toolsChanged, "resources": resChanged} {
		n.mu.Lock()
		if len(n.got) > 3 {
			t.Errorf("%d %s/list_changed for 40 changes in a row", len(n.got), what)
		}
		n.mu.Unlock()
	}
}
