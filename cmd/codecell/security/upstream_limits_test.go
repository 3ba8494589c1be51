package security

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// bigWeb is an MCP server over Streamable HTTP whose tool big returns mib
// MiB of text.
func bigWeb(t *testing.T) string {
	t.Helper()
	srv := mcpserver.NewMCPServer("bigweb", "1")
	srv.AddTool(mcp.NewTool("big", mcp.WithNumber("mib")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(strings.Repeat("a", int(r.GetFloat("mib", 0))<<20)), nil
	})
	srv.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(r.GetString("text", "")), nil
	})
	ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// TestUpstreamResultsAreBounded (issue 19, medium): a 200 MB result from
// an upstream pushed codecell to 1.5 GiB. Each message an upstream sends
// is bounded now while it is read (max_response_bytes, 16 MiB by
// default): the call fails with upstream_too_large, codecell's memory
// stays near what it was, and the upstream serves the next call.
func TestUpstreamResultsAreBounded(t *testing.T) {
	t.Parallel()
	web := bigWeb(t)
	e := startEvil(t, fmt.Sprintf("\n[upstream.web]\nurl = %q\n", web), nil)
	alice := e.open(t, aliceToken)
	e.ready(t, alice)
	for _, call := range []string{
		`await evil.big({mib: 100})`,
		`await evil.big({mib: 100, id_last: true})`,
		`await web.big({mib: 100})`,
	} {
		rec := alice.run(`try { `+call+`; return "read" } catch (e) { return e.code }`, "timeout_ms", 60000)
		if string(rec.Result) != `"upstream_too_large"` {
			t.Errorf("%s: %.600s", call, rec.raw)
		}
	}
	peak := peakRSS(e.cmd.Process.Pid)
	if peak < 0 {
		t.Skip("no VmHWM in /proc/<pid>/status to measure memory")
	}
	t.Logf("codecell's peak memory: %.0f MiB", float64(peak)/(1<<20))
	// 300 MB of results passed by; 16 MiB at a time may be held.
	if peak > 256<<20 {
		t.Errorf("codecell's peak memory is %.0f MiB", float64(peak)/(1<<20))
	}
	if rec := alice.run(`[await evil.echo({text: "a"}), await web.echo({text: "b"})]`, "timeout_ms", 30000); string(rec.Result) != `["a","b"]` {
		t.Errorf("after the big results: %.600s", rec.raw)
	}
}
