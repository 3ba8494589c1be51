package mcpserver

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Long runs as MCP tasks (protocol 2025-11-25): a client that sends
// execute_code with a task gets a task handle at once, polls tasks/get,
// fetches the run record with tasks/result, and may cancel the run with
// tasks/cancel. mcp-go keeps the tasks, their status and their results;
// this file adds what codecell needs on top:
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

// taskRun is one execute_code task, from the request that creates it to
// its expiry.
type taskRun struct {
	id        string
	principal string
	created   time.Time
	ttl       time.Duration
	params    *mcp.TaskParams // the request's, shared with the handler's copy

	mu        sync.Mutex
	cancel    context.CancelCauseFunc // set while the run runs
	cancelled bool
}

// expires is when mcp-go forgets the task.
func (t *taskRun) expires() time.Time { return t.created.Add(t.ttl) }

// stop cancels the task's run, now or as it starts.
func (t *taskRun) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cancelled = true
	if t.cancel != nil {
		t.cancel(errTaskCancelled)
	}
}

// taskRuns tracks the execute_code tasks of a server.
type taskRuns struct {
	cfg    TaskConfig
	caller func(context.Context) string // the principal a request is for

	mu sync.Mutex
	// pending are the task-augmented calls between the hook that sees
	// them and the one that sees their task created, by request context.
	pending map[context.Context]*taskRun
	// starting are the created tasks whose handler has not started, by
	// the request's task parameters, which the handler's copy shares.
	starting map[*mcp.TaskParams]*taskRun
	byID     map[string]*taskRun
}

func newTaskRuns(cfg TaskConfig, caller func(context.Context) string) *taskRuns {
	return &taskRuns{
		cfg:      cfg.withDefaults(),
		caller:   caller,
		pending:  map[context.Context]*taskRun{},
		starting: map[*mcp.TaskParams]*taskRun{},
		byID:     map[string]*taskRun{},
	}
}

// maxTimeout is the longest deadline a task run may ask for, given the
// sandbox's max timeout limit; limit itself when tasks are off.
func (ts *taskRuns) maxTimeout(limit time.Duration) time.Duration {
	if ts.cfg.Disabled {
		return limit
	}
	return max(ts.cfg.MaxDuration, limit)
}

// ttl is the longest a task is kept from its creation.
func (ts *taskRuns) ttl() time.Duration { return ts.cfg.MaxDuration + ts.cfg.ResultTTL }

// options are the mcp-go server options task support needs.
func (ts *taskRuns) options() []server.ServerOption {
	if ts.cfg.Disabled {
		return nil
	}
	th := &server.TaskHooks{}
	th.AddOnTaskCreated(ts.created)
	th.AddOnTaskCancelled(func(_ context.Context, m server.TaskMetrics) {
		ts.mu.Lock()
		t := ts.byID[m.TaskID]
		ts.mu.Unlock()
		if t != nil {
			t.stop()
		}
	})
	return []server.ServerOption{
		server.WithTaskCapabilities(true, true, true),
		server.WithTaskHooks(th),
	}
}

// hooks binds tasks to their principals and follows a task-augmented
// call from its request to its task.
func (ts *taskRuns) hooks(h *server.Hooks) {
	if ts.cfg.Disabled {
		return
	}
	h.AddBeforeCallTool(func(ctx context.Context, _ any, req *mcp.CallToolRequest) {
		if req.Params.Task == nil || req.Params.Name != "execute_code" {
			return
		}
		// The server decides how long it keeps a task: at most long
		// enough for the longest run and ResultTTL after it.
		ttl := ts.ttl()
		if t := req.Params.Task.TTL; t != nil && *t > 0 && time.Duration(*t)*time.Millisecond < ttl {
			ttl = time.Duration(*t) * time.Millisecond
		}
		ms := ttl.Milliseconds()
		req.Params.Task.TTL = &ms
		ts.mu.Lock()
		ts.pending[ctx] = &taskRun{principal: ts.caller(ctx), ttl: ttl, params: req.Params.Task}
		ts.mu.Unlock()
	})
	forget := func(ctx context.Context) {
		ts.mu.Lock()
		delete(ts.pending, ctx)
		ts.mu.Unlock()
	}
	h.AddAfterCallTool(func(ctx context.Context, _ any, _ *mcp.CallToolRequest, _ any) { forget(ctx) })
	h.AddOnError(func(ctx context.Context, _ any, method mcp.MCPMethod, _ any, _ error) {
		if method == mcp.MethodToolsCall {
			forget(ctx)
		}
	})
	// Another principal's task is no task: its id is swapped for one
	// that names none, so that the answer is mcp-go's own "not found".
	h.AddBeforeGetTask(func(ctx context.Context, _ any, req *mcp.GetTaskRequest) {
		req.Params.TaskId = ts.visible(ctx, req.Params.TaskId)
	})
	h.AddBeforeTaskResult(func(ctx context.Context, _ any, req *mcp.TaskResultRequest) {
		req.Params.TaskId = ts.visible(ctx, req.Params.TaskId)
	})
	h.AddBeforeCancelTask(func(ctx context.Context, _ any, req *mcp.CancelTaskRequest) {
		req.Params.TaskId = ts.visible(ctx, req.Params.TaskId)
	})
	h.AddAfterListTasks(func(ctx context.Context, _ any, _ *mcp.ListTasksRequest, res *mcp.ListTasksResult) {
		if res == nil {
			return
		}
		kept := res.Tasks[:0]
		for _, t := range res.Tasks {
			if ts.visible(ctx, t.TaskId) == t.TaskId {
				kept = append(kept, t)
			}
		}
		res.Tasks = kept
	})
}

// visible returns id when the task is the caller's, and otherwise an id
// that names no task.
func (ts *taskRuns) visible(ctx context.Context, id string) string {
	ts.mu.Lock()
	t := ts.byID[id]
	ts.mu.Unlock()
	if t != nil && t.principal == ts.caller(ctx) {
		return id
	}
	return "not-yours"
}

// created sees mcp-go create a task for a call the BeforeCallTool hook
// saw, on the same request context.
func (ts *taskRuns) created(ctx context.Context, m server.TaskMetrics) {
	now := time.Now()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for id, t := range ts.byID {
		if now.After(t.expires()) {
			delete(ts.byID, id)
		}
	}
	t := ts.pending[ctx]
	if t == nil {
		return // a task of another tool
	}
	delete(ts.pending, ctx)
	t.id, t.created = m.TaskID, m.CreatedAt
	ts.byID[t.id] = t
	ts.starting[t.params] = t
}

// start prepares the run of an execute_code call: for a task, a context
// that outlives the request but ends when the task is cancelled or
// expires, and the deadline cap of a task. For an ordinary call it
// returns ctx and nil.
func (ts *taskRuns) start(ctx context.Context, req mcp.CallToolRequest) (context.Context, *taskRun, func()) {
	if ts.cfg.Disabled || req.Params.Task == nil {
		return ctx, nil, func() {}
	}
	ts.mu.Lock()
	t := ts.starting[req.Params.Task]
	delete(ts.starting, req.Params.Task)
	ts.mu.Unlock()
	if t == nil {
		// Not a task mcp-go created through the hooks; never expected.
		return ctx, nil, func() {}
	}
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	runCtx, cancelExpiry := context.WithDeadline(runCtx, t.expires())
	t.mu.Lock()
	t.cancel = cancel
	if t.cancelled {
		cancel(errTaskCancelled)
	}
	t.mu.Unlock()
	return runCtx, t, func() {
		cancelExpiry()
		cancel(nil)
	}
}

// execution is execute_code's task support: optional, unless disabled.
func (ts *taskRuns) execution() *mcp.ToolExecution {
	if ts.cfg.Disabled {
		return nil
	}
	return &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
}
