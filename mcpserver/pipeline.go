package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// The run pipeline: admit (execute_code.go) → run → filter → store →
// audit → record. Execute is everything after admission, shared by
// execute_code and the exec command.

// Execution is one program to run through Execute.
type Execution struct {
	Code     string
	Language executor.Language
	Timeout  time.Duration
	// MaxTimeout, when positive, caps Timeout in place of the sandbox's
	// max timeout: a task's run may last longer.
	MaxTimeout time.Duration
	// Waited is how long the request waited for admission before
	// Execute: the executor's queue wait counts it (see
	// executor.Request.Waited).
	Waited time.Duration
	// BudgetBytes overrides the response budget, up to its cap: the
	// serialized record stays within it.
	BudgetBytes int
	// Details asks for the call trace, the filter's findings one by one
	// and the error's stack in the record.
	Details bool
	// Purpose says what the run is for, shown to the user when a call
	// needs their approval.
	Purpose string
	// OnLog and OnProgress, when set, see console lines and progress
	// reports as the program makes them, filtered and budgeted.
	OnLog      func(executor.LogLine)
	OnProgress func(message string, fraction float64)
	// Mode "plan" makes the run a dry run (plan.go); "" or "run" runs it.
	Mode string

	// planned is the plan the record shows; planHash names it in the
	// audit log.
	planned  *PlanRecord
	planHash string
}

// Execute runs a program as execute_code does, for the caller that ctx
// carries: tokens in its tool calls resolve against the caller's session,
// its output passes the filter, a cut result is stored, and the run is
// audited. It returns the record and its serialization, the text the
// model reads.
func (s *Server) Execute(ctx context.Context, x Execution) (*Record, []byte) {
	caller := s.caller(ctx)
	sess, err := s.sessions.get(caller.Principal, caller.Session)
	if err != nil {
		s.log.Error("session", "err", err)
	}
	var vault *filter.Vault
	if sess != nil {
		vault = sess.vault
	}
	id := newExecutionID()
	started := time.Now()
	ctx, span := s.startRun(ctx, id, x)
	flow, err := s.filter.NewFlow(filter.FlowOptions{Rules: s.cfg.Rules})
	if err != nil {
		s.log.Error("flow", "err", err) // the rules were checked when the server was made
	}
	track := &tracker{flow: flow}
	d := newRunDispatcher(dispatcher{s: s, caller: caller, local: s.isLocal(ctx), vault: vault, track: track}, id)
	if x.Mode == ModePlan {
		if s.cfg.Store == nil {
			return s.refusedRecord(KindNoStore, "plans need the store (memory.path); this server runs without one")
		}
		d.plan = &planRecorder{}
	}
	textOpts := filter.Options{Vault: vault, Flow: flow}
	if x.OnLog != nil {
		onLog := x.OnLog
		x.OnLog = func(l executor.LogLine) {
			track.settled() // a line may print a value a tool just returned
			l.Message = s.filterText(l.Message, maxStreamedText, textOpts)
			onLog(l)
		}
	}
	if x.OnProgress != nil {
		onProgress := x.OnProgress
		var mu sync.Mutex // the program and its tools (upstream servers) report
		sent := 0
		var last time.Time
		x.OnProgress = func(message string, fraction float64) {
			// A program may report progress in a tight loop: pass on at
			// most maxProgress reports, none closer than progressGap apart
			// unless it reports completion.
			mu.Lock()
			defer mu.Unlock()
			now := time.Now()
			if sent >= maxProgress || (fraction != 1 && now.Sub(last) < progressGap) {
				return
			}
			sent++
			last = now
			track.settled()
			onProgress(s.filterText(message, maxStreamedText, textOpts), fraction)
		}
	}
	d.progress = x.OnProgress
	d.purpose = x.Purpose
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.stopping, func() { cancel(context.Cause(s.stopping)) })
	defer stop()
	span.running()
	res := s.exec.Run(runCtx, executor.Request{
		Code:       x.Code,
		Language:   x.Language,
		Timeout:    x.Timeout,
		MaxTimeout: x.MaxTimeout,
		Waited:     x.Waited,
		Dispatcher: d,
		Functions:  s.functions(caller),
		Owner:      caller.Principal,
		OnLog:      x.OnLog,
		OnProgress: x.OnProgress,
	})
	s.metrics.observeRun(res)
	span.ran(res)
	if d.plan != nil {
		var note string
		x.planned, note = s.savePlan(ctx, caller, id, d.plan, res)
		x.planned.note = note
		if x.planned.ID != "" {
			x.planHash = planHash(x.planned.ID)
		}
	}
	rec, body := s.record(context.WithoutCancel(tools.WithCaller(ctx, caller)), sess, track.settled(), id, x, res, d.runArtifacts())
	s.flush(ctx, sess)
	s.audit.record(auditRecord{exec: executionRecord(id, caller, s.access.of(caller), x, started, res), calls: d.auditCalls(), requests: d.auditRequests()})
	s.log.Info("run", "id", id, "principal", caller.Principal, "session_hash", sessionHash(caller.Session), "status", res.Status, "kind", errorKind(res),
		"ms", res.Telemetry.DurationMS, "calls", res.Telemetry.ToolCalls, "code_bytes", len(x.Code), "returned_bytes", len(body))
	span.end(body)
	return rec, body
}

// maxStreamedText bounds one console line or progress message streamed
// as a notification; maxProgress and progressGap bound a run's progress
// notifications.
const (
	maxStreamedText = 1 << 10
	maxProgress     = 500
	progressGap     = 10 * time.Millisecond
)

func errorKind(res *executor.Result) executor.Kind {
	if res.Error == nil {
		return ""
	}
	return res.Error.Kind
}

// filterText passes one string the model will read through the filter
// and cuts it to budget bytes.
func (s *Server) filterText(text string, budget int, opts filter.Options) string {
	if text == "" {
		return ""
	}
	opts.Budget = budget
	return s.filter.ApplyText(text, opts).Text
}

// record runs the output filter over a run, keeps the whole result when
// the model gets less than all of it, and builds the record within the
// response budget.
func (s *Server) record(ctx context.Context, sess *session, flow *filter.Flow, execID string, x Execution, res *executor.Result, arts []tools.Artifact) (*Record, []byte) {
	budget := s.budget
	if x.BudgetBytes > 0 {
		budget = min(x.BudgetBytes, s.maxBudget)
	}
	opts := filter.Options{Flow: flow, Budget: budget, Details: x.Details}
	if sess != nil {
		opts.Vault = sess.vault
	}
	view := s.reg.View(tools.CallerFrom(ctx))
	rec := &Record{
		Status:    res.Status,
		Artifacts: arts,
		Calls:     summarizeCalls(res.Calls),
		Stats: Stats{
			DurationMS:     res.Telemetry.DurationMS,
			QueueWaitMS:    res.Telemetry.QueueWaitMS,
			ToolCalls:      res.Telemetry.ToolCalls,
			FromToolsBytes: res.Telemetry.BytesFromTools,
		},
	}
	if x.Details || anyFailed(res.Calls) {
		rec.Calls = summarizeCalls(res.Calls)
	}
	for _, c := range res.Calls {
		if c.Cached {
			rec.Stats.CachedCalls++
		}
	}
	if x.planned != nil {
		rec.Plan = s.filterPlan(x.planned, opts)
		rec.Note = x.planned.note
	}
	// Tool names are the program's to choose: an unknown one is text
	// like any other.
	for i := range rec.Calls {
		rec.Calls[i].Tool = s.filterToolName(view, rec.Calls[i].Tool, opts)
	}
	if x.Details {
		rec.Trace = res.Calls
		for i := range rec.Trace {
			rec.Trace[i].Tool = s.filterToolName(view, rec.Trace[i].Tool, opts)
		}
	}

	lines := make([]string, len(res.Logs))
	for i, l := range res.Logs {
		lines[i] = l.Message
	}
	fspan := s.startFilter(ctx, res)
	out, err := s.filter.Apply(filter.Input{Result: res.Value, Logs: lines}, opts)
	var full json.RawMessage
	if err != nil {
		// The executor only returns valid JSON; a failure here is ours.
		s.log.Error("filter", "id", execID, "err", err)
		endFilter(fspan, nil, err)
		rec.Result = json.RawMessage("null")
	} else {
		full = out.Full
		if len(out.Logs) > 0 {
			rec.Logs = make([]executor.LogLine, len(out.Logs))
			for i, msg := range out.Logs {
				rec.Logs[i] = executor.LogLine{Level: res.Logs[i].Level, Message: msg}
			}
		}
		rec.Filter = summarizeFilter(&out.Report, x.Details)
		endFilter(fspan, rec.Filter, nil)
		for class, n := range out.Report.Findings {
			s.metrics.findings.WithLabelValues(string(class)).Add(float64(n))
		}
		if res.Error == nil {
			rec.Result = out.Limited
			if out.Compact != "" {
				rec.Result, rec.Table = nil, out.Compact
			}
		}
	}
	if e := res.Error; e != nil {
		rec.Error = s.runError(view, e, budget, opts, x.Details)
	}

	body := finishRecord(rec, budget, full)
	if rec.Filter != nil && rec.Filter.Cut && s.cfg.Store != nil && len(full) > 0 {
		if uri := s.storeResult(ctx, execID, full, flow); uri != "" {
			rec.ResultURI = uri
			rec.Note = cutNote(rec, uri)
			body = finishRecord(rec, budget, full)
		}
	}
	if rec.Filter != nil && rec.Filter.Tokenized > 0 && len(body)+len(tokenNote) < budget {
		rec.Note = joinNotes(rec.Note, tokenNote)
		body = finishRecord(rec, budget, full)
	}
	s.metrics.bytesToModel.Add(float64(len(body)))
	if sess != nil {
		sess.add(rec)
	}
	return rec, body
}

// runError is the run's error as the model reads it: every string the
// program could have put into it is filtered and cut to its share of the
// budget.
func (s *Server) runError(view *tools.View, e *executor.Error, budget int, opts filter.Options, details bool) *RunError {
	re := &RunError{
		Kind:    e.Kind,
		Message: s.filterText(e.Message, budget/2, opts),
		Line:    e.Line,
		Column:  e.Column,
		Tool:    s.filterToolName(view, e.Tool, opts),
		Code:    s.filterText(e.Code, 64, opts),
	}
	if len(e.Problems) > 0 {
		p := s.filterText(string(e.Problems), budget/4, opts)
		if json.Valid([]byte(p)) {
			re.Problems = json.RawMessage(p)
		} else {
			b, _ := json.Marshal(p)
			re.Problems = b
		}
	}
	if details {
		re.Stack = s.filterText(e.Stack, budget/4, opts)
	}
	return re
}

// filterToolName returns name when the caller's catalogue has it, and
// otherwise filters it as text: the program chose it.
func (s *Server) filterToolName(view *tools.View, name string, opts filter.Options) string {
	if name == "" || name == "(other tools)" {
		return name
	}
	if _, ok := view.Get(name); ok {
		return name
	}
	return s.filterText(name, 128, opts)
}

func anyFailed(calls []executor.CallRecord) bool {
	for _, c := range calls {
		if !c.OK {
			return true
		}
	}
	return false
}

// summarizeFilter is what the record says of the filter's report: nil
// when it found and cut nothing.
func summarizeFilter(r *filter.Report, details bool) *FilterSummary {
	if len(r.Findings) == 0 && !r.Cut {
		return nil
	}
	f := &FilterSummary{Findings: r.Findings, Tokenized: r.Tokenized, Redacted: r.Redacted, Masked: r.Masked, Cut: r.Cut}
	if r.Cut {
		f.FullBytes = r.FilteredBytes
	}
	if details {
		f.Details = r.Details
	}
	return f
}

// storeResult keeps the whole filtered result and returns its URI, or ""
// when it could not be stored.
func (s *Server) storeResult(ctx context.Context, execID string, full json.RawMessage, flow *filter.Flow) string {
	in := memory.PutResultInput{ExecutionID: execID, Data: full}
	if flow != nil {
		if p := flow.Provenance(full); !p.IsZero() {
			in.Provenance, _ = json.Marshal(p)
		}
	}
	start := time.Now()
	span := s.startStore(ctx, len(full))
	info, err := s.cfg.Store.PutResult(ctx, in)
	s.metrics.observeStore("put_result", time.Since(start))
	endStore(span, err)
	if err != nil {
		s.log.Error("store result", "id", execID, "err", err)
		return ""
	}
	return ResultsPrefix + info.ID
}

const tokenNote = "Values shown as ⟦class:…⟧ are tokens: pass them to tools from a program, and the tools receive the real values."

func cutNote(rec *Record, uri string) string {
	return fmt.Sprintf("The result was cut to fit the response budget (%d bytes in all). Read the whole result as the resource %s (?offset=&length= pages bytes; %s/items?pointer=&offset=&count= pages array items), or return less from the program.", rec.Filter.FullBytes, uri, uri)
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + " " + b
}
