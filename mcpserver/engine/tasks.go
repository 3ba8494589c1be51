package engine

import (
	"context"
	"errors"
	"fmt"
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
//     and not at all for requests without one);
//   - the tasks kept are bounded, per principal and installation-wide,
//     in count (MaxPerPrincipal, MaxTasks) and in the bytes of their
//     results (MaxBytesPerPrincipal, MaxBytes): a new task, or a result
//     over a byte limit, drops the oldest finished task (of the same
//     principal first), which is then found no more; a new task that
//     would need to drop a running one is refused, and its run ends at
//     once with an error that says why.
//
// Tasks live in this process's memory (mcp-go's task table and the
// owners here): a restart loses them, runs and results alike, and a task
// is reachable only through the instance that created it.

// Defaults of TaskConfig.
const (
	DefaultTaskMaxDuration     = 10 * time.Minute
	DefaultTaskResultTTL       = 10 * time.Minute
	DefaultTaskMaxPerPrincipal = 64
	DefaultTaskMaxTasks        = 1024
	DefaultTaskMaxBytesEach    = 32 << 20  // of one principal's results
	DefaultTaskMaxBytes        = 256 << 20 // of every principal's results
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
	// MaxPerPrincipal caps the tasks one principal has, running or
	// finished. Default DefaultTaskMaxPerPrincipal.
	MaxPerPrincipal int
	// MaxTasks caps the tasks of every principal. Default
	// DefaultTaskMaxTasks.
	MaxTasks int
	// MaxBytesPerPrincipal caps the bytes of one principal's finished
	// tasks' results. Default DefaultTaskMaxBytesEach.
	MaxBytesPerPrincipal int64
	// MaxBytes caps the bytes of every principal's finished tasks'
	// results. Default DefaultTaskMaxBytes.
	MaxBytes int64
}

func (c TaskConfig) withDefaults() TaskConfig {
	if c.MaxDuration <= 0 {
		c.MaxDuration = DefaultTaskMaxDuration
	}
	if c.ResultTTL <= 0 {
		c.ResultTTL = DefaultTaskResultTTL
	}
	if c.MaxPerPrincipal <= 0 {
		c.MaxPerPrincipal = DefaultTaskMaxPerPrincipal
	}
	if c.MaxTasks <= 0 {
		c.MaxTasks = DefaultTaskMaxTasks
	}
	if c.MaxBytesPerPrincipal <= 0 {
		c.MaxBytesPerPrincipal = DefaultTaskMaxBytesEach
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultTaskMaxBytes
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

	// refused says why the task was refused (too many running), or "".
	refused string

	mu        sync.Mutex
	cancel    context.CancelCauseFunc // set while the run runs
	cancelled bool
	finished  bool   // its run ended (Finish)
	dropped   bool   // dropped for a newer one: found no more
	body      []byte // its result, once finished and until dropped
}

// ID is the task's id.
func (t *Task) ID() string { return t.id }

// Refused says why the task was refused when it was created (its
// principal, or the installation, had as many tasks running as it may
// keep), or "" for a task that may run.
func (t *Task) Refused() string { return t.refused }

// Result is the task's result as Finish kept it, and false once the
// task was dropped to keep the tasks within their limits.
func (t *Task) Result() ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.body, !t.dropped
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
	// order holds the kept tasks, oldest first.
	order []*Task
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
// created; it forgets the tasks that expired, and drops the oldest
// finished tasks to keep within MaxPerPrincipal and MaxTasks. When only
// running tasks could make room, the task is kept but refused (see
// Task.Refused): its run must end at once with that error.
func (ts *Tasks) Add(id, principal string, created time.Time, ttl time.Duration) *Task {
	now := time.Now()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	kept := ts.order[:0]
	for _, t := range ts.order {
		if now.After(t.expires()) || t.isDropped() {
			delete(ts.byID, t.id)
			continue
		}
		kept = append(kept, t)
	}
	clear(ts.order[len(kept):])
	ts.order = kept
	t := &Task{id: id, principal: principal, created: created, ttl: ttl}
	if ts.count(principal) >= ts.cfg.MaxPerPrincipal && !ts.dropOldest(principal, nil) {
		t.refused = fmt.Sprintf("too many tasks running: principal %s has %d (tasks.max_per_principal); wait for one to end, or cancel one (tasks/cancel)", principal, ts.cfg.MaxPerPrincipal)
	} else if len(ts.order) >= ts.cfg.MaxTasks && !ts.dropOldest(principal, nil) && !ts.dropOldest("", nil) {
		t.refused = fmt.Sprintf("too many tasks running on this server: %d (tasks.max_tasks); wait for one to end", ts.cfg.MaxTasks)
	}
	if t.refused != "" {
		t.finished = true // refused tasks are never running ones
	}
	ts.byID[id] = t
	ts.order = append(ts.order, t)
	return t
}

// Finish keeps body as t's result, and drops the oldest finished tasks
// (never t) until the results kept are within MaxBytesPerPrincipal and
// MaxBytes.
func (ts *Tasks) Finish(t *Task, body []byte) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.mu.Lock()
	t.finished, t.body = true, body
	t.mu.Unlock()
	for ts.bytes(t.principal) > ts.cfg.MaxBytesPerPrincipal && ts.dropOldest(t.principal, t) {
	}
	for ts.bytes("") > ts.cfg.MaxBytes && (ts.dropOldest(t.principal, t) || ts.dropOldest("", t)) {
	}
}

// count is how many tasks principal has kept, or every principal for "".
func (ts *Tasks) count(principal string) int {
	n := 0
	for _, t := range ts.order {
		if (principal == "" || t.principal == principal) && !t.isDropped() {
			n++
		}
	}
	return n
}

// bytes is the size of principal's results kept, or every principal's
// for "".
func (ts *Tasks) bytes(principal string) int64 {
	var n int64
	for _, t := range ts.order {
		if principal == "" || t.principal == principal {
			t.mu.Lock()
			if !t.dropped {
				n += int64(len(t.body))
			}
			t.mu.Unlock()
		}
	}
	return n
}

// dropOldest drops principal's (every principal's for "") oldest
// finished task other than keep, and says whether there was one.
func (ts *Tasks) dropOldest(principal string, keep *Task) bool {
	for _, t := range ts.order {
		if t == keep || (principal != "" && t.principal != principal) {
			continue
		}
		t.mu.Lock()
		drop := t.finished && !t.dropped
		if drop {
			t.dropped, t.body = true, nil
		}
		t.mu.Unlock()
		if drop {
			return true
		}
	}
	return false
}

func (t *Task) isDropped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped
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
	return t != nil && t.principal == principal && !t.isDropped()
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
