package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
)

// The programs' runtime tools that ask the client something — llm
// (sampling), approval (elicitation) — and what they share: the Client
// that asks, the wait for its answer, and the filter of what the client
// is shown. Their requests go to the client of the MCP request whose
// program calls them: a tool call's context derives from that request's,
// and the Client finds the client there (mcp-go's session).

// Client is the MCP client of a run's request, as the runtime helpers ask
// it: its model (sampling) and its user (elicitation). mcpserver
// implements it over mcp-go.
type Client interface {
	// Can returns nil when the client of ctx's request can be asked for
	// what, and otherwise a capability_missing *tools.Error, naming
	// tool, that says why not and what to enable.
	Can(ctx context.Context, tool string, what Capability) error
	// Sample asks the client's model.
	Sample(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	// Elicit asks the client's user.
	Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error)
}

// Capability is something a runtime helper needs of the client.
type Capability string

// The capabilities the runtime helpers use.
const (
	Sampling    Capability = "sampling"
	Elicitation Capability = "elicitation"
)

// CannotAsk is the error of a Client that could not send a request at
// all: the client, or its transport, takes no requests from the server.
type CannotAsk struct{ Err error }

func (e CannotAsk) Error() string { return e.Err.Error() }
func (e CannotAsk) Unwrap() error { return e.Err }

// ErrNotAskableHere is in the chain of a Client.Can error when the client
// could be asked, but not from where the question comes: on protocol
// 2026-07-28 only a program's own calls can ask (through
// input_required); a call made inside a tool or a skill's program, a
// direct call, a commit or a task's run cannot. An approval such a call
// needs is refused, whatever approval.on_unsupported says: that setting
// is for clients that cannot be asked at all (issue 19, H4).
var ErrNotAskableHere = errors.New("codecell cannot ask the client from here")

// Error codes of the runtime's tools (see also approval.go).
const (
	// CodeCapabilityMissing: the client cannot answer what a runtime tool
	// asks of it (sampling, elicitation); the message says what to enable.
	CodeCapabilityMissing = "capability_missing"
	// CodeQuotaExceeded: a run's or a principal's llm budget is spent.
	CodeQuotaExceeded = "quota_exceeded"
	// CodeRateLimited: a principal makes llm calls faster than allowed.
	CodeRateLimited = "rate_limited"
)

// asker is what a runtime helper that asks the client holds: the Client
// that asks it, and the output filter that what the client is shown
// passes.
type asker struct {
	client Client
	filter *filter.Filter
	// results holds what filtering what the client is shown costs, of
	// the results in flight (filterhold.go).
	results *resultBytes
}

// waitOnClient runs ask, a request to the client, and waits for its
// answer within ctx: the run's deadline and cancellation end the wait.
// The run gives its execution slot back while it waits on a person or a
// model (executor.Run.Park).
func waitOnClient(ctx context.Context, c *Call, ask func(context.Context) error) error {
	return c.Exec.Park(func() error { return ask(ctx) })
}

// clientError turns a failed request to the client into a tool error.
// A deadline or cancellation is the run's, and is returned as it is.
func clientError(ctx context.Context, tool, what string, err error) error {
	var te *tools.Error
	var cannot CannotAsk
	switch {
	case errors.As(err, &te):
		return err
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case errors.As(err, &cannot):
		return &tools.Error{Code: CodeCapabilityMissing, Tool: tool, Message: fmt.Sprintf("the client cannot be sent %s requests: %v", what, err), Err: err}
	}
	return &tools.Error{Code: tools.CodeToolFailed, Tool: tool, Message: fmt.Sprintf("the client refused or failed the %s request: %v", what, err), Err: err}
}

// showsClient reports whether t shows what it is given to the client's
// model or user: the llm tools (sampling) and approval.request
// (elicitation). Their arguments are never de-tokenised — the model sees
// a token where the program had one — and what they send passes the
// output filter (clientText, clientJSON), as everything the model reads.
func showsClient(t *tools.Tool) bool {
	return t != nil && t.Runtime && (t.Category() == "llm" || t.Name == "approval.request")
}

// clientFilter is the filter's options for what a runtime tool shows
// the client in a call of a run: its caller's session tokens, and the
// run's flow, so that every value the run received that the filter hides
// in a result is hidden here too, wherever the program put it.
func clientFilter(c *Call) filter.Options {
	return filter.Options{Vault: c.Run.vault, Flow: c.Run.settled()}
}

// clientText is text as the client may be shown it: filtered whole, not
// cut to the budget, its findings held by fh.
func (a asker) clientText(c *Call, fh *filterHold, text string) (string, error) {
	if text == "" {
		return "", nil
	}
	opts := clientFilter(c)
	opts.Budget, opts.Findings = -1, fh.findings
	out, err := a.filter.ApplyTextHeld(text, opts)
	if err != nil {
		return "", heldError(c.Name, err)
	}
	return out.Text, nil
}

// clientJSON is a JSON value as the client may be shown it, filtered as a
// result is (field names and values), whole, its findings held by fh.
func (a asker) clientJSON(c *Call, fh *filterHold, v json.RawMessage) (json.RawMessage, error) {
	opts := clientFilter(c)
	opts.Findings = fh.findings
	out, err := a.filter.Apply(filter.Input{Result: v}, opts)
	var held *filter.FindingsError
	switch {
	case errors.As(err, &held):
		return nil, heldError(c.Name, err)
	case err != nil:
		// Not JSON: shown as text.
		text, err := a.clientText(c, fh, string(v))
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(text)
		return b, nil
	}
	return out.Full, nil
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
