package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkStdioRoundTrip measures a client's round trip to the built
// binary over stdio: execute_code of `1+1` against a no-op MCP tool
// (util__echo in direct mode) and against a bare ping.
func BenchmarkStdioRoundTrip(b *testing.B) {
	c, err := client.NewStdioMCPClient(binary, dataDir(b), "serve", "-expose", "both", "-log-level", "warn")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	initialize(b, c)
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
	for _, bc := range []struct {
		name string
		do   func()
	}{
		{"ping", func() {
			if err := c.Ping(ctx); err != nil {
				b.Fatal(err)
			}
		}},
		{"noop_tool", call("util__echo", map[string]any{"text": "x"})},
		{"execute_code_1+1", call("execute_code", map[string]any{"code": "1+1"})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
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
