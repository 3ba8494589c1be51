// Package builtin holds codecell's small utility tools (category "util"):
// echo, now and sleep. They need nothing from the host and exist so that
// programs, tests and benchmarks can exercise the tool bridge for real.
package builtin

import (
	"context"
	"encoding/json"
	"time"

	"github.com/codecell/codecell/tools"
)

// MaxSleep caps util.sleep.
const MaxSleep = 10 * time.Second

// Register adds the util tools to r.
func Register(r *tools.Registry) error {
	if err := r.DescribeCategory("util", "Small utilities: echo values, read the clock, wait."); err != nil {
		return err
	}
	return r.Register(Tools()...)
}

// Tools returns the util tools.
func Tools() []tools.Tool {
	return []tools.Tool{
		{
			Name:        "util.echo",
			Summary:     "Return the given text (and any extra fields) unchanged.",
			Description: "Echo returns its arguments as its result. Useful to test the tool bridge and to see how values travel between your program and a tool.",
			InputSchema: json.RawMessage(`{
				"type": "object",
				"properties": {
					"text": {"type": "string", "description": "Text to echo back."}
				},
				"required": ["text"]
			}`),
			OutputSchema: json.RawMessage(`{
				"type": "object",
				"properties": {"text": {"type": "string"}},
				"required": ["text"]
			}`),
			Annotations: tools.Annotations{ReadOnly: true, Idempotent: true},
			Examples: []tools.Example{{
				Title:  "Echo a greeting",
				Args:   json.RawMessage(`{"text":"hello"}`),
				Result: json.RawMessage(`{"text":"hello"}`),
			}},
			Related: []string{"util.now"},
			Handler: func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
				return args, nil
			},
		},
		{
			Name:        "util.now",
			Summary:     "Return the current time in UTC (RFC 3339 and Unix milliseconds).",
			Description: "Now reads the server's clock. Programs have Date too; this tool exists so that time can come from the host in tests and traces.",
			OutputSchema: json.RawMessage(`{
				"type": "object",
				"properties": {
					"rfc3339": {"type": "string", "format": "date-time"},
					"unix_ms": {"type": "integer"}
				},
				"required": ["rfc3339", "unix_ms"]
			}`),
			Annotations: tools.Annotations{ReadOnly: true},
			Related:     []string{"util.sleep"},
			Handler: tools.Handle(func(context.Context, struct{}) (nowOut, error) {
				now := time.Now().UTC()
				return nowOut{RFC3339: now.Format(time.RFC3339Nano), UnixMS: now.UnixMilli()}, nil
			}),
		},
		{
			Name:        "util.sleep",
			Summary:     "Wait for the given number of milliseconds (at most 10000), then return.",
			Description: "Sleep waits without using CPU and returns how long it slept. It ends early, with a cancelled error, when the run is cancelled or times out.",
			InputSchema: json.RawMessage(`{
				"type": "object",
				"properties": {
					"ms": {"type": "integer", "minimum": 0, "maximum": 10000, "description": "Milliseconds to wait."}
				},
				"required": ["ms"],
				"additionalProperties": false
			}`),
			OutputSchema: json.RawMessage(`{
				"type": "object",
				"properties": {"slept_ms": {"type": "integer"}},
				"required": ["slept_ms"]
			}`),
			Annotations: tools.Annotations{ReadOnly: true, Idempotent: true},
			Related:     []string{"util.now"},
			Handler:     tools.Handle(sleep),
		},
	}
}

type nowOut struct {
	RFC3339 string `json:"rfc3339"`
	UnixMS  int64  `json:"unix_ms"`
}

type sleepIn struct {
	MS int64 `json:"ms"`
}

type sleepOut struct {
	SleptMS int64 `json:"slept_ms"`
}

func sleep(ctx context.Context, in sleepIn) (sleepOut, error) {
	d := min(time.Duration(in.MS)*time.Millisecond, MaxSleep)
	t := time.NewTimer(d)
	defer t.Stop()
	start := time.Now()
	select {
	case <-t.C:
		return sleepOut{SleptMS: time.Since(start).Milliseconds()}, nil
	case <-ctx.Done():
		return sleepOut{}, &tools.Error{Code: tools.CodeCanceled, Message: "sleep cancelled", Err: ctx.Err()}
	}
}
