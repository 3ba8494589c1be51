package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
)

// options are the settings shared by serve and exec.
type options struct {
	poolSize      int
	queueWait     time.Duration
	timeout       time.Duration
	maxTimeout    time.Duration
	memoryMiB     int
	maxToolCalls  int
	maxCodeBytes  int
	maxResultSize int
	logLevel      string
	logFormat     string
	expose        string
}

func (o *options) register(fs *flag.FlagSet) {
	fs.IntVar(&o.poolSize, "pool", 0, "programs that run at once, and VMs kept warm (default GOMAXPROCS)")
	fs.DurationVar(&o.queueWait, "queue-wait", executor.DefaultQueueWait, "how long a run waits for a free VM before it fails as busy")
	fs.DurationVar(&o.timeout, "timeout", executor.DefaultTimeout, "a run's deadline when the request sets none")
	fs.DurationVar(&o.maxTimeout, "max-timeout", executor.DefaultMaxTimeout, "the longest deadline a request may ask for")
	fs.IntVar(&o.memoryMiB, "memory-limit", executor.DefaultMemoryLimit>>20, "heap limit of a run, in MiB")
	fs.IntVar(&o.maxToolCalls, "max-tool-calls", executor.DefaultMaxToolCalls, "tool calls allowed per run")
	fs.IntVar(&o.maxCodeBytes, "max-code-bytes", executor.DefaultMaxCodeBytes, "largest program accepted, in bytes")
	fs.IntVar(&o.maxResultSize, "max-result-bytes", executor.DefaultMaxResultBytes, "largest result a program may return, in bytes of JSON")
	fs.StringVar(&o.expose, "expose", "code", "MCP tools to list: code (execute_code and discovery), direct (also every catalogue tool) or both")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
}

func (o *options) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, usageError{fmt.Sprintf("-log-level %q: want debug, info, warn or error", o.logLevel)}
	}
	hopts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(o.logFormat) {
	case "text":
		return slog.New(slog.NewTextHandler(w, hopts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, hopts)), nil
	}
	return nil, usageError{fmt.Sprintf("-log-format %q: want text or json", o.logFormat)}
}

func (o *options) executor() executor.Config {
	return executor.Config{
		PoolSize:       o.poolSize,
		QueueWait:      o.queueWait,
		Timeout:        o.timeout,
		MaxTimeout:     o.maxTimeout,
		MemoryLimit:    int64(o.memoryMiB) << 20,
		MaxToolCalls:   o.maxToolCalls,
		MaxCodeBytes:   o.maxCodeBytes,
		MaxResultBytes: o.maxResultSize,
	}
}

// newServer builds the registry and the MCP server.
func (o *options) newServer(log *slog.Logger) (*mcpserver.Server, error) {
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		return nil, err
	}
	expose, err := mcpserver.ParseExpose(o.expose)
	if err != nil {
		return nil, usageError{"-" + err.Error()}
	}
	return mcpserver.New(mcpserver.Config{
		Version:  version,
		Executor: o.executor(),
		Expose:   expose,
		Logger:   log,
	}, reg)
}

// parseFlags parses args, turning a parse error into a usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err.Error()}
	}
	return nil
}
