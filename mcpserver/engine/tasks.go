package engine

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Long runs as MCP tasks (protocol 2025-11-25): a client that sends
// execute_code with a task gets a task handle at once, polls tasks/get,
// fetches the run record with tasks/result, and may cancel the run with
// tasks/cancel. mcp-go keeps the tasks, their status and their results,
// and mcpserver follows a task-augmented call to its task (its tasks.go);
// this file keeps what codecell needs on top:
//
//   - the run outlives the request that started it (mcp-go runs the
//     handler under the request's context, which Streamable HTTP ends
//     once the task handle is sent), and tasks/cancel stops it;
//   - a task run may ask (timeout_ms) for up to TaskConfig.MaxDuration
//     instead of the sandbox's max timeout; without timeout_ms it has
//     the default deadline, as any run, so that a task does not hold a
//     pool slot longer than it asked to (and a long one never takes the
//     slots the executor reserves, see executor.Config.ReservedSlots);
//   - every task expires: its TTL is at most MaxDuration + ResultTTL from
//     its creation, so a record is kept at least ResultTTL after the run;
//   - a task is its principal's: another principal's tasks/get,
//     tasks/result and tasks/cancel find no such task, and tasks/list
//     lists only the caller's (mcp-go binds tasks to the session only,
//     and not at all for requests without one).
//
// Tasks live in this process's memory (mcp-go's task table and the
// owners here): a restart loses them, runs and results alike, and a task
// is reachable only through the instance that created it.

// Defaults of TaskConfig.
const (
	DefaultTaskMaxDuration = 10 * time.Minute
	DefaultTaskResultTTL   = 10 * time.Minute
)

// TaskConfig configures execute_code run as an MCP task.
type TaskConfig struct {
	// Disabled turns task support off: execute_code is not advertised
	// as supporting tasks, and the server has no tasks capability.
	Disabled bool
	// MaxDuration caps the deadline a task run may ask for (timeout_ms)
	// in place of the sandbox's max timeout, when above it. A task run
	// that asks for none has the sandbox's default deadline. Default
	// DefaultTaskMaxDuration.
	MaxDuration time.Duration
	// ResultTTL is how long a task's record is kept, at least, after its
	// run ends. Default DefaultTaskResultTTL.
	ResultTTL time.Duration
}

func (c TaskConfig) withDefaults() TaskConfig {
	if c.MaxDuration <= 0 {
		c.MaxDuration = DefaultTaskMaxDuration
	}
	if c.ResultTTL <= 0 {
		c.ResultTTL = DefaultTaskResultTTL
	}
	return c
}

// errTaskCancelled is why a run ends when its task is cancelled.
var errTaskCancelled = errors.New("its task was cancelled (tasks/cancel)")

// Task is one execute_code task, from its creation to its expiry.
type Task struct {
	id        string
	principal string
	created   time.Time
	ttl       time.Duration

	mu        sync.Mutex
	cancel    context.CancelCauseFunc // set while the run runs
	cancelled bool
}

// expires is when mcp-go forgets the task.
func (t *Task) expires() time.Time { return t.created.Add(t.ttl) }

// stop cancels the task's run, now or as it starts.
func (t *Task) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cancelled = true
	if t.cancel != nil {
		t.cancel(errTaskCancelled)
	}
}

// Tasks keeps the execute_code tasks: whose each is, and its run.
type Tasks struct {
	cfg TaskConfig

	mu   sync.Mutex
	byID map[string]*Task
}

func newTasks(cfg TaskConfig) *Tasks {
	return &Tasks{cfg: cfg.withDefaults(), byID: map[string]*Task{}}
}

// Disabled says task support is off.
func (ts *Tasks) Disabled() bool { return ts.cfg.Disabled }

// MaxTimeout is the longest deadline a task run may ask for, given the
// sandbox's max timeout limit; limit itself when tasks are off.
func (ts *Tasks) MaxTimeout(limit time.Duration) time.Duration {
	if ts.cfg.Disabled {
		return limit
	}
	return max(ts.cfg.MaxDuration, limit)
}

// TTL is the longest a task is kept from its creation: long enough for
// the longest run and ResultTTL after it.
func (ts *Tasks) TTL() time.Duration { return ts.cfg.MaxDuration + ts.cfg.ResultTTL }

// Add keeps the task id, created for principal, which expires ttl after
// created; it forgets the tasks that expired.
func (ts *Tasks) Add(id, principal string, created time.Time, ttl time.Duration) *Task {
	now := time.Now()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for id, t := range ts.byID {
		if now.After(t.expires()) {
			delete(ts.byID, id)
		}
	}
	t := &Task{id: id, principal: principal, created: created, ttl: ttl}
	ts.byID[id] = t
	return t
}

// Cancel stops the run of task id (tasks/cancel), now or as it starts.
func (ts *Tasks) Cancel(id string) {
	ts.mu.Lock()
	t := ts.byID[id]
	ts.mu.Unlock()
	if t != nil {
		t.stop()
	}
}

// OwnedBy reports whether task id is principal's: a task codecell does
// not know (another tool's, one that expired) is no one's.
func (ts *Tasks) OwnedBy(id, principal string) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.byID[id]
	return t != nil && t.principal == principal
}

// Start returns the context of t's run: it outlives the request that
// started it (ctx), and ends when the task is cancelled or expires. end
// releases it.
func (ts *Tasks) Start(ctx context.Context, t *Task) (_ context.Context, end func()) {
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	runCtx, cancelExpiry := context.WithDeadline(runCtx, t.expires())
	t.mu.Lock()
	t.cancel = cancel
	if t.cancelled {
		cancel(errTaskCancelled)
	}
	t.mu.Unlock()
	return runCtx, func() {
		cancelExpiry()
		cancel(nil)
	}
}
