package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
)

const executeCodeDescription = `Run a JavaScript/TypeScript program in a sandbox where catalogue tools are async functions: await github.search_issues({...}). Workflow: read_tools "/manifest.json" for categories, "/{category}/index.json" for tools, "/{category}/{tool}.d.ts" for a signature; then send one program that calls what it needs, filters the data and returns only what you need. The program is an async function body (await, return; else the last expression is the result). Use Promise.all for independent calls. A failed call throws ToolError (.code, .tool). No network, files or timers. Returns result, logs and a call trace; errors say what to fix.`

// executeCodeInput is the input schema of execute_code. Its timeout
// maximum is filled in from the executor's configuration.
const executeCodeInput = `{
	"type": "object",
	"properties": {
		"code": {"type": "string", "minLength": 1, "description": "The program."},
		"language": {"type": "string", "enum": ["javascript", "typescript"], "default": "javascript"},
		"timeout_ms": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Deadline, default %d."}
	},
	"required": ["code"],
	"additionalProperties": false
}`

// executeCodeOutput is the output schema of execute_code: the run record.
const executeCodeOutput = `{
	"type": "object",
	"properties": {
		"status": {"type": "string", "enum": ["ok", "error"]},
		"result": {},
		"error": {"type": "object", "properties": {"kind": {"type": "string"}, "message": {"type": "string"}, "line": {"type": "integer"}, "column": {"type": "integer"}}, "required": ["kind", "message"]},
		"logs": {"type": "array", "items": {"type": "object"}},
		"tool_calls": {"type": "array", "items": {"type": "object"}},
		"telemetry": {"type": "object"}
	},
	"required": ["status", "result"]
}`

func (s *Server) executeCodeInputSchema() json.RawMessage {
	cfg := s.exec.Config()
	return json.RawMessage(fmt.Sprintf(executeCodeInput, cfg.MaxTimeout.Milliseconds(), cfg.Timeout.Milliseconds()))
}

func (s *Server) executeCodeTool() mcp.Tool {
	return mcp.Tool{
		Name:            "execute_code",
		Description:     executeCodeDescription,
		RawInputSchema:  s.executeCodeInputSchema(),
		RawOutputSchema: json.RawMessage(executeCodeOutput),
		Annotations: mcp.ToolAnnotation{
			Title:           "Execute code",
			ReadOnlyHint:    mcp.ToBoolPtr(false),
			DestructiveHint: mcp.ToBoolPtr(true),
			OpenWorldHint:   mcp.ToBoolPtr(true),
		},
	}
}

type executeCodeArgs struct {
	Code      string `json:"code"`
	Language  string `json:"language"`
	TimeoutMS int64  `json:"timeout_ms"`
}

// executeCode is the execute_code handler. Every failure — bad arguments,
// a program error, a limit — is a tool result with isError set, never a
// protocol error.
func (s *Server) executeCode(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args, err := s.parseExecuteCode(req)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	principal := s.caller(ctx).Principal
	if r := s.limits.allowExecution(principal); r != nil {
		s.metrics.refusals.WithLabelValues(r.limit).Inc()
		return mcp.NewToolResultError(r.Error()), nil
	}
	release, r := s.limits.admit(ctx, s.exec.Config().QueueWait)
	if r != nil {
		s.metrics.refusals.WithLabelValues(r.limit).Inc()
		return mcp.NewToolResultError(r.Error()), nil
	}
	defer release()
	x := Execution{
		Code:     args.Code,
		Language: executor.Language(args.Language),
		Timeout:  time.Duration(args.TimeoutMS) * time.Millisecond,
	}
	s.streamTo(ctx, req, &x)
	res := s.Execute(ctx, x)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(renderRun(res))},
		StructuredContent: res,
		IsError:           res.Status != executor.StatusOK,
	}, nil
}

// Execution is one program to run through Execute.
type Execution struct {
	Code     string
	Language executor.Language
	Timeout  time.Duration
	// OnLog and OnProgress, when set, see console lines and progress
	// reports as the program makes them.
	OnLog      func(executor.LogLine)
	OnProgress func(message string, fraction float64)
}

// Execute runs a program as execute_code does, for the caller that ctx
// carries, and records it in the audit log. The exec command uses it to
// run programs from the terminal.
func (s *Server) Execute(ctx context.Context, x Execution) *executor.Result {
	caller := s.caller(ctx)
	id := newExecutionID()
	started := time.Now()
	s.audit.record(auditRecord{exec: executionRecord(id, caller, x, started, nil)})
	d := &runDispatcher{dispatcher: dispatcher{s: s, caller: caller}, execID: id}
	res := s.exec.Run(ctx, executor.Request{
		Code:       x.Code,
		Language:   x.Language,
		Timeout:    x.Timeout,
		Dispatcher: d,
		Functions:  s.functions(),
		OnLog:      x.OnLog,
		OnProgress: x.OnProgress,
	})
	s.metrics.observeRun(res)
	d.mu.Lock()
	calls := d.calls
	d.mu.Unlock()
	s.audit.record(auditRecord{exec: executionRecord(id, caller, x, started, res), calls: calls})
	s.log.Debug("execute", "id", id, "session", caller.Session, "status", res.Status, "kind", errorKind(res),
		"ms", res.Telemetry.DurationMS, "calls", res.Telemetry.ToolCalls, "code_bytes", len(x.Code))
	return res
}

func errorKind(res *executor.Result) executor.Kind {
	if res.Error == nil {
		return ""
	}
	return res.Error.Kind
}

func (s *Server) parseExecuteCode(req mcp.CallToolRequest) (executeCodeArgs, error) {
	raw := req.Params.RawArguments
	if len(raw) == 0 {
		b, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return executeCodeArgs{}, fmt.Errorf("execute_code: arguments are not JSON: %w", err)
		}
		raw = b
	}
	if string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if ps := s.executeCodeSchema.Validate(raw); len(ps) > 0 {
		var parts []string
		for _, p := range ps {
			where := "arguments"
			if p.Path != "" {
				where += p.Path
			}
			parts = append(parts, where+": "+p.Message)
		}
		return executeCodeArgs{}, fmt.Errorf("execute_code: invalid arguments: %s. Send {\"code\": \"...\", \"language\": \"javascript\"|\"typescript\", \"timeout_ms\": n}", strings.Join(parts, "; "))
	}
	var a executeCodeArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return executeCodeArgs{}, fmt.Errorf("execute_code: invalid arguments: %w", err)
	}
	return a, nil
}

// renderRun is the text the model reads: the outcome first, then the
// result or the error, then console output.
func renderRun(res *executor.Result) string {
	var b strings.Builder
	t := res.Telemetry
	if res.Status == executor.StatusOK {
		fmt.Fprintf(&b, "ok (%.1f ms, %s)\n", t.DurationMS, plural(t.ToolCalls, "tool call"))
		b.Write(res.Value)
		b.WriteByte('\n')
	} else {
		e := res.Error
		fmt.Fprintf(&b, "error: %s (%.1f ms, %s)\n", e.Kind, t.DurationMS, plural(t.ToolCalls, "tool call"))
		b.WriteString(e.Message)
		if e.Line > 0 {
			fmt.Fprintf(&b, "\nat line %d, column %d", e.Line, e.Column)
		}
		if len(e.Problems) > 0 {
			b.WriteString("\nproblems: ")
			b.Write(e.Problems)
		}
		b.WriteByte('\n')
	}
	if len(res.Logs) > 0 {
		b.WriteString("console:\n")
		for _, l := range res.Logs {
			fmt.Fprintf(&b, "[%s] %s\n", l.Level, l.Message)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
