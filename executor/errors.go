package executor

import (
	"encoding/json"
	"fmt"
)

// Kind classifies why a run failed. Each limit has its own kind.
type Kind string

// The kinds of failed runs.
const (
	// KindInvalidRequest: the request itself is wrong (unknown language).
	KindInvalidRequest Kind = "invalid_request"
	// KindSyntax: the program does not parse; Line and Column say where.
	KindSyntax Kind = "syntax_error"
	// KindRuntime: the program threw an exception it did not catch.
	KindRuntime Kind = "runtime_error"
	// KindTool: the program did not catch a failed tool call; Tool and
	// Code say which and why.
	KindTool Kind = "tool_error"
	// KindResult: the program's result has no JSON form (a function, a
	// symbol, a BigInt, a cycle).
	KindResult Kind = "result_not_serializable"
	// KindUnsettled: the program awaited a promise that can never settle.
	KindUnsettled Kind = "unsettled_promise"
	// KindTimeout: the wall-clock deadline passed.
	KindTimeout Kind = "timeout"
	// KindMemory: the heap limit was reached.
	KindMemory Kind = "memory_limit"
	// KindStack: the call stack limit was reached.
	KindStack Kind = "stack_overflow"
	// KindCodeSize: the program is longer than allowed.
	KindCodeSize Kind = "code_too_large"
	// KindToolCalls: the program made more tool calls than allowed.
	KindToolCalls Kind = "tool_call_limit"
	// KindOutput: the program printed more console output than allowed.
	KindOutput Kind = "output_limit"
	// KindResultSize: the program's result is larger than allowed.
	KindResultSize Kind = "result_too_large"
	// KindDepth: runs nested deeper than allowed (a skill calling itself).
	KindDepth Kind = "depth_limit"
	// KindBusy: no VM became free within the queue wait.
	KindBusy Kind = "busy"
	// KindCanceled: the caller cancelled the run.
	KindCanceled Kind = "canceled"
	// KindInternal: a fault in codecell itself, not in the program.
	KindInternal Kind = "internal_error"
)

// Error is a failed run: what went wrong, in words that tell the author of
// the program what to change.
type Error struct {
	Kind    Kind   `json:"kind"`
	Message string `json:"message"`
	// Name is the JavaScript error's name (TypeError, ToolError, …) for
	// exceptions.
	Name string `json:"name,omitempty"`
	// Line and Column locate the error in the program as submitted, both
	// 1-based, when known.
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
	// Stack is the JavaScript stack trace, when there is one.
	Stack string `json:"stack,omitempty"`
	// Tool and Code identify a failed tool call (KindTool).
	Tool string `json:"tool,omitempty"`
	Code string `json:"code,omitempty"`
	// Problems lists argument validation failures of a failed tool call.
	Problems json.RawMessage `json:"problems,omitempty"`
}

func (e *Error) Error() string {
	loc := ""
	if e.Line > 0 {
		loc = fmt.Sprintf(" at line %d, column %d", e.Line, e.Column)
	}
	return fmt.Sprintf("%s%s: %s", e.Kind, loc, e.Message)
}

// limitError returns an error for a limit, naming it and its value.
func limitError(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...)}
}

// formatBytes renders a byte count for messages: "64 MiB", "100 KiB", "512 B".
func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
