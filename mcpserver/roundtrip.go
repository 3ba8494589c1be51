package mcpserver

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/mcpserver/engine"
)

// resumeOf is what a tools/call of protocol 2026-07-28 brings for a run
// that may ask the client through input_required (engine/mrtr.go): the
// answers and the state of a retry, and the capabilities the client
// declared in this request. Nil for the protocols before it, whose
// clients are asked by server-to-client requests, and for a task's run,
// which outlives the request.
func resumeOf(ctx context.Context, req mcp.CallToolRequest, task bool) *engine.Resume {
	info := server.RequestProtocolInfoFromContext(ctx)
	if task || info == nil || !info.Modern {
		return nil
	}
	r := &engine.Resume{State: req.Params.RequestState, Responses: req.Params.InputResponses}
	if caps := info.ClientCapabilities; caps != nil {
		r.Sampling = caps.Sampling != nil
		r.Elicitation = caps.Elicitation != nil
	}
	return r
}

// inputRequired is the result of a run that waits for the client's
// answers: resultType input_required, the questions and the sealed
// state the client sends back with them.
func inputRequired(in *engine.InputRequired) *mcp.CallToolResult {
	b := server.NewInputRequestBuilder(in.State)
	for id, q := range in.Requests {
		switch {
		case q.Sampling != nil:
			b.Sample(id, *q.Sampling)
		case q.Elicitation != nil:
			b.Elicit(id, *q.Elicitation)
		}
	}
	return b.ToolResult()
}
