package tools

import (
	"context"
	"encoding/json"
)

// Gate makes a tool call on behalf of the call in progress, as one more
// call of its caller: through every check a program's own call passes
// (the caller's toolset, validation, token resolution, data-flow rules,
// approval, dry runs, memoisation, audit) and the filter's tracking of
// what it returns. The server sets one on the context of every call it
// makes (WithGate); a handler that calls other tools for its caller — a
// helper such as an OpenAPI source's paginate — calls them through it
// (CallThrough), never through the registry or their handlers directly.
type Gate func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)

type gateKey struct{}

// WithGate returns a context whose tool calls call other tools through g.
func WithGate(ctx context.Context, g Gate) context.Context {
	return context.WithValue(ctx, gateKey{}, g)
}

// CodeNoGate is the code of a helper's call made where no gate is set:
// a helper called from outside a server (a test calling the registry
// directly) has no caller on whose behalf to check its calls.
const CodeNoGate = "no_gate"

// CallThrough calls the tool name through the gate of ctx. Without one
// it fails with CodeNoGate: a helper never calls a tool unchecked.
func CallThrough(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	g, ok := ctx.Value(gateKey{}).(Gate)
	if !ok || g == nil {
		return nil, &Error{Code: CodeNoGate, Tool: name, Message: "this helper calls tools on behalf of a program, and there is no program's call to check them against; call it from execute_code"}
	}
	return g(ctx, name, args)
}

// PageRequest asks the handler of a paged operation for one page instead
// of an ordinary result (see WithPage). The gate keys a memoised page by
// it, so that two pages of one call are not one result.
type PageRequest struct {
	// Tool is the qualified name of the operation whose page is asked;
	// any other tool ignores the request.
	Tool string
	// Next is where the page is, as the previous page said (a URL), or
	// "" for the first page, which the arguments describe.
	Next string
}

type pageKey struct{}

// WithPage returns a context that asks the handler of p.Tool for the page
// p. The handler answers with the page's envelope, PageResult, instead
// of its ordinary result.
func WithPage(ctx context.Context, p PageRequest) context.Context {
	return context.WithValue(ctx, pageKey{}, p)
}

// PageFrom returns the page a call of tool is asked for, if it is.
func PageFrom(ctx context.Context, tool string) (PageRequest, bool) {
	p, ok := ctx.Value(pageKey{}).(PageRequest)
	if !ok || p.Tool != tool {
		return PageRequest{}, false
	}
	return p, true
}

// PageResult is a paged operation's answer to a PageRequest: its
// ordinary result, and where the next page is when the response said so
// outside the result (an HTTP Link header).
type PageResult struct {
	Result json.RawMessage `json:"result"`
	Next   string          `json:"next,omitempty"`
}
