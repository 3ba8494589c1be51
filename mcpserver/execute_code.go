package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver/engine"
)

const executeCodeDescription = `Run a JavaScript/TypeScript program (an async function body) in a sandbox where catalogue tools are async functions: await github.search_issues({...}); find them with search_tools. Filter data in the program, return only the answer; await independent calls with Promise.all. A failed call throws ToolError (.code, .tool). No network, files or timers.`

// executeCodeInput is the input schema of execute_code. Its timeout
// maximum is filled in from the executor's configuration.
const executeCodeInput = `{
	"type": "object",
	"properties": {
		"code": {"type": "string", "minLength": 1, "description": "The program."},
		"language": {"type": "string", "enum": ["javascript", "typescript"], "default": "javascript"},
		"timeout_ms": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Deadline, default %d%s."},
		"budget_bytes": {"type": "integer", "minimum": 1024, "maximum": %d, "description": "Bytes of output, default %d."},
		"details": {"type": "boolean", "description": "Add each call, finding and stack."},
		"purpose": {"type": "string", "maxLength": 500, "description": "Shown when a call needs the user's approval."},
		"mode": {"type": "string", "enum": ["run", "plan"]},
		"plan_id": {"type": "string", "maxLength": 100, "description": "Commit a plan (mode plan made it)."}
	},
	"additionalProperties": false
}`

// executeCodeOutput is the output schema of execute_code: the run record
// (see Record).
const executeCodeOutput = `{
	"type": "object",
	"properties": {
		"status": {"type": "string", "enum": ["ok", "error"]},
		"result": {},
		"table": {"type": "string"},
		"error": {"type": "object", "required": ["kind", "message"]},
		"logs": {"type": "array"},
		"stats": {"type": "object"},
		"result_uri": {"type": "string"}
	},
	"required": ["status", "stats"]
}`

// KindRateLimited is the error kind of a run refused by a rate limit.
const KindRateLimited executor.Kind = "rate_limited"

func (s *Server) executeCodeInputSchema() json.RawMessage {
	cfg := s.exec.Config()
	maxMS, note := cfg.MaxTimeout.Milliseconds(), ""
	if long := s.eng.Tasks().MaxTimeout(cfg.MaxTimeout); long > cfg.MaxTimeout {
		maxMS, note = long.Milliseconds(), fmt.Sprintf("; over %d only as a task", cfg.MaxTimeout.Milliseconds())
	}
	return json.RawMessage(fmt.Sprintf(executeCodeInput, maxMS, cfg.Timeout.Milliseconds(), note, s.maxBudget, s.budget))
}

func (s *Server) executeCodeTool() mcp.Tool {
	return mcp.Tool{
		Name:            "execute_code",
		Description:     executeCodeDescription,
		RawInputSchema:  s.executeCodeInputSchema(),
		RawOutputSchema: json.RawMessage(executeCodeOutput),
		// The hints' defaults (not read-only, possibly destructive, open
		// world) are what a program with tools may be; only the title is set.
		Annotations: mcp.ToolAnnotation{Title: "Execute code"},
		Execution:   s.tasks.execution(),
	}
}

type executeCodeArgs struct {
	Code        string `json:"code"`
	Language    string `json:"language"`
	TimeoutMS   int64  `json:"timeout_ms"`
	BudgetBytes int    `json:"budget_bytes"`
	Details     bool   `json:"details"`
	Purpose     string `json:"purpose"`
	Mode        string `json:"mode"`
	PlanID      string `json:"plan_id"`
}

// executeCode is the execute_code handler: it admits the request, then
// runs it through Execute. Every failure — bad arguments, a refusal, a
// program error, a limit — is a tool result with isError set and a run
// record whose error.kind names it, never a protocol error.
func (s *Server) executeCode(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
	ctx, task, end := s.tasks.start(ctx, req) // a task's run outlives the request
	defer end()
	defer func() {
		if p := recover(); p != nil {
			res, err = s.crashed(task, p)
		}
	}()
	return s.tasks.held(task, s.run(ctx, req, task)), nil
}

// errCrashed is what the client is told of a run that panicked: nothing
// of the panic, which may hold data of the run's.
var errCrashed = errors.New("an internal error occurred in codecell while it ran this program (a bug, not in your program); the server's log has the details")

// crashed ends an execute_code call whose run panicked: the run's
// deferred releases (its admission, its pool slot, its bytes in flight)
// have run as the panic unwound; its task, if it is one, is finished,
// so that it no longer counts as running, and fails; an ordinary call
// gets a record of kind internal_error. The log has the panic at error
// level: its stack and, for a runtime error, its message — never
// another panic value, which may hold the run's data.
func (s *Server) crashed(task *engine.Task, p any) (*mcp.CallToolResult, error) {
	attrs := []any{"panic_type", fmt.Sprintf("%T", p), "stack", string(debug.Stack())}
	if re, ok := p.(runtime.Error); ok {
		attrs = append(attrs, "panic", re.Error())
	}
	if task != nil {
		attrs = append(attrs, "task", task.ID())
	}
	s.log.Error("execute_code panicked", attrs...)
	res := toolResult(s.eng.RefusedRecord(executor.KindInternal, errCrashed.Error()))
	if task != nil {
		s.tasks.held(task, res) // no longer running: its place is free
		return nil, errCrashed  // the task fails, with this message
	}
	return res, nil
}

// run runs an execute_code call, or a task's run when task is not nil.
func (s *Server) run(ctx context.Context, req mcp.CallToolRequest, task *engine.Task) *mcp.CallToolResult {
	var args executeCodeArgs
	if err := decodeArgs(s.executeCodeSchema, "execute_code", req, &args); err != nil {
		return s.refused(executor.KindInvalidRequest, fmt.Sprintf(`%v. Send {"code": "...", "language": "javascript"|"typescript", "timeout_ms": n}`, err))
	}
	if msg := planModeError(args.Mode, args.PlanID, args.Code); msg != "" {
		return s.refused(executor.KindInvalidRequest, msg)
	}
	if limit := s.exec.Config().MaxTimeout; req.Params.Task == nil && time.Duration(args.TimeoutMS)*time.Millisecond > limit {
		return s.refused(executor.KindInvalidRequest, fmt.Sprintf("timeout_ms %d is over the %d an ordinary call may ask for; ask for less, or run the program as an MCP task (up to %d)",
			args.TimeoutMS, limit.Milliseconds(), s.eng.Tasks().MaxTimeout(limit).Milliseconds()))
	}
	if task != nil && task.Refused() != "" {
		return s.refused(executor.KindBusy, task.Refused())
	}
	caller, local := s.caller(ctx), isLocal(ctx)
	if r := s.eng.Limits().AllowExecution(ctx, caller.Principal, local); r != nil {
		s.eng.Metrics().Refused(r.Limit())
		return s.refused(KindRateLimited, r.Error())
	}
	if args.PlanID != "" {
		rec, body := s.eng.Commit(ctx, args.PlanID, engine.Execution{Caller: caller, Local: local, BudgetBytes: args.BudgetBytes, Details: args.Details, Purpose: args.Purpose})
		return toolResult(rec, body)
	}
	arrived := time.Now()
	release, r := s.eng.Limits().Admit(ctx, caller.Principal, s.exec.Config().QueueWait)
	if r != nil {
		s.eng.Metrics().Refused(r.Limit())
		return s.refused(executor.KindBusy, r.Error())
	}
	defer release()
	x := engine.Execution{
		Caller:      caller,
		Local:       local,
		Code:        args.Code,
		Language:    executor.Language(args.Language),
		Timeout:     time.Duration(args.TimeoutMS) * time.Millisecond,
		BudgetBytes: args.BudgetBytes,
		Details:     args.Details,
		Purpose:     args.Purpose,
		Mode:        args.Mode,
		Waited:      time.Since(arrived), // the wait for admission counts against the queue wait
	}
	if task != nil {
		// A task's run may ask for up to the task limit; without
		// timeout_ms it has the default deadline, as any run.
		x.MaxTimeout = s.eng.Tasks().MaxTimeout(s.exec.Config().MaxTimeout)
	}
	x.Resume = resumeOf(ctx, req, task != nil)
	notified := s.streamTo(ctx, req, &x)
	rec, body := s.eng.Execute(ctx, x)
	if rec != nil && rec.Input != nil {
		return inputRequired(rec.Input)
	}
	if rec != nil {
		s.learn.ran(ctx, caller, s.reg.View(caller), rec.Calls)
	}
	if notified.Load() {
		flushNotifications(ctx)
	}
	return toolResult(rec, body)
}

// refused is the result of a request that never ran.
func (s *Server) refused(kind executor.Kind, msg string) *mcp.CallToolResult {
	return toolResult(s.eng.RefusedRecord(kind, msg))
}

// toolResult carries a record as structuredContent and, serialized, as
// the text content, as the MCP specification recommends: a host reads
// the same record whichever it hands the model.
func toolResult(rec *engine.Record, body []byte) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(string(body))},
		StructuredContent: json.RawMessage(body),
		IsError:           rec.Status != executor.StatusOK,
	}
}

// planModeError checks an execute_code request's mode and plan_id.
func planModeError(mode, planID, code string) string {
	switch {
	case mode != "" && mode != engine.ModePlan && mode != "run":
		return fmt.Sprintf("mode %q: want \"run\" (default) or \"plan\"", mode)
	case planID != "" && (strings.TrimSpace(code) != "" || mode == engine.ModePlan):
		return "send either code (with mode \"plan\" for a dry run) or plan_id (to commit a plan), not both"
	case planID == "" && strings.TrimSpace(code) == "":
		return "missing property 'code': send code to run, or plan_id to commit a plan"
	}
	return ""
}
