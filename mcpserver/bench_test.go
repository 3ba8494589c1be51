package mcpserver_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
)

// BenchmarkExecuteCodeHTTP measures one execute_code of `1+1` through the
// whole server — HTTP, admission, filter, audit log in a store on disk —
// from a Streamable HTTP client, one call at a time and in parallel.
func BenchmarkExecuteCodeHTTP(b *testing.B) {
	unlimited := engine.Limits{ExecutionsPerMinute: 1e9, ExecutionBurst: 1e6, ToolCallsPerMinute: 1e9, ToolCallBurst: 1e6}
	srv, _ := storeServerTB(b, filepath.Join(b.TempDir(), "db"), mcpserver.Config{Limits: unlimited})
	// A client of protocol 2025-11-25 keeps a session, as most hosts do today,
	// and can ping (ping is a no-op from 2026-07-28 on).
	c := startVersion(b, transports[1].connect(b, srv), "2025-11-25")
	req := mcp.CallToolRequest{}
	req.Params.Name = "execute_code"
	req.Params.Arguments = map[string]any{"code": "1+1"}
	b.Run("ping", func(b *testing.B) {
		defer reportCPU(b, processCPU())
		for b.Loop() {
			//lint:ignore SA1019 a 2025-11-25 session still pings, and ping is the baseline the issue measures against
			if err := c.Ping(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sequential", func(b *testing.B) {
		defer reportCPU(b, processCPU())
		for b.Loop() {
			if res, err := c.CallTool(b.Context(), req); err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("spaced", func(b *testing.B) {
		// 5 ms between calls, outside the measured time, as an agent's
		// calls come seconds apart.
		var total time.Duration
		for b.Loop() {
			b.StopTimer()
			time.Sleep(5 * time.Millisecond)
			b.StartTimer()
			t := time.Now()
			if res, err := c.CallTool(b.Context(), req); err != nil || res.IsError {
				b.Fatal(err, res)
			}
			total += time.Since(t)
		}
		b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/call")
	})
	b.Run("parallel", func(b *testing.B) {
		defer reportCPU(b, processCPU())
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

// reportCPU reports the process's CPU time per operation since start
// (processCPU): server, in-process client and background writers
// together, which a loaded machine changes far less than wall time.
func reportCPU(b *testing.B, start time.Duration) {
	if start > 0 {
		b.ReportMetric(float64((processCPU()-start).Nanoseconds())/float64(b.N)/1000, "cpu-µs/op")
	}
}
