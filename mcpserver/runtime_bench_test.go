package mcpserver_test

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
)

// BenchmarkSamplingRoundTrip measures what a sampling round trip costs
// through codecell, with a client that answers at once: "direct" is a
// plain MCP tool that sends one sampling request (the client's own round
// trip), "llm.call" a program that calls llm.call once, and "empty run"
// a program that calls nothing (the run's fixed cost). Each op is one
// tools/call; µs/op is reported.
//
//	go test -tags sqlite_fts5 -run '^$' -bench SamplingRoundTrip -benchtime 200x ./mcpserver/
func BenchmarkSamplingRoundTrip(b *testing.B) {
	h := host{sample: func(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return answer("ok"), nil
	}}
	for _, tr := range runtimeTransports {
		// Limits far above what the benchmark asks, so that it measures
		// the round trip, not a refusal.
		srv := newServer(b, mcpserver.Config{
			Limits: engine.Limits{ExecutionsPerMinute: 1 << 30, ExecutionBurst: 1 << 30},
			LLM:    engine.LLMConfig{CallsPerMinute: 1 << 30, TokensPerDay: 1 << 50},
		})
		srv.MCP().AddTool(mcp.NewTool("sample_once"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			//lint:ignore SA1019 the client's own sampling round trip is what the benchmark compares with
			res, err := srv.MCP().RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("x")}},
				MaxTokens: 10,
			}})
			if err != nil {
				return nil, err
			}
			return mcp.NewToolResultText(res.Model), nil
		})
		c := startLegacy(b, tr.connect(b, srv, client.WithSamplingHandler(h)))
		for _, bc := range []struct {
			name string
			req  mcp.CallToolRequest
		}{
			{"direct", toolCall("sample_once", nil)},
			{"llm.call", toolCall("execute_code", map[string]any{"code": `return (await llm.call("x")).text`})},
			{"empty run", toolCall("execute_code", map[string]any{"code": `return "ok"`})},
		} {
			b.Run(tr.name+"/"+bc.name, func(b *testing.B) {
				for b.Loop() {
					res, err := c.CallTool(b.Context(), bc.req)
					if err != nil || res.IsError {
						b.Fatalf("%v %s", err, text(res))
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/op")
			})
		}
	}
}

func toolCall(name string, args map[string]any) mcp.CallToolRequest {
	var req mcp.CallToolRequest
	req.Params.Name = name
	req.Params.Arguments = args
	return req
}
