package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
)

// The programs' runtime tools that ask the client something — llm
// (sampling), approval (elicitation) — and what they share: the check
// that the client can answer, and the wait for its answer. Their requests
// go to the client of the MCP request whose program calls them: a tool
// call's context derives from that request's.

// initRuntime registers the llm and approval runtime namespaces and
// enables the server capabilities they use.
func (s *Server) initRuntime() error {
	s.llm = s.cfg.LLM.WithDefaults()
	s.llmUse = newLLMUsage(s.llm)
	var err error
	switch s.llm.Prefer {
	case PreferClient, PreferProvider:
	default:
		return fmt.Errorf("llm prefer %q: want %q or %q", s.llm.Prefer, PreferClient, PreferProvider)
	}
	if s.llm.Provider != nil {
		if s.provider, err = newProvider(*s.llm.Provider); err != nil {
			return err
		}
	}
	if s.approvals, err = newApprovalPolicy(s.cfg.Approval); err != nil {
		return err
	}
	if s.credentials, err = credentialsFilter(); err != nil {
		return err
	}
	s.mcp.EnableSampling()
	if err := s.reg.DescribeCategory("llm", "Ask a model — the client's (MCP sampling) or the server's provider: call, classify, extract."); err != nil {
		return err
	}
	if err := s.reg.DescribeCategory("approval", "Ask the client's user to decide (MCP elicitation)."); err != nil {
		return err
	}
	return s.reg.Register(append(s.llmTools(), s.approvalTools()...)...)
}

// capability is something a runtime tool needs of the client.
type capability string

const (
	capSampling    capability = "sampling"
	capElicitation capability = "elicitation"
)

// clientCan says, as a capability_missing tool error, why the client of
// ctx's request cannot be asked for what: no session, the stateless
// protocol, or a capability it did not declare.
func (s *Server) clientCan(ctx context.Context, tool string, what capability) error {
	missing := func(format string, args ...any) error {
		return &tools.Error{Code: CodeCapabilityMissing, Tool: tool, Message: fmt.Sprintf(format, args...)}
	}
	session := server.ClientSessionFromContext(ctx)
	if session == nil {
		return missing("no MCP client to ask: %s needs a request from a connected client (stdio, SSE or Streamable HTTP)", what)
	}
	if _, inProcess := session.(*server.InProcessSession); inProcess {
		return nil // a direct call of the client's handler, if it has one
	}
	// Protocol 2026-07-28 has no server-to-client requests: a handler
	// returns input_required and the client sends the whole request
	// again with the answers, which would run the program again from the
	// start (and repeat its writes). A run cannot pause across requests,
	// so such a request cannot sample or elicit.
	if v := server.RequestProtocolVersion(ctx); mcp.IsModernProtocol(v) {
		return missing("this request uses MCP protocol %s, which has no server-to-client requests, so a running program cannot ask the client (%s); connect with protocol %s (initialize handshake) and declare the %s capability", v, what, mcp.ProtocolVersion20251125, what)
	}
	info, ok := session.(server.SessionWithClientInfo)
	if !ok {
		return missing("this transport cannot send %s requests to the client", what)
	}
	caps := info.GetClientCapabilities()
	switch {
	case what == capSampling && caps.Sampling == nil:
		return missing("the MCP client did not declare the sampling capability: enable sampling in the client (capabilities.sampling in its initialize request) so that programs can use its model")
	case what == capElicitation && caps.Elicitation == nil:
		return missing("the MCP client did not declare the elicitation capability: enable elicitation in the client (capabilities.elicitation in its initialize request) so that programs can ask its user")
	}
	return nil
}

// waitOnClient runs ask, a request to the client, and waits for its
// answer within ctx: the run's deadline and cancellation end the wait.
// The run gives its execution slot back while it waits on a person or a
// model (executor.Park).
func (s *Server) waitOnClient(ctx context.Context, ask func(context.Context) error) error {
	return executor.Park(ctx, func() error { return ask(ctx) })
}

// clientError turns a failed request to the client into a tool error.
// A deadline or cancellation is the run's, and is returned as it is.
func (s *Server) clientError(ctx context.Context, tool, what string, err error) error {
	var te *tools.Error
	switch {
	case errors.As(err, &te):
		return err
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case errors.Is(err, server.ErrServerInitiatedRequestUnsupported), errors.Is(err, server.ErrElicitationNotSupported), errors.Is(err, server.ErrNoActiveSession):
		return &tools.Error{Code: CodeCapabilityMissing, Tool: tool, Message: fmt.Sprintf("the client cannot be sent %s requests: %v", what, err), Err: err}
	}
	return &tools.Error{Code: tools.CodeToolFailed, Tool: tool, Message: fmt.Sprintf("the client refused or failed the %s request: %v", what, err), Err: err}
}

// runFrom returns the run whose tool call ctx is, or nil.
func runFrom(ctx context.Context) *runDispatcher {
	d, _ := ctx.Value(runKey{}).(*runDispatcher)
	return d
}

// callerPrincipal is the principal a tool call is made for.
func (s *Server) callerPrincipal(ctx context.Context) string {
	if c := tools.CallerFrom(ctx); c.Principal != "" {
		return c.Principal
	}
	return s.caller(ctx).Principal
}

// showsClient reports whether t shows what it is given to the client's
// model or user: the llm tools (sampling) and approval.request
// (elicitation). Their arguments are never de-tokenised — the model sees
// a token where the program had one — and what they send passes the
// output filter (clientText, clientJSON), as everything the model reads.
func (s *Server) showsClient(t *tools.Tool) bool {
	return t != nil && t.Runtime && (t.Category() == "llm" || t.Name == "approval.request")
}

// clientFilter is the filter's options for what a runtime tool called
// with ctx shows the client: its caller's session tokens, and the run's
// flow, so that every value the run received that the filter hides in a
// result is hidden here too, wherever the program put it.
func (s *Server) clientFilter(ctx context.Context) filter.Options {
	var opts filter.Options
	if d, ok := dispatcherFrom(ctx); ok {
		opts.Vault = d.vault
		if d.track != nil {
			opts.Flow = d.track.settled()
		}
	}
	return opts
}

// clientText is text as the client may be shown it: filtered whole, not
// cut to the budget.
func (s *Server) clientText(ctx context.Context, text string) string {
	if text == "" {
		return ""
	}
	return s.filter.ApplyText(text, s.clientFilter(ctx)).Full()
}

// clientJSON is a JSON value as the client may be shown it, filtered as a
// result is (field names and values), whole.
func (s *Server) clientJSON(ctx context.Context, v json.RawMessage) json.RawMessage {
	out, err := s.filter.Apply(filter.Input{Result: v}, s.clientFilter(ctx))
	if err != nil {
		// Not JSON: shown as text.
		b, _ := json.Marshal(s.clientText(ctx, string(v)))
		return b
	}
	return out.Full
}

// credentialsFilter is a filter that redacts credentials and leaves
// personal data alone: for what a user typed into a program's form.
func credentialsFilter() (*filter.Filter, error) {
	actions := map[filter.Class]filter.Action{}
	for _, c := range filter.Classes {
		if filter.DefaultAction(c) != filter.ActionRedact {
			actions[c] = filter.ActionAllow
		}
	}
	return filter.New(filter.Config{Policy: filter.Policy{Actions: actions}})
}
