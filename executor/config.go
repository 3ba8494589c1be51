package executor

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"
)

// Defaults for the zero values of Config.
const (
	DefaultTimeout            = 5 * time.Second
	DefaultMaxTimeout         = 60 * time.Second
	DefaultQueueWait          = 10 * time.Second
	DefaultMemoryLimit        = 64 << 20
	DefaultMaxStackFrames     = 5000
	DefaultMaxCodeBytes       = 100 << 10
	DefaultMaxToolCalls       = 1000
	DefaultMaxConcurrentCalls = 32
	DefaultMaxLogLines        = 1000
	DefaultMaxLogBytes        = 64 << 10
	DefaultMaxDepth           = 4
	DefaultMaxNestedRuns      = 4
	// DefaultMaxWaiting is Config.MaxWaiting's default: this many times
	// the pool size.
	DefaultMaxWaiting = 2
	// DefaultTransformProcesses bounds Config.TransformProcesses's
	// default.
	DefaultTransformProcesses = 2

	// maxStackFrames bounds MaxStackFrames: deeper JavaScript recursion
	// would grow the Go stack of the transpiled engine without need.
	maxStackFrames = 20000
	// maxCodeBytes bounds MaxCodeBytes: a program has fewer lines than
	// the prelude's first line number (preludeLine).
	maxCodeBytes = preludeLine / 2
	// maxMemory bounds MemoryLimit: a worker's frames, a result lifted to
	// three heaps among them, fit the protocol.
	maxMemory = (maxFrame - 1<<20) / 3
)

// Isolation says where the VMs of runs live.
type Isolation string

// The isolation modes; see the package documentation for what each
// guarantees.
const (
	// IsolationProcess runs VMs in sandbox worker processes, one per pool
	// slot, which the executor kills when a run outlives its deadline.
	IsolationProcess Isolation = "process"
	// IsolationInProcess runs VMs on goroutines of this process, for
	// embedding and benchmarks: a run stuck inside a built-in is killed,
	// but holds one of the process's Ps (and can delay its timers and
	// garbage collector) until then.
	IsolationInProcess Isolation = "inprocess"
)

// Config sets the executor's pool and the limits of every run. A zero
// field takes its default; New validates the rest.
type Config struct {
	// Isolation is where VMs live. Empty means IsolationProcess when
	// WorkerCommand is set and IsolationInProcess otherwise; asking for
	// IsolationProcess without a WorkerCommand is an error.
	Isolation Isolation
	// WorkerCommand is the argv of a sandbox worker: a program that calls
	// ServeWorker with its stdin and stdout, such as codecell's hidden
	// "sandbox-worker" command. It starts with an empty environment.
	WorkerCommand []string
	// TransformCommand is the argv of a transform process: a program that
	// calls ServeTransform with its stdin and stdout, such as codecell's
	// hidden "sandbox-worker transform" command. esbuild parses untrusted
	// programs (TypeScript, a JavaScript syntax error's position, Check)
	// only there, under either isolation, so that a parse that takes too
	// long or too much memory is killed. Empty runs esbuild in this
	// process, without a bound. It starts with an empty environment.
	TransformCommand []string
	// TransformProcesses is the number of transform processes kept warm,
	// each serving one parse at a time; a parse that finds none idle
	// starts one of its own. Default: PoolSize, at most
	// DefaultTransformProcesses. Without a TransformCommand it does
	// nothing.
	TransformProcesses int
	// PoolSize is the number of programs that run at once, and of VMs (or
	// worker processes) kept ready for them. Default: GOMAXPROCS.
	PoolSize int
	// QueueWait is how long a run waits for a free VM before it fails with
	// KindBusy. Default 10s.
	QueueWait time.Duration
	// ReservedSlots are the slots of the pool that long runs — runs whose
	// deadline is past Timeout, such as long MCP tasks — never take: they
	// are kept for runs within the default deadline, which give them back
	// within it. So however long the runs one owner (or several) start,
	// another owner's run waits for a slot about Timeout at most, the
	// fair share permitting. 0 means a quarter of the pool, rounded up,
	// and at most PoolSize-1 (none with a pool of one); negative means
	// none. It must leave long runs at least one slot.
	ReservedSlots int
	// Timeout is a run's wall-clock deadline when the request sets none.
	// Default 5s.
	Timeout time.Duration
	// MaxTimeout caps the deadline a request may ask for. Default 60s.
	MaxTimeout time.Duration
	// MemoryLimit caps a VM's heap, in bytes. Default 64 MiB.
	MemoryLimit int64
	// MaxStackFrames caps the JavaScript call depth (roughly one frame per
	// call; built-ins use a few). Default 5000, at most 20000.
	MaxStackFrames int
	// MaxCodeBytes caps the program's size. Default 100 KiB.
	MaxCodeBytes int
	// MaxToolCalls caps the tool calls of one run. Default 1000.
	MaxToolCalls int
	// MaxConcurrentCalls caps the tool calls of one run that are in flight
	// at once; more wait in Go. Default 32.
	MaxConcurrentCalls int
	// MaxLogLines and MaxLogBytes cap a run's console output.
	// Defaults 1000 lines and 64 KiB.
	MaxLogLines int
	MaxLogBytes int
	// MaxResultBytes caps the size of a run's result as JSON. Default: the
	// memory limit, since a result is built in the heap anyway; cutting a
	// large result to a response budget is the caller's business.
	MaxResultBytes int
	// MaxDepth caps how deep runs nest (a skill calling a skill …); a root
	// run is at depth 0. Default 4.
	MaxDepth int
	// MaxNestedRuns caps the nested runs of one root that are alive at
	// once at each depth; more wait. Default 4.
	MaxNestedRuns int
	// MaxWaiting caps the runs that wait outside the pool at once: runs
	// whose tool calls all wait on something outside the sandbox (see
	// Park) give their slot back while they wait, and their VMs (worker
	// processes) stay alive beside the pool, which so grows by at most
	// MaxWaiting. A run that would pass the cap waits holding its slot.
	// Default: DefaultMaxWaiting times PoolSize.
	MaxWaiting int
	// Logger receives the executor's own logs (never program output).
	// Nil discards them.
	Logger *slog.Logger
}

// withDefaults returns c with zero fields set to their defaults, or an
// error naming the first invalid field.
func (c Config) withDefaults() (Config, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.PoolSize, runtime.GOMAXPROCS(0))
	defDur(&c.QueueWait, DefaultQueueWait)
	defDur(&c.Timeout, DefaultTimeout)
	defDur(&c.MaxTimeout, DefaultMaxTimeout)
	if c.MemoryLimit == 0 {
		c.MemoryLimit = DefaultMemoryLimit
	}
	def(&c.MaxStackFrames, DefaultMaxStackFrames)
	def(&c.MaxCodeBytes, DefaultMaxCodeBytes)
	def(&c.MaxToolCalls, DefaultMaxToolCalls)
	def(&c.MaxConcurrentCalls, DefaultMaxConcurrentCalls)
	def(&c.MaxLogLines, DefaultMaxLogLines)
	def(&c.MaxLogBytes, DefaultMaxLogBytes)
	if c.MaxResultBytes == 0 {
		c.MaxResultBytes = int(min(c.MemoryLimit, maxMemory))
	}
	def(&c.MaxDepth, DefaultMaxDepth)
	def(&c.MaxNestedRuns, DefaultMaxNestedRuns)
	def(&c.MaxWaiting, DefaultMaxWaiting*c.PoolSize)
	def(&c.TransformProcesses, min(c.PoolSize, DefaultTransformProcesses))
	switch {
	case c.ReservedSlots == 0 && c.PoolSize > 0:
		c.ReservedSlots = min((c.PoolSize+3)/4, c.PoolSize-1)
	case c.ReservedSlots < 0:
		c.ReservedSlots = 0
	}
	if c.Isolation == "" {
		c.Isolation = IsolationInProcess
		if len(c.WorkerCommand) > 0 {
			c.Isolation = IsolationProcess
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}

	var errs []error
	positive := func(name string, ok bool) {
		if !ok {
			errs = append(errs, fmt.Errorf("executor config: %s must be positive", name))
		}
	}
	positive("pool size", c.PoolSize > 0)
	positive("queue wait", c.QueueWait > 0)
	positive("timeout", c.Timeout > 0)
	positive("max timeout", c.MaxTimeout > 0)
	positive("max code bytes", c.MaxCodeBytes > 0)
	positive("max tool calls", c.MaxToolCalls > 0)
	positive("max concurrent calls", c.MaxConcurrentCalls > 0)
	positive("max log lines", c.MaxLogLines > 0)
	positive("max log bytes", c.MaxLogBytes > 0)
	positive("max result bytes", c.MaxResultBytes > 0)
	positive("max depth", c.MaxDepth > 0)
	positive("max nested runs", c.MaxNestedRuns > 0)
	positive("max waiting", c.MaxWaiting > 0)
	positive("transform processes", c.TransformProcesses > 0)
	switch c.Isolation {
	case IsolationInProcess:
	case IsolationProcess:
		if len(c.WorkerCommand) == 0 || c.WorkerCommand[0] == "" {
			errs = append(errs, errors.New("executor config: process isolation needs a worker command"))
		}
	default:
		errs = append(errs, fmt.Errorf("executor config: unknown isolation %q; use %q or %q", c.Isolation, IsolationProcess, IsolationInProcess))
	}
	if c.MaxCodeBytes > maxCodeBytes {
		errs = append(errs, fmt.Errorf("executor config: max code bytes %d is above the maximum of %d", c.MaxCodeBytes, maxCodeBytes))
	}
	if c.MemoryLimit > maxMemory {
		errs = append(errs, fmt.Errorf("executor config: memory limit %s is above the maximum of %s", formatBytes(c.MemoryLimit), formatBytes(maxMemory)))
	}
	if c.PoolSize > 0 && c.ReservedSlots >= c.PoolSize {
		errs = append(errs, fmt.Errorf("executor config: %d reserved slots leave runs longer than the default deadline none of the pool's %d; reserve fewer", c.ReservedSlots, c.PoolSize))
	}
	if c.Timeout > c.MaxTimeout {
		errs = append(errs, fmt.Errorf("executor config: timeout %s is above max timeout %s", c.Timeout, c.MaxTimeout))
	}
	if c.MemoryLimit < 1<<20 {
		errs = append(errs, fmt.Errorf("executor config: memory limit %s is below the minimum of 1 MiB", formatBytes(c.MemoryLimit)))
	}
	if c.MaxStackFrames < 100 || c.MaxStackFrames > maxStackFrames {
		errs = append(errs, fmt.Errorf("executor config: max stack frames %d is outside 100..%d", c.MaxStackFrames, maxStackFrames))
	}
	return c, errors.Join(errs...)
}
