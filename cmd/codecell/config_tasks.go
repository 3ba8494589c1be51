package main

import (
	"time"

	"github.com/codecell/codecell/mcpserver/engine"
)

// This file reads the [tasks] section: execute_code run as an MCP task
// (long runs a client polls), and the runs that wait outside the pool.
//
//	[sandbox]
//	max_task_duration = "10m"  # the longest deadline a task run may ask for
//	[tasks]
//	result_ttl = "10m"         # how long a task's record is kept after its run
//	max_waiting = 0            # runs waiting outside the pool; 0: twice the pool
//	max_per_principal = 64     # tasks kept per principal, running or finished
//	max_tasks = 1024           # tasks kept for the whole server
//	max_bytes_per_principal = 33554432  # bytes of one principal's results kept
//	max_bytes = 268435456      # bytes of every principal's results kept

// defaultTasks is the [tasks] section's defaults.
func defaultTasks() TasksConfig {
	return TasksConfig{
		ResultTTL:            Duration(10 * time.Minute),
		MaxPerPrincipal:      engine.DefaultTaskMaxPerPrincipal,
		MaxTasks:             engine.DefaultTaskMaxTasks,
		MaxBytesPerPrincipal: engine.DefaultTaskMaxBytesEach,
		MaxBytes:             engine.DefaultTaskMaxBytes,
	}
}

// TasksConfig holds the [tasks] section.
type TasksConfig struct {
	// Disabled turns MCP tasks off: execute_code runs only as ordinary
	// calls.
	Disabled bool `toml:"disabled"`
	// ResultTTL is how long, at least, a task's record is kept in memory
	// after its run. Default 10 minutes.
	ResultTTL Duration `toml:"result_ttl"`
	// MaxWaiting caps the runs that wait outside the pool on a person or
	// a model (elicitation, sampling), their slots given back and their
	// VMs kept. Default: twice sandbox.pool_size.
	MaxWaiting int `toml:"max_waiting"`
	// MaxPerPrincipal caps the tasks one principal has kept, running or
	// finished: a new one drops the oldest finished, or is refused when
	// all are running. Default 64.
	MaxPerPrincipal int `toml:"max_per_principal"`
	// MaxTasks caps the tasks kept for every principal. Default 1024.
	MaxTasks int `toml:"max_tasks"`
	// MaxBytesPerPrincipal caps the bytes of one principal's task
	// results kept: over it, the oldest finished are dropped. Default
	// 32 MiB.
	MaxBytesPerPrincipal int64 `toml:"max_bytes_per_principal"`
	// MaxBytes caps the bytes of every principal's task results kept.
	// Default 256 MiB.
	MaxBytes int64 `toml:"max_bytes"`
}

// validateTasks checks the [tasks] section.
func (c *Config) validateTasks() []error {
	var errs []error
	t := c.Tasks
	if c.Sandbox.MaxTaskDuration <= 0 {
		errs = append(errs, configError{"sandbox.max_task_duration", "must be positive"})
	}
	if t.ResultTTL <= 0 {
		errs = append(errs, configError{"tasks.result_ttl", "must be positive"})
	}
	for _, n := range []struct {
		key string
		v   int64
	}{
		{"tasks.max_per_principal", int64(t.MaxPerPrincipal)},
		{"tasks.max_tasks", int64(t.MaxTasks)},
		{"tasks.max_bytes_per_principal", t.MaxBytesPerPrincipal},
		{"tasks.max_bytes", t.MaxBytes},
	} {
		if n.v <= 0 {
			errs = append(errs, configError{n.key, "must be positive"})
		}
	}
	if t.MaxWaiting < 0 {
		errs = append(errs, configError{"tasks.max_waiting", "must not be negative (0 means twice the pool size)"})
	}
	return errs
}

// tasksServer is the configuration of tasks as the MCP server takes it.
func (c *Config) tasksServer() engine.TaskConfig {
	t := c.Tasks
	return engine.TaskConfig{
		Disabled:             t.Disabled,
		MaxDuration:          c.Sandbox.MaxTaskDuration.D(),
		ResultTTL:            t.ResultTTL.D(),
		MaxPerPrincipal:      t.MaxPerPrincipal,
		MaxTasks:             t.MaxTasks,
		MaxBytesPerPrincipal: t.MaxBytesPerPrincipal,
		MaxBytes:             t.MaxBytes,
	}
}
