package executor

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// Dispatcher runs the tool calls a program makes. The executor calls it
// from its own goroutines, several at once when a program awaits calls
// together. An error whose chain implements CodedError reports its code
// and tool to the program.
type Dispatcher interface {
	Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
}

// CodedError is an error with a machine-readable code, such as a tool's
// "invalid_arguments". The executor hands Code, Tool and Problems to the
// program as the properties of the ToolError it throws.
type CodedError interface {
	error
	ErrorCode() string
	ErrorTool() string
}

// Language is the language of a program.
type Language string

// The languages a program may be written in.
const (
	JavaScript Language = "javascript"
	TypeScript Language = "typescript"
)

// Request is one program to run.
type Request struct {
	// Code is the program: the body of an async function, so top-level
	// await and return work. Without a return, the value of its last
	// expression statement is the result.
	Code string
	// Language is JavaScript when empty.
	Language Language
	// Timeout is the run's deadline; 0 means the configured default. It is
	// capped at the configured maximum.
	Timeout time.Duration
	// Dispatcher runs the program's tool calls; nil means the program can
	// make none.
	Dispatcher Dispatcher
	// Functions names the tools installed as namespaces, such as
	// util.echo. Nil installs none; tools.call works either way.
	Functions *Layout
	// Args, when set, is installed as the global args: the arguments of a
	// program run as a tool (a skill).
	Args json.RawMessage
	// Nested marks a run started by a tool call of a run in progress (a
	// skill). It takes no pool slot, since its caller holds one and may be
	// the only one; the caller bounds the nesting depth.
	Nested bool
	// OnLog, when set, sees each console line as it is printed, on the
	// run's goroutine. It must not block.
	OnLog func(LogLine)
	// OnProgress, when set, sees each progress(message, fraction) call of
	// the program, on the run's goroutine. It must not block.
	OnProgress func(message string, fraction float64)
}

// Status is how a run ended.
type Status string

// The statuses of a run.
const (
	StatusOK    Status = "ok"
	StatusError Status = "error"
)

// Result is the record of one run, shaped like an agent event stream: the
// message (Value), tool events (Calls), telemetry and a typed error.
type Result struct {
	Status Status `json:"status"`
	// Value is the program's result as JSON; null when it returned nothing
	// or failed.
	Value json.RawMessage `json:"result"`
	Error *Error          `json:"error,omitempty"`
	Logs  []LogLine       `json:"logs"`
	// Calls traces each tool call in the order the program made them.
	Calls     []CallRecord `json:"tool_calls"`
	Telemetry Telemetry    `json:"telemetry"`
}

// LogLine is one line of console output.
type LogLine struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

// CallRecord traces one tool call.
type CallRecord struct {
	Tool       string  `json:"tool"`
	OK         bool    `json:"ok"`
	Code       string  `json:"error_code,omitempty"`
	DurationMS float64 `json:"duration_ms"`
	ArgsBytes  int     `json:"args_bytes"`
	// ResultBytes is the size of the result the program received.
	ResultBytes int `json:"result_bytes"`
}

// Telemetry measures a run.
type Telemetry struct {
	DurationMS  float64 `json:"duration_ms"`
	QueueWaitMS float64 `json:"queue_wait_ms"`
	ToolCalls   int     `json:"tool_calls"`
	// BytesFromTools is what the program received from tools, in total.
	BytesFromTools int `json:"bytes_from_tools"`
	ResultBytes    int `json:"result_bytes"`
}

// Function is one tool installed as a namespace function.
type Function struct {
	// Name is qualified, "category.name".
	Name string
	// Positional names the arguments the function also takes positionally.
	Positional []string
}

// Layout is the set of tool functions a program sees, prepared once for
// many runs.
type Layout struct {
	json string
}

// NewLayout prepares the namespaces for fns. Names that are not
// "category.name" are left out (tools.call reaches any name).
func NewLayout(fns []Function) *Layout {
	spaces := map[string]map[string][]string{} // category → name → positional
	for _, f := range fns {
		c, n, ok := strings.Cut(f.Name, ".")
		if !ok || c == "" || n == "" {
			continue
		}
		pos := f.Positional
		if pos == nil {
			pos = []string{}
		}
		if spaces[c] == nil {
			spaces[c] = map[string][]string{}
		}
		spaces[c][n] = pos
	}
	b, _ := json.Marshal(spaces) // strings and string slices always marshal
	return &Layout{json: string(b)}
}

var emptyLayout = NewLayout(nil)

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
