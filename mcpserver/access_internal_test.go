package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/tools"
)

// TestScopeToolsets: an OAuth identity's scopes choose its toolset, as
// its principal's rule does, through an in-process client whose requests
// carry the identity.
func TestScopeToolsets(t *testing.T) {
	t.Parallel()
	reg := tools.NewRegistry()
	handler := func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`"done"`), nil }
	if err := reg.Register(
		tools.Tool{Name: "notes.read", Summary: "Read a note.", Annotations: tools.Annotations{ReadOnly: true}, Handler: handler},
		tools.Tool{Name: "notes.write", Summary: "Write a note.", Handler: handler},
	); err != nil {
		t.Fatal(err)
	}
	exec, err := executor.New(executor.Config{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Close() })
	srv, err := New(Config{Executor: exec, Expose: ExposeBoth, Access: engine.Access{
		Scopes:     map[string]engine.AccessRule{"notes:read": {ReadOnly: true}},
		Principals: map[string]engine.AccessRule{"mallory": {Deny: []string{"notes.*"}}},
	}}, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c, err := client.NewInProcessClient(srv.MCP())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "scopes", Version: "1"}
	if _, err := c.Initialize(t.Context(), init); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		id     identity
		result string
		direct []string
	}{
		{"read scope", identity{principal: "alice", scopes: "notes:read openid"}, `["read"]`, []string{"notes__read"}},
		{"no mapped scope", identity{principal: "alice", scopes: "openid profile"}, `["read","write"]`, []string{"notes__read", "notes__write"}},
		{"not OAuth", identity{principal: "alice"}, `["read","write"]`, []string{"notes__read", "notes__write"}},
		{"principal rule and scope", identity{principal: "mallory", scopes: "notes:read"}, `[]`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := withIdentity(t.Context(), tt.id)
			req := mcp.CallToolRequest{}
			req.Params.Name = "execute_code"
			req.Params.Arguments = map[string]any{"code": `Object.keys(globalThis.notes || {}).sort()`}
			res, err := c.CallTool(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(res.StructuredContent)
			var rec engine.Record
			if err := json.Unmarshal(b, &rec); err != nil || string(rec.Result) != tt.result {
				t.Errorf("namespace %s (%v), want %s", rec.Result, err, tt.result)
			}
			list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var direct []string
			for _, mt := range list.Tools {
				if strings.HasPrefix(mt.Name, "notes__") {
					direct = append(direct, mt.Name)
				}
			}
			if !slices.Equal(direct, tt.direct) {
				t.Errorf("direct tools %v, want %v", direct, tt.direct)
			}
			write := mcp.CallToolRequest{}
			write.Params.Name = "notes__write"
			_, err = c.CallTool(ctx, write)
			if allowed := slices.Contains(tt.direct, "notes__write"); allowed != (err == nil) {
				t.Errorf("direct notes__write: %v", err)
			}
		})
	}
}
