package executor

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"time"
)

// Dispatcher runs the tool calls a program makes. The executor calls it
// from its own goroutines, several at once when a program awaits calls
// together, with a context derived from the run's request context: it
// keeps the request's values, carries the run's deadline, and is cancelled
// when the run ends. The executor owns the result once Call returns: it
// must not be written to afterwards. An error whose chain implements
// CodedError reports its code and tool to the program.
type Dispatcher interface {
	Call(ctx context.Context, c Call) (json.RawMessage, error)
}

// Call is one tool call of a program.
type Call struct {
	// Name is the tool's qualified name, as the program wrote it.
	Name string
	// Args is the call's arguments as JSON.
	Args json.RawMessage
	// Run is the run that made the call: a tool that runs a program of its
	// own (a skill) names it as the Parent of that program's Request.
	Run *Run
	// Seq is the call's place among its run's calls, from 0, in the order
	// the program made them: the same on every run of a program that
	// does the same (see Request.Pin).
	Seq int
	// cached, when set, is where MarkCached notes that the result came
	// from a cache; the call's trace record then says so.
	cached *bool
	// consumed, when set, is where OnConsumed keeps its function.
	consumed *func()
	// prepare, when set, hands a result to the sandbox early (Prepare).
	prepare func(out json.RawMessage)
}

// Prepare hands the sandbox out, the result Call is about to return,
// while the dispatcher still decides whether the program may have it (a
// run's data flow observes it first, and may refuse it): the sandbox
// builds it into the program's VM meanwhile, out of the program's reach,
// and the program gets it only if Call then returns out itself, without
// an error. If Call returns an error, or another result, the program gets
// that, and the value built is dropped unseen. out must not be written
// to afterwards. Results under prepareMin bytes are not handed early
// (building them costs less than a frame more), nor are those of calls
// outside a run's program.
func (c Call) Prepare(out json.RawMessage) {
	if c.prepare != nil && len(out) >= prepareMin {
		c.prepare(out)
	}
}

// prepareMin is the size from which Call.Prepare hands a result early.
const prepareMin = 64 << 10

// OnConsumed has the executor call f once the program's VM has taken the
// call's result (parsed it, in this process or in its worker process,
// which says so), or the run has dropped it: the dispatcher holds what the result costs
// the server (its bytes in flight) until then, not only until it
// returns, since results wait in the sandbox's queue while the VM parses
// the ones before (issue 19, attack9 D7). Called outside a run, f is
// called at once.
func (c Call) OnConsumed(f func()) {
	if c.consumed == nil {
		f()
		return
	}
	*c.consumed = f
}

// MarkCached tells the run's trace that the call was answered from a
// cache instead of by the tool. The dispatcher calls it before it
// returns the result.
func (c Call) MarkCached() {
	if c.cached != nil {
		*c.cached = true
	}
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
	// capped at MaxTimeout.
	Timeout time.Duration
	// MaxTimeout, when positive, caps Timeout in place of
	// Config.MaxTimeout, above or below it: a long run the caller admits
	// as such (an MCP task) may last longer than a request's run.
	MaxTimeout time.Duration
	// Dispatcher runs the program's tool calls; nil means the program can
	// make none.
	Dispatcher Dispatcher
	// Functions names the tools installed as namespaces, such as
	// util.echo. Nil installs none; tools.call works either way.
	Functions *Layout
	// Args, when set, is installed as the global args: the arguments of a
	// program run as a tool (a skill).
	Args json.RawMessage
	// Parent, when set, makes this a nested run: a program a tool call of
	// a run in progress runs (a skill), named by Call.Run or RunFrom. A
	// nested run takes no pool slot and is charged to its root: it ends
	// when its parent does, at the latest at the parent's deadline; it
	// runs where the root's VM runs (in its worker process, which takes
	// it down when it is killed); at most Config.MaxNestedRuns of a root's
	// nested runs are alive at each depth, the others wait; its heap is
	// Config.MemoryLimit / (MaxNestedRuns × 2^depth), at least 1 MiB, so
	// that a root and all its nested runs together hold at most about
	// twice the root's heap. Runs nest at most Config.MaxDepth deep; a
	// deeper one fails with KindDepth.
	Parent *Run
	// Owner is the principal the run is for. When runs wait for the pool,
	// slots go round-robin across owners. A nested run is its root's
	// owner's.
	Owner string
	// Waited is how long the request already waited for a place before
	// Run, such as for the caller's own admission ahead of the executor:
	// the queue wait limit counts it, and the run's telemetry (queue wait
	// and duration) includes it.
	Waited time.Duration
	// OnLog, when set, sees each console line as it is printed, in order,
	// on a goroutine of the executor. It must not block.
	OnLog func(LogLine)
	// OnProgress, when set, sees each progress(message, fraction) call of
	// the program, in order, on a goroutine of the executor. It must not
	// block.
	OnProgress func(message string, fraction float64)
	// Pin, when set, makes the program's nondeterminism the pin's:
	// Math.random draws from a generator seeded with Seed, and Date.now(),
	// new Date() and Date() tell the time Now, which does not advance.
	// A run of the same program with the same pin and the same tool
	// results then makes the same calls with the same arguments.
	Pin *Pin
}

// Pin fixes what a program could otherwise get differently on each run:
// random numbers and the time.
type Pin struct {
	Seed uint64
	Now  time.Time
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
	// Cached: the dispatcher answered from a cache (Call.MarkCached).
	Cached bool `json:"cached,omitempty"`
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
	id   uint32 // names the layout to workers
	json string
}

var layoutIDs atomic.Uint32

// NewLayout prepares the namespaces for fns. A name without a dot
// ("github") makes an empty namespace: every call through it reaches the
// dispatcher, which can say why the category has no tools (its source is
// loading, or unavailable) where the program would otherwise get a
// ReferenceError. Other names that are not "category.name" are left out
// (tools.call reaches any name).
func NewLayout(fns []Function) *Layout {
	spaces := map[string]map[string][]string{} // category → name → positional
	for _, f := range fns {
		c, n, ok := strings.Cut(f.Name, ".")
		if !ok && c != "" && spaces[c] == nil {
			spaces[c] = map[string][]string{}
		}
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
	return &Layout{id: layoutIDs.Add(1), json: string(b)}
}

var emptyLayout = NewLayout(nil)

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
