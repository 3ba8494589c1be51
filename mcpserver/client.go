package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/tools"
)

// mcpClient is the engine's Client over mcp-go: the MCP client of the
// request a run serves, found through the request's context, as mcp-go
// sends server-to-client requests.
type mcpClient struct{ s *Server }

var _ engine.Client = mcpClient{}

// Can says, as a capability_missing tool error, why the client of ctx's
// request cannot be asked for what: no session, the stateless protocol,
// or a capability it did not declare.
func (mcpClient) Can(ctx context.Context, tool string, what engine.Capability) error {
	if t := task26From(ctx); t != nil {
		return t.can(tool, what) // a 2026 task asks through its inputRequests
	}
	missing := func(format string, args ...any) error {
		return &tools.Error{Code: engine.CodeCapabilityMissing, Tool: tool, Message: fmt.Sprintf(format, args...)}
	}
	session := server.ClientSessionFromContext(ctx)
	if session == nil {
		return missing("no MCP client to ask: %s needs a request from a connected client (stdio, SSE or Streamable HTTP)", what)
	}
	if _, inProcess := session.(*server.InProcessSession); inProcess {
		return nil // a direct call of the client's handler, if it has one
	}
	// Protocol 2026-07-28 has no server-to-client requests: a program
	// run by execute_code asks through input_required (engine/mrtr.go),
	// which the engine answers before it asks here, and a 2026 task's
	// run through the task (above). What reaches here cannot pause
	// across requests: a plan's commit outside a task, a direct call.
	if v := server.RequestProtocolVersion(ctx); mcp.IsModernProtocol(v) {
		if !declared(server.RequestProtocolInfoFromContext(ctx), what) {
			return missing("the MCP client did not declare the %s capability in this request (clientCapabilities in _meta), and this request uses MCP protocol %s, which has no server-to-client requests: declare it, and make the call from a program run by execute_code, which asks the client through input_required", what, v)
		}
		// The client can be asked, but not from here (an approval it
		// needs is refused, whatever on_unsupported says).
		return &tools.Error{Code: engine.CodeCapabilityMissing, Tool: tool, Err: engine.ErrNotAskableHere, Message: fmt.Sprintf("this request uses MCP protocol %s, which has no server-to-client requests: a program run by execute_code asks the client (%s) through input_required, but a direct call cannot; make the call from a program (execute_code), declare the tasks extension (io.modelcontextprotocol/tasks) in clientCapabilities, or connect with protocol %s (initialize handshake)", v, what, mcp.ProtocolVersion20251125)}
	}
	info, ok := session.(server.SessionWithClientInfo)
	if !ok {
		return missing("this transport cannot send %s requests to the client", what)
	}
	caps := info.GetClientCapabilities()
	switch {
	case what == engine.Sampling && caps.Sampling == nil:
		return missing("the MCP client did not declare the sampling capability: enable sampling in the client (capabilities.sampling in its initialize request) so that programs can use its model")
	case what == engine.Elicitation && caps.Elicitation == nil:
		return missing("the MCP client did not declare the elicitation capability: enable elicitation in the client (capabilities.elicitation in its initialize request) so that programs can ask its user")
	}
	return nil
}

// declared reports whether the client of a request of protocol 2026-07-28
// declared it can answer what (its clientCapabilities).
func declared(info *server.RequestProtocolInfo, what engine.Capability) bool {
	if info == nil || info.ClientCapabilities == nil {
		return false
	}
	switch what {
	case engine.Sampling:
		return info.ClientCapabilities.Sampling != nil
	case engine.Elicitation:
		return info.ClientCapabilities.Elicitation != nil
	}
	return false
}

func (c mcpClient) Sample(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if t := task26From(ctx); t != nil {
		return t.sample(ctx, req)
	}
	//lint:ignore SA1019 sampling is what llm.* is: deprecated by protocol 2026-07-28, still the way to reach the client's model in the versions before it, which Can requires
	res, err := c.s.mcp.RequestSampling(ctx, req)
	return res, cannotAsk(err)
}

func (c mcpClient) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if t := task26From(ctx); t != nil {
		return t.elicit(ctx, req)
	}
	res, err := c.s.mcp.RequestElicitation(ctx, req)
	return res, cannotAsk(err)
}

// cannotAsk marks mcp-go's errors of a request it could not send at all
// as the engine's CannotAsk.
func cannotAsk(err error) error {
	if errors.Is(err, server.ErrServerInitiatedRequestUnsupported) || errors.Is(err, server.ErrElicitationNotSupported) || errors.Is(err, server.ErrNoActiveSession) {
		return engine.CannotAsk{Err: err}
	}
	return err
}
