package upstream_test

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/tools/upstream"
)

// BenchmarkCall measures what the source adds to one call: get-sum of the
// fake server over stdio, called through the registry (validation, the
// source's slot, the raw request, the result's conversion), beside the
// same call made by mcp-go's client on another process of the same
// server. Interleaved; reports the median µs of each and the difference.
func BenchmarkCall(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	direct, err := client.NewStdioMCPClient(exe, []string{"CODECELL_FAKE_UPSTREAM=serve"})
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	ctx := b.Context()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	if _, err := direct.Initialize(ctx, init); err != nil {
		b.Fatal(err)
	}
	e := start(b, map[string]upstream.Server{"fake": fake(b, "serve")})
	req := mcp.CallToolRequest{}
	req.Params.Name = "get-sum"
	req.Params.Arguments = map[string]any{"a": 1, "b": 2}
	args := json.RawMessage(`{"a":1,"b":2}`)
	var d, s []time.Duration
	for b.Loop() {
		t := time.Now()
		if _, err := direct.CallTool(ctx, req); err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(t))
		t = time.Now()
		if _, err := e.reg.Call(ctx, "fake.get-sum", args); err != nil {
			b.Fatal(err)
		}
		s = append(s, time.Since(t))
	}
	slices.Sort(d)
	slices.Sort(s)
	md, ms := d[len(d)/2], s[len(s)/2]
	b.ReportMetric(float64(md.Nanoseconds())/1e3, "direct-µs")
	b.ReportMetric(float64(ms.Nanoseconds())/1e3, "source-µs")
	b.ReportMetric(float64((ms-md).Nanoseconds())/1e3, "added-µs")
}
