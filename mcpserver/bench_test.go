package mcpserver_test

import (
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
)

// BenchmarkExecuteCodeHTTP measures one execute_code of `1+1` through the
// whole server — HTTP, admission, filter, audit log in a store on disk —
// from a Streamable HTTP client, one call at a time and in parallel.
func BenchmarkExecuteCodeHTTP(b *testing.B) {
	unlimited := mcpserver.Limits{ExecutionsPerMinute: 1e9, ExecutionBurst: 1e6, ToolCallsPerMinute: 1e9, ToolCallBurst: 1e6}
	srv, _ := storeServerTB(b, filepath.Join(b.TempDir(), "db"), mcpserver.Config{Limits: unlimited})
	c := start(b, transports[1].connect(b, srv))
	req := mcp.CallToolRequest{}
	req.Params.Name = "execute_code"
	req.Params.Arguments = map[string]any{"code": "1+1"}
	b.Run("sequential", func(b *testing.B) {
		for b.Loop() {
			if res, err := c.CallTool(b.Context(), req); err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if res, err := c.CallTool(b.Context(), req); err != nil || res.IsError {
					b.Error(err, res)
					return
				}
			}
		})
	})
}
