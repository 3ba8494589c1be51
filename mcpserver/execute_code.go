package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
)

const executeCodeDescription = `Run a JavaScript/TypeScript program in a sandbox where catalogue tools are async functions: await github.search_issues({...}). Workflow: read_tools "/manifest.json" for categories, "/{category}/index.json" for tools, "/{category}/{tool}.d.ts" for a signature; then send one program that calls what it needs, filters the data and returns only what you need. The program is an async function body (await, return; else the last expression is the result). Use Promise.all for independent calls. A failed call throws ToolError (.code, .tool). No network, files or timers. Returns result, logs and a call trace; errors say what to fix.`

// executeCodeInput is the input schema of execute_code. Its timeout
// maximum is filled in from the executor's configuration.
const executeCodeInput = `{
	"type": "object",
	"properties": {
		"code": {"type": "string", "minLength": 1, "description": "The program."},
		"language": {"type": "string", "enum": ["javascript", "typescript"], "default": "javascript"},
		"timeout_ms": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Deadline, default %d."},
		"budget_bytes": {"type": "integer", "minimum": 256, "maximum": %d, "description": "Bytes of output, default %d."}
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
		"error": {"type": "object", "required": ["kind", "message"]},
		"logs": {"type": "array", "items": {"type": "object"}},
		"tool_calls": {"type": "array", "items": {"type": "object"}},
		"telemetry": {"type": "object"},
		"filter": {"type": "object"},
		"result_uri": {"type": "string"},
		"ledger": {"type": "object"}
	},
	"required": ["status", "result"]
}`

func (s *Server) executeCodeInputSchema() json.RawMessage {
	cfg := s.exec.Config()
	return json.RawMessage(fmt.Sprintf(executeCodeInput, cfg.MaxTimeout.Milliseconds(), cfg.Timeout.Milliseconds(), s.maxBudget, s.budget))
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
	}
}

type executeCodeArgs struct {
	Code        string `json:"code"`
	Language    string `json:"language"`
	TimeoutMS   int64  `json:"timeout_ms"`
	BudgetBytes int    `json:"budget_bytes"`
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
		Code:        args.Code,
		Language:    executor.Language(args.Language),
		Timeout:     time.Duration(args.TimeoutMS) * time.Millisecond,
		BudgetBytes: args.BudgetBytes,
	}
	notified := s.streamTo(ctx, req, &x)
	rec, text := s.Execute(ctx, x)
	if notified.Load() {
		flushNotifications(ctx)
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(text)},
		StructuredContent: rec,
		IsError:           rec.Status != executor.StatusOK,
	}, nil
}

// Execution is one program to run through Execute.
type Execution struct {
	Code     string
	Language executor.Language
	Timeout  time.Duration
	// BudgetBytes overrides the filter's response budget, up to its cap.
	BudgetBytes int
	// OnLog and OnProgress, when set, see console lines (filtered) and
	// progress reports as the program makes them.
	OnLog      func(executor.LogLine)
	OnProgress func(message string, fraction float64)
}

// Execute runs a program as execute_code does, for the caller that ctx
// carries: tokens in its tool calls resolve against the caller's session,
// its output passes the filter, a cut result is stored, and the run is
// audited. It returns the record and the text for the model. The exec
// command uses it to run programs from the terminal.
func (s *Server) Execute(ctx context.Context, x Execution) (*Record, string) {
	caller := s.caller(ctx)
	sess, err := s.sessions.get(caller.Session)
	if err != nil {
		s.log.Error("session", "err", err)
	}
	var vault *filter.Vault
	if sess != nil {
		vault = sess.vault
	}
	id := newExecutionID()
	started := time.Now()
	org := &origins{}
	d := &runDispatcher{dispatcher: dispatcher{s: s, caller: caller, vault: vault}, execID: id, origins: org}
	onLog := x.OnLog
	if onLog != nil {
		onLog = func(l executor.LogLine) {
			l.Message, _ = s.filter.ApplyText(l.Message, filter.Options{Vault: vault, Origin: org.sources})
			x.OnLog(l)
		}
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.stopping, func() { cancel(context.Cause(s.stopping)) })
	defer stop()
	res := s.exec.Run(runCtx, executor.Request{
		Code:       x.Code,
		Language:   x.Language,
		Timeout:    x.Timeout,
		Dispatcher: d,
		Functions:  s.functions(),
		Owner:      caller.Principal,
		OnLog:      onLog,
		OnProgress: x.OnProgress,
	})
	s.metrics.observeRun(res)
	rec, text := s.finish(context.WithoutCancel(tools.WithCaller(ctx, caller)), sess, org, id, x.BudgetBytes, res)
	d.mu.Lock()
	calls := d.calls
	d.mu.Unlock()
	s.audit.record(auditRecord{exec: executionRecord(id, caller, x, started, res), calls: calls})
	s.log.Info("run", "id", id, "principal", caller.Principal, "session", caller.Session, "status", res.Status, "kind", errorKind(res),
		"ms", res.Telemetry.DurationMS, "calls", res.Telemetry.ToolCalls, "code_bytes", len(x.Code), "returned_bytes", rec.Ledger.ToModelBytes)
	return rec, text
}

func errorKind(res *executor.Result) executor.Kind {
	if res.Error == nil {
		return ""
	}
	return res.Error.Kind
}

func (s *Server) parseExecuteCode(req mcp.CallToolRequest) (executeCodeArgs, error) {
	var a executeCodeArgs
	if err := decodeArgs(s.executeCodeSchema, "execute_code", req, &a); err != nil {
		return a, fmt.Errorf("%w. Send {\"code\": \"...\", \"language\": \"javascript\"|\"typescript\", \"timeout_ms\": n}", err)
	}
	return a, nil
}

// renderRun is the text the model reads: the outcome first, then the
// result or the error, then console output and what the filter did.
func renderRun(rec *Record) string {
	var b strings.Builder
	t := rec.Telemetry
	if rec.Status == executor.StatusOK {
		fmt.Fprintf(&b, "ok (%.1f ms, %s)\n", t.DurationMS, plural(t.ToolCalls, "tool call"))
		b.Write(rec.Value)
		b.WriteByte('\n')
	} else {
		e := rec.Error
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
	writeTail(&b, rec)
	return strings.TrimRight(b.String(), "\n")
}

// writeTail writes the console lines and the filter's notes.
func writeTail(b *strings.Builder, rec *Record) {
	if len(rec.Logs) > 0 {
		b.WriteString("console:\n")
		for _, l := range rec.Logs {
			fmt.Fprintf(b, "[%s] %s\n", l.Level, l.Message)
		}
	}
	f := rec.Filter
	if f == nil {
		return
	}
	if f.Cut {
		fmt.Fprintf(b, "note: the result was cut to %d of its %d bytes", f.ReturnedBytes, f.FilteredBytes)
		if rec.ResultURI != "" {
			fmt.Fprintf(b, "; the full result is the resource %s (page it with ?offset=&length= for bytes, or %s/items?pointer=&offset=&count= for array items), or fetch parts of it again in a program", rec.ResultURI, rec.ResultURI)
		}
		b.WriteString("\n")
	}
	if n := f.Tokenized + f.Redacted + f.Masked; n > 0 {
		fmt.Fprintf(b, "note: %d sensitive values were replaced (%d by tokens such as ⟦email:…⟧, which tools called from a program receive as the real values; %d redacted; %d masked)\n", n, f.Tokenized, f.Redacted, f.Masked)
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
