package tools

import (
	"errors"
	"fmt"
	"strings"
)

// Error codes that Registry.Call reports. Handlers may use their own codes
// (lower-case words joined by underscores, such as "not_found").
const (
	CodeUnknownTool      = "unknown_tool"
	CodeInvalidArguments = "invalid_arguments"
	CodeToolFailed       = "tool_failed"
	CodeToolPanic        = "tool_panic"
	CodeCanceled         = "canceled"
	CodeNotFound         = "not_found"
	// CodeToolUnavailable: the tool cannot be called at all, such as one
	// whose input schema codecell cannot compile; the message says why
	// and what to change.
	CodeToolUnavailable = "tool_unavailable"
)

// Error is a failed tool call as its caller sees it: a code to branch on,
// the tool, and a message that says what to change.
type Error struct {
	Code    string
	Tool    string
	Message string
	// Problems lists each argument that failed validation.
	Problems []Problem
	// Err is the underlying error, if any. Its text is not shown to the
	// caller unless Message repeats it.
	Err error
}

// Problem is one argument that failed validation.
type Problem struct {
	// Path is a JSON Pointer to the offending value, "" for the arguments
	// object itself.
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Tool != "" {
		b.WriteString(e.Tool)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with code and a formatted message, for handlers.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of the *Error in err's chain, or CodeToolFailed.
func CodeOf(err error) string {
	var te *Error
	if errors.As(err, &te) && te.Code != "" {
		return te.Code
	}
	return CodeToolFailed
}

// ErrorCode returns the code, for callers that see errors through an
// interface (the executor's CodedError).
func (e *Error) ErrorCode() string { return e.Code }

// ErrorTool returns the tool's qualified name.
func (e *Error) ErrorTool() string { return e.Tool }

// ErrorDetails returns the validation problems, or nil.
func (e *Error) ErrorDetails() any {
	if len(e.Problems) == 0 {
		return nil
	}
	return e.Problems
}
