package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkStdioRoundTrip measures a client's round trip to the built
// binary over stdio: execute_code of `1+1` against a no-op MCP tool
// (util__echo in direct mode). Rate limits are lifted for it.
func BenchmarkStdioRoundTrip(b *testing.B) {
	env := append(dataDir(b), "CODECELL_LIMITS_EXECUTIONS_PER_MINUTE=100000000", "CODECELL_LIMITS_EXECUTION_BURST=1000000",
		"CODECELL_LIMITS_TOOL_CALLS_PER_MINUTE=100000000", "CODECELL_LIMITS_TOOL_CALL_BURST=1000000")
	c, err := client.NewStdioMCPClient(binary, env, "serve", "-expose", "both", "-log-level", "warn")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	// A 2025-11-25 session, as most hosts keep today: it can ping (ping is
	// a no-op from 2026-07-28 on), and ping is the floor of a round trip.
	initCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "codecell-bench", Version: "1"}
	if _, err := c.Initialize(initCtx, init); err != nil {
		b.Fatal(err)
	}
	cancel()
	ctx := context.Background()

	call := func(name string, args map[string]any) func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		return func() {
			res, err := c.CallTool(ctx, req)
			if err != nil || res.IsError {
				b.Fatalf("%s: %v %+v", name, err, res)
			}
		}
	}
	// The _spaced cases leave 5 ms between calls, outside the measured
	// time, as an agent's calls come seconds apart: the pool then prepares
	// the next VM and closes the last one off the request's path.
	ping := func() {
		//lint:ignore SA1019 a 2025-11-25 session pings; ping is the floor the issue measures against
		if err := c.Ping(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name string
		do   func()
	}{
		{"ping", ping},
		{"ping_spaced", ping},
		{"noop_tool", call("util__echo", map[string]any{"text": "x"})},
		{"execute_code_1+1", call("execute_code", map[string]any{"code": "1+1"})},
		{"noop_tool_spaced", call("util__echo", map[string]any{"text": "x"})},
		{"execute_code_1+1_spaced", call("execute_code", map[string]any{"code": "1+1"})},
		// TypeScript: the same run after esbuild strips its types in a
		// transform process.
		{"execute_code_typescript", call("execute_code", map[string]any{"code": "const x: number = 1 + 1; return x", "language": "typescript"})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			spaced := strings.HasSuffix(bc.name, "_spaced")
			for b.Loop() {
				if spaced {
					time.Sleep(5 * time.Millisecond)
				}
				t := time.Now()
				bc.do()
				lat = append(lat, time.Since(t))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
