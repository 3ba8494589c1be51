package tools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/codecell/codecell/tools"
)

// TestCallWith answers a call with the handler it is given, after every
// check Call makes: the name resolved (aliases too) for the caller, the
// arguments validated, a panic turned into an error.
func TestCallWith(t *testing.T) {
	t.Parallel()
	r := tools.NewRegistry()
	own := func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`"own"`), nil }
	if err := r.Register(tools.Tool{
		Name: "util.greet", Summary: "Greet.", Aliases: []string{"hello"}, Handler: own,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"additionalProperties":false}`),
	}); err != nil {
		t.Fatal(err)
	}
	bound := func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }
	tests := []struct {
		name, tool, args string
		h                tools.Handler
		want, code       string
	}{
		{name: "bound handler answers", tool: "util.greet", args: `{"name":"ada"}`, h: bound, want: `{"name":"ada"}`},
		{name: "by an alias", tool: "util.hello", args: `{}`, h: bound, want: `{}`},
		{name: "empty arguments are {}", tool: "util.greet", h: bound, want: `{}`},
		{name: "arguments validated first", tool: "util.greet", args: `{"age":3}`, h: bound, code: tools.CodeInvalidArguments},
		{name: "unknown tool", tool: "util.nope", args: `{}`, h: bound, code: tools.CodeUnknownTool},
		{name: "panic recovered", tool: "util.greet", args: `{}`, code: tools.CodeToolPanic,
			h: func(context.Context, json.RawMessage) (json.RawMessage, error) { panic("boom") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := r.CallWith(t.Context(), tt.tool, json.RawMessage(tt.args), tt.h)
			if tt.code != "" {
				if tools.CodeOf(err) != tt.code {
					t.Fatalf("error %v (code %q), want code %q", err, tools.CodeOf(err), tt.code)
				}
				return
			}
			if err != nil || string(out) != tt.want {
				t.Fatalf("CallWith = %s, %v; want %s", out, err, tt.want)
			}
		})
	}
	// The tool's own handler is untouched.
	if out, err := r.Call(t.Context(), "util.greet", nil); err != nil || string(out) != `"own"` {
		t.Fatalf("Call after CallWith = %s, %v; want the tool's own answer", out, err)
	}
}
