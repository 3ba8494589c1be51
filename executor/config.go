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
	DefaultMaxResultBytes     = 1 << 20

	// maxStackFrames bounds MaxStackFrames: deeper JavaScript recursion
	// would grow the Go stack of the transpiled engine without need.
	maxStackFrames = 20000
)

// Config sets the executor's pool and the limits of every run. A zero
// field takes its default; New validates the rest.
type Config struct {
	// PoolSize is the number of programs that run at once, and of VMs kept
	// ready for them. Default: GOMAXPROCS.
	PoolSize int
	// QueueWait is how long a run waits for a free VM before it fails with
	// KindBusy. Default 10s.
	QueueWait time.Duration
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
	// MaxResultBytes caps the size of a run's result as JSON. Default 1 MiB.
	MaxResultBytes int
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
	def(&c.MaxResultBytes, DefaultMaxResultBytes)
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
