package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkUpstreamBridge puts a call to an upstream MCP server through
// codecell beside the same call made directly by an MCP client, in one
// run, interleaved (each iteration does both, so that a busy machine
// slows both alike). The upstream is server-everything over stdio, its
// get-sum tool; the direct client and codecell each start one from the
// same node_modules, and both clients speak stdio.
//
//   - one_call: one tools/call of get-sum directly, beside one
//     execute_code whose program makes that call (and, for scale, an
//     execute_code of 1+1, which makes none).
//   - 100_sequential / 100_promise_all: 100 direct tools/call, one after
//     the other, beside one execute_code whose program makes the 100
//     calls one after the other, or all at once with Promise.all.
//
// Each reports the median direct and bridged latency (ms) and their
// ratio, bridged/direct:
//
//	go test -tags sqlite_fts5 -run '^$' -bench BenchmarkUpstreamBridge -benchtime 200x ./cmd/codecell/
func BenchmarkUpstreamBridge(b *testing.B) {
	node, dir := upstreamNodeB(b)
	script := serverScript(dir, "server-everything")
	work := b.TempDir()
	cfg := map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": node, "args": []string{script, "stdio"}}}}
	data, _ := json.Marshal(cfg)
	mcpConfig := filepath.Join(work, "mcp.json")
	os.WriteFile(mcpConfig, data, 0o600)

	ctx := context.Background()
	direct, err := client.NewStdioMCPClient(node, nil, script, "stdio")
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	initialize(b, direct)
	env := append(dataDir(b), "CODECELL_LIMITS_EXECUTIONS_PER_MINUTE=100000000", "CODECELL_LIMITS_EXECUTION_BURST=1000000",
		"CODECELL_LIMITS_TOOL_CALLS_PER_MINUTE=100000000", "CODECELL_LIMITS_TOOL_CALL_BURST=1000000",
		"CODECELL_SERVER_UPSTREAM_WAIT=30s")
	bridged, err := client.NewStdioMCPClient(binary, env, "serve", "--mcp-config", mcpConfig, "--log-level", "warn")
	if err != nil {
		b.Fatal(err)
	}
	defer bridged.Close()
	initialize(b, bridged)

	sum := mcp.CallToolRequest{}
	sum.Params.Name = "get-sum"
	sum.Params.Arguments = map[string]any{"a": 1, "b": 2}
	directCalls := func(n int) func() {
		return func() {
			for range n {
				if res, err := direct.CallTool(ctx, sum); err != nil || res.IsError {
					b.Fatalf("direct get-sum: %v %+v", err, res)
				}
			}
		}
	}
	program := func(code string) func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "execute_code"
		req.Params.Arguments = map[string]any{"code": code, "timeout_ms": 30000}
		return func() {
			res, err := bridged.CallTool(ctx, req)
			if err != nil || res.IsError {
				b.Fatalf("execute_code: %v %+v", err, res)
			}
		}
	}
	// Both sides warm: the upstream connected, the first calls made.
	program(`await everything.get_sum({a: 1, b: 2})`)()
	directCalls(1)()

	for _, bc := range []struct {
		name           string
		direct, bridge func()
		empty          func() // an execute_code without the call, for scale
	}{
		{"one_call", directCalls(1), program(`await everything.get_sum({a: 1, b: 2})`), program(`1+1`)},
		{"100_sequential", directCalls(100), program(`let r; for (let i = 0; i < 100; i++) r = await everything.get_sum({a: i, b: 2}); r`), nil},
		{"100_promise_all", directCalls(100), program(`(await Promise.all(Array.from({length: 100}, (_, i) => everything.get_sum({a: i, b: 2})))).length`), nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var d, br, e []time.Duration
			for b.Loop() {
				t := time.Now()
				bc.direct()
				d = append(d, time.Since(t))
				t = time.Now()
				bc.bridge()
				br = append(br, time.Since(t))
				if bc.empty != nil {
					t = time.Now()
					bc.empty()
					e = append(e, time.Since(t))
				}
			}
			md, mb := median(d), median(br)
			if len(e) > 0 {
				b.ReportMetric(median(e).Seconds()*1000, "empty-run-ms")
			}
			b.ReportMetric(md.Seconds()*1000, "direct-ms")
			b.ReportMetric(mb.Seconds()*1000, "bridged-ms")
			b.ReportMetric(mb.Seconds()/md.Seconds(), "bridged/direct")
		})
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// upstreamNodeB is upstreamNode for benchmarks: it skips without the
// servers.
func upstreamNodeB(b *testing.B) (node, dir string) {
	b.Helper()
	dir, err := filepath.Abs(upstreamsDir)
	if err != nil {
		b.Fatal(err)
	}
	node = filepath.Join(dir, "node_modules", ".bin", "node")
	if _, err := os.Stat(node); err != nil {
		b.Skip("run make node-deps to benchmark the bridge to the reference MCP servers")
	}
	return node, dir
}
