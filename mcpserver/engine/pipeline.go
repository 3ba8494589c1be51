package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// The run pipeline: admit (the surface: mcpserver's execute_code) → run
// → filter → store → audit → record. Execute is everything after
// admission, shared by execute_code and the exec command; a commit
// (commit.go) shares its beginning (newRun) and its end (finish).

// Execution is one program to run through Execute, or a plan to commit
// through Commit.
type Execution struct {
	// Caller is who the run is for: its principal, session and scopes.
	Caller tools.Caller
	// Local says the caller is the local user over stdio, whom the rate
	// limits spare unless Limits.Stdio says otherwise.
	Local bool

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
	// Resume, when set, says the request can take input_required (protocol
	// 2026-07-28): a run that needs the client stops and ends with
	// Record.Input, and a retry resumes it (mrtr.go).
	Resume *Resume

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
func (e *Engine) Execute(ctx context.Context, x Execution) (*Record, []byte) {
	id, started := newExecutionID(), time.Now()
	ctx, span := startRun(ctx, e.tracer, id, x.Language, x.Code)
	run, sess := e.newRun(ctx, id, x)
	defer run.flowKeep.release()
	run.purpose = x.Purpose
	if x.Mode == ModePlan {
		if e.cfg.Store == nil {
			return e.RefusedRecord(KindNoStore, "plans need the store (memory.path); this server runs without one")
		}
		run.plan = &planRecorder{}
	}
	if x.Resume != nil {
		var err error
		if run.resume, err = e.startResume(ctx, x, run); err != nil {
			return e.refusedResume(err)
		}
	}
	e.filterStreams(&x, run)
	run.progress = x.OnProgress
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var pin *executor.Pin
	if run.resume != nil {
		run.resume.stop, pin = cancel, run.resume.pin()
	}
	stop := context.AfterFunc(e.stopping, func() { cancel(context.Cause(e.stopping)) })
	defer stop()
	span.running()
	res := e.exec.Run(runCtx, executor.Request{
		Code:       x.Code,
		Language:   x.Language,
		Timeout:    x.Timeout,
		MaxTimeout: x.MaxTimeout,
		Waited:     x.Waited,
		Dispatcher: programCalls{e.gate, run},
		Functions:  functions(e.reg, x.Caller),
		Owner:      x.Caller.Principal,
		OnLog:      x.OnLog,
		OnProgress: x.OnProgress,
		Pin:        pin,
	})
	run.endHolds()
	var input *InputRequired
	if run.resume != nil {
		var err error
		if input, err = e.endResume(ctx, run, x, res); err != nil {
			e.log.Error("seal request state", "id", id, "err", err)
			res.Status, res.Value = executor.StatusError, nil
			res.Error = &executor.Error{Kind: executor.KindInternal, Message: "the run needs the client's input, and its journal could not be kept: " + err.Error()}
		}
	}
	e.metrics.observeRun(res)
	span.ran(res)
	if run.plan != nil && input == nil {
		var note string
		x.planned, note = e.plans.save(ctx, x.Caller, id, run.plan, res)
		x.planned.note = note
		if x.planned.ID != "" {
			x.planHash = planHash(x.planned.ID)
		}
	}
	rec, body := e.finish(ctx, run, sess, x, started, res)
	rec.Input = input
	if e.log.Enabled(ctx, slog.LevelInfo) { // its attributes cost a hash and a dozen allocations
		e.log.Info("run", "id", id, "principal", x.Caller.Principal, "session_hash", SessionHash(x.Caller.Session), "status", res.Status, "kind", errorKind(res),
			"ms", res.Telemetry.DurationMS, "calls", res.Telemetry.ToolCalls, "code_bytes", len(x.Code), "returned_bytes", len(body))
	}
	span.end(body)
	return rec, body
}

// newRun opens the run id for x: its caller's session, whose tokens its
// calls resolve, and a data flow of its own, which follows what its calls
// return.
// What the flow keeps is held for the run (flowKeep): release run.flowKeep
// once the run is over.
func (e *Engine) newRun(ctx context.Context, id string, x Execution) (*Run, *Session) {
	sess, err := e.sessions.get(x.Caller.Principal, x.Caller.Session)
	if err != nil {
		e.log.Error("session", "err", err)
	}
	var vault *filter.Vault
	if sess != nil {
		vault = sess.vault
	}
	run := &Run{ID: id, Caller: x.Caller, Local: x.Local, vault: vault, log: newRunLog(id)}
	run.flowKeep = e.results.keepFlow(ctx, run, e.exec.Config().MaxTimeout)
	flow, err := e.filter.NewFlow(filter.FlowOptions{Rules: e.cfg.Rules, Match: e.reg.MatchName, Keep: run.flowKeep.hold})
	if err != nil {
		e.log.Error("flow", "err", err) // the rules were checked when the server was made
	}
	run.flow = &tracker{flow: flow, log: e.log}
	return run, sess
}

// filterStreams passes what the program streams as it runs — console
// lines and progress reports, x.OnLog and x.OnProgress — through the
// filter, as its record will be.
func (e *Engine) filterStreams(x *Execution, run *Run) {
	textOpts := filter.Options{Vault: run.vault, Flow: run.flow.flow}
	if x.OnLog != nil {
		onLog := x.OnLog
		x.OnLog = func(l executor.LogLine) {
			// A line may print a value a tool just returned; none is
			// streamed once the flow is short of one (flow.go), from a
			// goroutine of the executor's that must not panic.
			if !run.flow.wait() {
				return
			}
			l.Message = filterText(e.filter, l.Message, maxStreamedText, textOpts)
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
			if !run.flow.wait() {
				return
			}
			onProgress(filterText(e.filter, message, maxStreamedText, textOpts), fraction)
		}
	}
}

// finish closes a run: its record, from what the filter lets through
// (record), the tokens its session minted written through to the shared
// store, and its audit record.
func (e *Engine) finish(ctx context.Context, run *Run, sess *Session, x Execution, started time.Time, res *executor.Result) (*Record, []byte) {
	var steps json.RawMessage
	if x.planned != nil {
		steps = x.planned.Steps
	}
	release, findings := e.holdOutput(ctx, run, res, steps)
	defer release()
	rec, body := e.record(context.WithoutCancel(tools.WithCaller(ctx, run.Caller)), sess, run.settled(), run.ID, x, res, run.log.runArtifacts(), findings)
	e.Flush(ctx, sess)
	exec := executionRecord(run.ID, run.Caller, e.access.of(run.Caller), x, started, res)
	if rec.Error != nil {
		// The audit log keeps the error as the record shows it: filtered
		// and cut, never what the program threw (issue 19, H8).
		exec.ErrorMessage = rec.Error.Message
	}
	e.audit.record(auditRecord{exec: exec, calls: run.log.auditCalls(), requests: run.log.auditRequests()})
	return rec, body
}

// RefusedRecord is the record of a request that never ran, and its
// serialization.
func (e *Engine) RefusedRecord(kind executor.Kind, msg string) (*Record, []byte) {
	rec := &Record{Status: executor.StatusError, Error: &RunError{Kind: kind, Message: msg}}
	return rec, finishRecord(rec, e.budget, nil)
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

// record runs the output filter over a run, keeps the whole result when
// the model gets less than all of it, and builds the record within the
// response budget. findings, when set, holds the findings of the run's
// output (holdOutput); a refusal fails the run.
func (e *Engine) record(ctx context.Context, sess *Session, flow *filter.Flow, execID string, x Execution, res *executor.Result, arts []tools.Artifact, findings filter.FindingsHold) (*Record, []byte) {
	budget := e.budget
	if x.BudgetBytes > 0 {
		budget = min(x.BudgetBytes, e.maxBudget)
	}
	opts := filter.Options{Flow: flow, Budget: budget, Details: x.Details}
	if sess != nil {
		opts.Vault = sess.vault
	}
	view := e.reg.View(tools.CallerFrom(ctx))
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
	held := opts
	held.Findings = findings
	if x.planned != nil {
		plan, err := e.plans.show(x.planned, held)
		if err != nil {
			// Its steps' findings cost more than the run may hold.
			fail(res, heldOutput(err))
			rec.Status = res.Status
		} else {
			rec.Plan, rec.Note = plan, x.planned.note
		}
	}
	// Tool names are the program's to choose: an unknown one is text
	// like any other.
	for i := range rec.Calls {
		rec.Calls[i].Tool = e.filterToolName(view, rec.Calls[i].Tool, opts)
	}
	if x.Details {
		rec.Trace = res.Calls
		for i := range rec.Trace {
			rec.Trace[i].Tool = e.filterToolName(view, rec.Trace[i].Tool, opts)
		}
	}

	lines := make([]string, len(res.Logs))
	for i, l := range res.Logs {
		lines[i] = l.Message
	}
	fspan := startFilter(ctx, e.tracer, res)
	out, err := e.filter.Apply(filter.Input{Result: res.Value, Logs: lines}, held)
	var full json.RawMessage
	var stopped *filter.FindingsError
	if errors.As(err, &stopped) {
		// Its findings cost more than the run may hold: the run fails,
		// showing nothing of its output.
		e.log.Info("filter stopped", "id", execID, "findings", stopped.Findings)
		endFilter(fspan, nil, err)
		fail(res, heldOutput(err))
		rec.Status, rec.Result, rec.Logs = res.Status, json.RawMessage("null"), nil
	} else if err != nil {
		// The executor only returns valid JSON; a failure here is ours.
		e.log.Error("filter", "id", execID, "err", err)
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
			e.metrics.findings.WithLabelValues(string(class)).Add(float64(n))
		}
		if res.Error == nil {
			rec.Result = out.Limited
			if out.Compact != "" {
				rec.Result, rec.Table = nil, out.Compact
			}
		}
	}
	if err := res.Error; err != nil {
		rec.Error = e.runError(view, err, budget, opts, x.Details)
	}

	body := finishRecord(rec, budget, full)
	if rec.Filter != nil && rec.Filter.Cut && e.cfg.Store != nil && len(full) > 0 {
		if uri := e.storeResult(ctx, execID, full, flow); uri != "" {
			rec.ResultURI = uri
			rec.Note = cutNote(rec, uri)
			body = finishRecord(rec, budget, full)
		}
	}
	if rec.Filter != nil && rec.Filter.Tokenized > 0 && len(body)+len(tokenNote) < budget {
		rec.Note = joinNotes(rec.Note, tokenNote)
		body = finishRecord(rec, budget, full)
	}
	e.metrics.bytesToModel.Add(float64(len(body)))
	if sess != nil {
		sess.add(rec)
	}
	return rec, body
}

// runError is the run's error as the model reads it: every string the
// program could have put into it is filtered and cut to its share of the
// budget.
func (e *Engine) runError(view *tools.View, failure *executor.Error, budget int, opts filter.Options, details bool) *RunError {
	re := &RunError{
		Kind:    failure.Kind,
		Message: filterText(e.filter, failure.Message, budget/2, opts),
		Line:    failure.Line,
		Column:  failure.Column,
		Tool:    e.filterToolName(view, failure.Tool, opts),
		Code:    filterText(e.filter, failure.Code, 64, opts),
	}
	if len(failure.Problems) > 0 {
		p := filterText(e.filter, string(failure.Problems), budget/4, opts)
		if json.Valid([]byte(p)) {
			re.Problems = json.RawMessage(p)
		} else {
			b, _ := json.Marshal(p)
			re.Problems = b
		}
	}
	if details {
		re.Stack = filterText(e.filter, failure.Stack, budget/4, opts)
	}
	return re
}

// filterToolName returns name when the caller's catalogue has it, and
// otherwise filters it as text: the program chose it.
func (e *Engine) filterToolName(view *tools.View, name string, opts filter.Options) string {
	if name == "" || name == "(other tools)" {
		return name
	}
	if _, ok := view.Get(name); ok {
		return name
	}
	return filterText(e.filter, name, 128, opts)
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
func (e *Engine) storeResult(ctx context.Context, execID string, full json.RawMessage, flow *filter.Flow) string {
	in := memory.PutResultInput{ExecutionID: execID, Data: full}
	if flow != nil {
		if p := flow.Provenance(full); !p.IsZero() {
			in.Provenance, _ = json.Marshal(p)
		}
	}
	start := time.Now()
	span := startStore(ctx, e.tracer, len(full))
	info, err := e.cfg.Store.PutResult(ctx, in)
	e.metrics.ObserveStore("put_result", time.Since(start))
	endStore(span, err)
	if err != nil {
		e.log.Error("store result", "id", execID, "err", err)
		return ""
	}
	return ResultsPrefix + info.ID
}

// ResultsPrefix is the URI prefix of stored results, which the record of
// a cut result names (mcpserver serves them as resources).
const ResultsPrefix = "codecell://results/"

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

// auditStatus is the status word the audit log keeps for a run.
func auditStatus(res *executor.Result) (status, kind, msg string) {
	if res.Error == nil {
		return "ok", "", ""
	}
	return "error", string(res.Error.Kind), res.Error.Message
}

// executionRecord builds the audit record of a finished run. Runs are
// recorded once, when they end (each write is a transaction; two per run
// halved the throughput the store allows). It names the caller's
// toolset, ts.
func executionRecord(id string, caller tools.Caller, ts callerToolset, x Execution, started time.Time, res *executor.Result) memory.Execution {
	lang := string(x.Language)
	if lang == "" {
		lang = string(executor.JavaScript)
	}
	e := memory.Execution{
		ID:        id,
		Principal: caller.Principal,
		Session:   caller.Session,
		Language:  lang,
		Code:      x.Code,
		StartedAt: started,

		Toolset:            ts.Key,
		ToolsetDescription: ts.desc,
	}
	e.Status, e.ErrorKind, e.ErrorMessage = auditStatus(res)
	e.Duration = time.Duration(res.Telemetry.DurationMS * float64(time.Millisecond))
	e.ToolCalls = res.Telemetry.ToolCalls
	e.ResultBytes = int64(res.Telemetry.ResultBytes)
	if x.Mode != "run" {
		e.Mode = x.Mode
	}
	e.PlanHash = x.planHash
	return e
}
