package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/tools"
)

// TestDirectCallsHaveADeadline (attack10 E1): a tool called directly
// (server.expose "both") ran outside any run and had no deadline at all —
// a skills__save of deeply nested code held an esbuild process for as long
// as its client kept the request open. A direct call ends by the longest
// deadline a run may have.
func TestDirectCallsHaveADeadline(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{Expose: mcpserver.ExposeBoth},
		executor.Config{Timeout: 200 * time.Millisecond, MaxTimeout: 300 * time.Millisecond})
	if err := srv.Registry().Register(tools.Tool{Name: "slow.wait", Summary: "waits for its context",
		Handler: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}}); err != nil {
		t.Fatal(err)
	}
	c := start(t, transports[0].connect(t, srv))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var req mcp.CallToolRequest
	req.Params.Name = "slow__wait"
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("slow__wait: %v", err)
	}
	if !res.IsError {
		t.Fatalf("slow__wait ended without an error: %+v", res.Content)
	}
	if text := res.Content[0].(mcp.TextContent).Text; !strings.Contains(text, "sandbox.max_timeout") {
		t.Errorf("slow__wait's error does not say it passed its deadline: %s", text)
	}
}
