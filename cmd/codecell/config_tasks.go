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

// defaultTasks is the [tasks] section's defaults.
func defaultTasks() TasksConfig {
	return TasksConfig{ResultTTL: Duration(10 * time.Minute)}
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
	if t.MaxWaiting < 0 {
		errs = append(errs, configError{"tasks.max_waiting", "must not be negative (0 means twice the pool size)"})
	}
	return errs
}

// tasksServer is the configuration of tasks as the MCP server takes it.
func (c *Config) tasksServer() engine.TaskConfig {
	return engine.TaskConfig{Disabled: c.Tasks.Disabled, MaxDuration: c.Sandbox.MaxTaskDuration.D(), ResultTTL: c.Tasks.ResultTTL.D()}
}
