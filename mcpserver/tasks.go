package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/mcpserver/engine"
)

// execute_code as an MCP task: mcp-go keeps the tasks, their status and
// their results; the engine keeps whose each task is and its run
// (engine.Tasks). This file follows a task-augmented call from its
// request to the task mcp-go creates for it, and keeps each principal to
// its own tasks: another principal's tasks/get, tasks/result and
// tasks/cancel find no such task, and tasks/list lists only the caller's
// (mcp-go binds tasks to the session only, and not at all for requests
// without one).

// taskCalls follows task-augmented execute_code calls to their tasks.
type taskCalls struct {
	tasks  *engine.Tasks
	caller func(context.Context) string // the principal a request is for

	mu sync.Mutex
	// pending are the task-augmented calls between the hook that sees
	// them and the one that sees their task created, by request context.
	pending map[context.Context]pendingTask
	// starting are the created tasks whose handler has not started, by
	// the request's task parameters, which the handler's copy shares.
	starting map[*mcp.TaskParams]*engine.Task
}

// pendingTask is a task-augmented call whose task is not created yet.
type pendingTask struct {
	principal string
	ttl       time.Duration
	params    *mcp.TaskParams // the request's, shared with the handler's copy
}

func newTaskCalls(tasks *engine.Tasks, caller func(context.Context) string) *taskCalls {
	return &taskCalls{
		tasks:    tasks,
		caller:   caller,
		pending:  map[context.Context]pendingTask{},
		starting: map[*mcp.TaskParams]*engine.Task{},
	}
}

// options are the mcp-go server options task support needs.
func (tc *taskCalls) options() []server.ServerOption {
	if tc.tasks.Disabled() {
		return nil
	}
	th := &server.TaskHooks{}
	th.AddOnTaskCreated(tc.created)
	th.AddOnTaskCancelled(func(_ context.Context, m server.TaskMetrics) { tc.tasks.Cancel(m.TaskID) })
	return []server.ServerOption{
		server.WithTaskCapabilities(true, true, true),
		server.WithTaskHooks(th),
	}
}

// hooks binds tasks to their principals and follows a task-augmented
// call from its request to its task.
func (tc *taskCalls) hooks(h *server.Hooks) {
	if tc.tasks.Disabled() {
		return
	}
	h.AddBeforeCallTool(func(ctx context.Context, _ any, req *mcp.CallToolRequest) {
		if req.Params.Task == nil || req.Params.Name != "execute_code" {
			return
		}
		// The server decides how long it keeps a task: at most long
		// enough for the longest run and ResultTTL after it.
		ttl := tc.tasks.TTL()
		if t := req.Params.Task.TTL; t != nil && *t > 0 && time.Duration(*t)*time.Millisecond < ttl {
			ttl = time.Duration(*t) * time.Millisecond
		}
		ms := ttl.Milliseconds()
		req.Params.Task.TTL = &ms
		tc.mu.Lock()
		tc.pending[ctx] = pendingTask{principal: tc.caller(ctx), ttl: ttl, params: req.Params.Task}
		tc.mu.Unlock()
	})
	forget := func(ctx context.Context) {
		tc.mu.Lock()
		delete(tc.pending, ctx)
		tc.mu.Unlock()
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
		req.Params.TaskId = tc.visible(ctx, req.Params.TaskId)
	})
	h.AddBeforeTaskResult(func(ctx context.Context, _ any, req *mcp.TaskResultRequest) {
		req.Params.TaskId = tc.visible(ctx, req.Params.TaskId)
	})
	h.AddBeforeCancelTask(func(ctx context.Context, _ any, req *mcp.CancelTaskRequest) {
		req.Params.TaskId = tc.visible(ctx, req.Params.TaskId)
	})
	h.AddAfterListTasks(func(ctx context.Context, _ any, _ *mcp.ListTasksRequest, res *mcp.ListTasksResult) {
		if res == nil {
			return
		}
		// mcp-go lists every task after the cursor, sorted by id (its
		// cursor is the last id listed, base64): the page is the
		// caller's first taskListPage of them.
		kept := res.Tasks[:0]
		for _, t := range res.Tasks {
			if tc.visible(ctx, t.TaskId) != t.TaskId {
				continue
			}
			if len(kept) == taskListPage {
				res.NextCursor = mcp.Cursor(base64.StdEncoding.EncodeToString([]byte(kept[len(kept)-1].TaskId)))
				break
			}
			kept = append(kept, t)
		}
		clear(res.Tasks[len(kept):])
		res.Tasks = kept
	})
}

// taskListPage is how many tasks a tasks/list page lists.
const taskListPage = 50

// visible returns id when the task is the caller's, and otherwise an id
// that names no task.
func (tc *taskCalls) visible(ctx context.Context, id string) string {
	if tc.tasks.OwnedBy(id, tc.caller(ctx)) {
		return id
	}
	return "not-yours"
}

// created sees mcp-go create a task for a call the BeforeCallTool hook
// saw, on the same request context.
func (tc *taskCalls) created(ctx context.Context, m server.TaskMetrics) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	p, ok := tc.pending[ctx]
	if !ok {
		return // a task of another tool
	}
	delete(tc.pending, ctx)
	tc.starting[p.params] = tc.tasks.Add(m.TaskID, p.principal, m.CreatedAt, p.ttl)
}

// start prepares the run of an execute_code call: for a task, a context
// that outlives the request but ends when the task is cancelled or
// expires, and the task. For an ordinary call it returns ctx, nil.
func (tc *taskCalls) start(ctx context.Context, req mcp.CallToolRequest) (context.Context, *engine.Task, func()) {
	if tc.tasks.Disabled() || req.Params.Task == nil {
		return ctx, nil, func() {}
	}
	tc.mu.Lock()
	t := tc.starting[req.Params.Task]
	delete(tc.starting, req.Params.Task)
	tc.mu.Unlock()
	if t == nil {
		// Not a task mcp-go created through the hooks; never expected.
		return ctx, nil, func() {}
	}
	runCtx, end := tc.tasks.Start(ctx, t)
	return runCtx, t, end
}

// held is a task's result as mcp-go keeps it until the task expires: its
// bytes are the engine's (engine.Tasks.Finish), which drops them when
// the task is dropped for a newer one, so that what mcp-go holds is a
// few words per task.
func (tc *taskCalls) held(t *engine.Task, res *mcp.CallToolResult) *mcp.CallToolResult {
	body, _ := res.StructuredContent.(json.RawMessage)
	if t == nil || body == nil {
		return res
	}
	tc.tasks.Finish(t, body)
	h := &heldResult{task: t}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&heldText{TextContent: mcp.TextContent{Type: mcp.ContentTypeText}, result: h}},
		StructuredContent: h,
		IsError:           res.IsError,
	}
}

// heldResult is a task's run record, read from its task when sent.
type heldResult struct{ task *engine.Task }

// taskDropped is the record a dropped task's result reads as, should a
// tasks/result race with its drop.
var taskDropped = []byte(`{"status":"error","error":{"kind":"not_found","message":"this task's result was dropped to make room for newer tasks (tasks.max_per_principal, tasks.max_bytes_per_principal); ask for a task's result sooner"}}`)

func (h *heldResult) body() []byte {
	if b, ok := h.task.Result(); ok {
		return b
	}
	return taskDropped
}

// MarshalJSON is the run record, as structuredContent.
func (h *heldResult) MarshalJSON() ([]byte, error) { return h.body(), nil }

// heldText is the run record as the text content.
type heldText struct {
	mcp.TextContent
	result *heldResult
}

// MarshalJSON is a text content holding the run record.
func (c *heldText) MarshalJSON() ([]byte, error) {
	return json.Marshal(mcp.TextContent{Type: mcp.ContentTypeText, Text: string(c.result.body())})
}

// execution is execute_code's task support: optional, unless disabled.
func (tc *taskCalls) execution() *mcp.ToolExecution {
	if tc.tasks.Disabled() {
		return nil
	}
	return &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
}
