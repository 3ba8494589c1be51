package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Dry runs. execute_code {mode: "plan"} runs the program with every call
// of a tool that is not annotated read-only recorded instead of made: the
// program receives {planned: true, id: <step>} and reads still run for
// real. The recorded writes — the plan — are saved in the store, and the
// record shows them, filtered, with the plan's id. execute_code {plan_id}
// then makes exactly those calls, in order,
// once, as the principal that planned them, stopping at the first
// failure.
//
// Skills run in a plan (their own writes are recorded); so do the
// programs' runtime tools (cache, llm, approval), which change nothing
// outside.
//
// What a commit checks: the plan is the caller's, unexpired, not
// committed before and unaltered (ClaimPlan, in one transaction). Each
// step's arguments were checked by the data-flow rules when the step was
// recorded, against everything the plan's run had read; at commit the
// tokens in them are resolved again (under the exfiltration rules) and
// the resolved arguments are checked again, against the sources the step
// recorded, so rules still hold if the configuration changed since.

// ModePlan is the execute_code mode of a dry run.
const ModePlan = "plan"

// Error kinds of commits.
const (
	KindPlanNotFound  executor.Kind = "plan_not_found"
	KindPlanExpired   executor.Kind = "plan_expired"
	KindPlanCommitted executor.Kind = "plan_committed"
	KindPlanAltered   executor.Kind = "plan_altered"
	// KindPlanStepFailed: a step of a commit failed; the steps after it
	// did not run.
	KindPlanStepFailed executor.Kind = "plan_step_failed"
	// KindNoStore: plans need the store, and the server has none.
	KindNoStore executor.Kind = "no_store"
)

// PlanConfig configures dry runs.
type PlanConfig struct {
	// TTL is how long a plan may be committed; default 1 h.
	TTL time.Duration
}

func (c PlanConfig) withDefaults() PlanConfig {
	if c.TTL <= 0 {
		c.TTL = time.Hour
	}
	return c
}

// PlanRecord is a plan as the record shows it: after a dry run, its id,
// expiry and intended writes; after a commit, each step's outcome.
type PlanRecord struct {
	ID        string     `json:"plan_id,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Steps are the writes, filtered as any output:
	// [{step, tool, args}] after a dry run, [{step, tool, status,
	// error_code?}] after a commit, status ok, error or not_run.
	Steps json.RawMessage `json:"steps"`
	// note is said in the record's note.
	note string
}

// planRecorder collects a dry run's writes, nested skills' included.
type planRecorder struct {
	mu    sync.Mutex
	steps []plannedStep
}

// plannedStep is a recorded write, with what the run knew of the secrets
// in its arguments: the commit's outputs hide them as the run's would
// have (filter.Flow.KnownIn).
type plannedStep struct {
	memory.PlanStep
	known []filter.Known
}

// maxPlanSteps bounds a plan.
const maxPlanSteps = 1000

// records reports whether a call of t is recorded rather than made: any
// call of a tool not known to be read-only (tools.Annotations.
// KnownReadOnly), except skills, whose own calls are recorded, the
// runtime's tools, which change nothing outside, and helpers, whose
// calls come through the gate each on its own.
func (p *planRecorder) records(t *tools.Tool) bool {
	return p != nil && t != nil && !t.Annotations.KnownReadOnly() && t.Source == "" && !t.Runtime && !t.Gated
}

// add records a write and returns the placeholder the program receives.
func (p *planRecorder) add(tool string, args, provenance json.RawMessage, known []filter.Known) (json.RawMessage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.steps) >= maxPlanSteps {
		return nil, tools.Errorf("plan_too_large", "a plan holds at most %d writes; plan fewer per run", maxPlanSteps)
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	p.steps = append(p.steps, plannedStep{PlanStep: memory.PlanStep{Tool: tool, Args: append(json.RawMessage(nil), args...), Provenance: provenance}, known: known})
	return json.RawMessage(fmt.Sprintf(`{"planned":true,"id":%d}`, len(p.steps))), nil
}

func (p *planRecorder) recorded() []plannedStep {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.steps
}

// savePlan saves a finished dry run's writes and describes them for the
// record; it returns nil when the run failed (nothing is saved).
func (s *Server) savePlan(ctx context.Context, caller tools.Caller, execID string, p *planRecorder, res *executor.Result) (*PlanRecord, string) {
	steps := p.recorded()
	rec := &PlanRecord{}
	type shown struct {
		Step int             `json:"step"`
		Tool string          `json:"tool"`
		Args json.RawMessage `json:"args"`
	}
	list := make([]shown, len(steps))
	for i, st := range steps {
		list[i] = shown{Step: i + 1, Tool: st.Tool, Args: st.Args}
	}
	rec.Steps, _ = json.Marshal(list)
	if res.Status != executor.StatusOK {
		return rec, "The program failed, so no plan was saved."
	}
	if len(steps) == 0 {
		return rec, "The program made no writes: there is nothing to commit."
	}
	sealed, secret, err := s.planSeal.seal(steps)
	if err != nil {
		s.log.Error("seal plan", "id", execID, "err", err)
		return rec, "The plan could not be saved; run the program again."
	}
	id, saved, err := s.cfg.Store.SavePlan(asCaller(ctx, caller.Principal), memory.SavePlanInput{
		Session: caller.Session, ExecutionID: execID, Steps: sealed, TTL: s.plans.TTL,
	})
	if err != nil {
		s.log.Error("save plan", "id", execID, "err", err)
		return rec, "The plan could not be saved; run the program again."
	}
	rec.ID, rec.ExpiresAt = planClientID(id, secret), &saved.ExpiresAt
	return rec, fmt.Sprintf("Nothing was written: steps lists the %d writes the program would make. Commit exactly these, once, with execute_code {plan_id} before expires_at.", len(steps))
}

// filterPlan passes a plan's steps through the filter, as the result is:
// values the run read from tools and secrets become tokens, and the steps
// keep to a share of the budget.
func (s *Server) filterPlan(p *PlanRecord, opts filter.Options) *PlanRecord {
	out := *p
	opts.Budget = max(opts.Budget/2, filter.MinBudget)
	f, err := s.filter.Apply(filter.Input{Result: p.Steps}, opts)
	if err != nil {
		out.Steps = json.RawMessage("[]")
		return &out
	}
	out.Steps = f.Limited
	return &out
}

// Commit runs the writes of the caller's plan planID, once, and returns
// the record — the result is the list of the steps' results — and its
// serialization.
func (s *Server) Commit(ctx context.Context, planID string, x Execution) (*Record, []byte) {
	if s.cfg.Store == nil {
		return s.refusedRecord(KindNoStore, "plans need the store (memory.path); this server runs without one")
	}
	caller := s.caller(ctx)
	id := newExecutionID()
	started := time.Now()
	clientID := planID
	planID, secret, whole := splitPlanID(clientID)
	var p memory.Plan
	var err error
	if whole {
		p, err = s.cfg.Store.ClaimPlan(asCaller(ctx, caller.Principal), planID, id)
	} else {
		// The store's id alone does not commit a plan: its secret opens
		// the steps.
		err = memory.PlanNotFound(planID)
	}
	var steps []plannedStep
	if err == nil {
		if steps, err = s.planSeal.open(p.Steps, secret); err != nil {
			s.log.Warn("a plan's steps do not open", "principal", caller.Principal, "plan_hash", memory.PlanIDHash(planID))
			if ferr := s.cfg.Store.FinishPlan(asCaller(ctx, caller.Principal), planID, memory.PlanFailed); ferr != nil {
				s.log.Error("finish plan", "id", id, "err", ferr)
			}
			err = &tools.Error{Code: memory.CodePlanAltered, Message: planSealError(planID)}
		}
	}
	if err != nil {
		kind := KindPlanNotFound
		switch tools.CodeOf(err) {
		case memory.CodePlanExpired:
			kind = KindPlanExpired
		case memory.CodePlanCommitted:
			kind = KindPlanCommitted
		case memory.CodePlanAltered:
			kind = KindPlanAltered
		case tools.CodeNotFound:
		default:
			s.log.Error("claim plan", "principal", caller.Principal, "err", err)
			return s.refusedRecord(executor.KindInternal, "the plan could not be read; try again")
		}
		var te *tools.Error
		msg := err.Error()
		if errors.As(err, &te) {
			msg = te.Message
		}
		// A refused commit is audited too: a plan committed twice, or
		// tried by another principal, is what the log is for.
		x.Mode, x.planHash = "commit", memory.PlanIDHash(planID)
		refused := &executor.Result{Status: executor.StatusError, Error: &executor.Error{Kind: kind, Message: msg}}
		s.audit.record(auditRecord{exec: executionRecord(id, caller, s.access.of(caller), x, started, refused)})
		return s.refusedRecord(kind, msg)
	}
	sess, err := s.sessions.get(caller.Principal, caller.Session)
	if err != nil {
		s.log.Error("session", "err", err)
	}
	var vault *filter.Vault
	if sess != nil {
		vault = sess.vault
	}
	d := newRunDispatcher(dispatcher{s: s, caller: caller, local: s.isLocal(ctx), vault: vault}, id)
	// What the steps return is observed like any run's tool results.
	flow, err := s.filter.NewFlow(filter.FlowOptions{Rules: s.cfg.Rules})
	if err != nil {
		s.log.Error("flow", "err", err)
	}
	track := &tracker{flow: flow}

	type outcome struct {
		Step      int    `json:"step"`
		Tool      string `json:"tool"`
		Status    string `json:"status"`
		ErrorCode string `json:"error_code,omitempty"`
	}
	outcomes := make([]outcome, len(steps))
	results := make([]json.RawMessage, 0, len(steps))
	res := &executor.Result{Status: executor.StatusOK, Logs: []executor.LogLine{}}
	var failed error
	for i, st := range steps {
		outcomes[i] = outcome{Step: st.Seq, Tool: st.Tool, Status: memory.StepNotRun}
		if failed != nil {
			continue
		}
		start := time.Now()
		out, err := s.commitStep(ctx, d, track, st)
		cr := executor.CallRecord{Tool: st.Tool, OK: err == nil, DurationMS: float64(time.Since(start).Microseconds()) / 1000, ArgsBytes: len(st.Args), ResultBytes: len(out)}
		status, code := memory.StepOK, ""
		if err != nil {
			status, code = memory.StepError, errorCode(err)
			cr.Code, failed = code, err
			msg := err.Error()
			var te *tools.Error
			if errors.As(err, &te) {
				msg = te.Message
			}
			res.Error = &executor.Error{Kind: KindPlanStepFailed, Tool: st.Tool, Code: code,
				Message: fmt.Sprintf("step %d of %d (%s) failed, so the %d steps after it did not run: %s", st.Seq, len(steps), st.Tool, len(steps)-st.Seq, msg)}
		} else {
			results = append(results, out)
		}
		outcomes[i].Status, outcomes[i].ErrorCode = status, code
		res.Calls = append(res.Calls, cr)
		res.Telemetry.ToolCalls++
		res.Telemetry.BytesFromTools += len(out)
		if err := s.cfg.Store.FinishPlanStep(asCaller(ctx, caller.Principal), planID, st.Seq, status, code); err != nil {
			s.log.Error("finish plan step", "id", id, "step", st.Seq, "err", err)
		}
	}
	state := memory.PlanCommitted
	if failed != nil {
		state = memory.PlanFailed
		res.Status = executor.StatusError
		res.Value = json.RawMessage("null")
	} else {
		res.Value, _ = json.Marshal(results)
	}
	if err := s.cfg.Store.FinishPlan(asCaller(ctx, caller.Principal), planID, state); err != nil {
		s.log.Error("finish plan", "id", id, "err", err)
	}
	res.Telemetry.DurationMS = float64(time.Since(started).Microseconds()) / 1000
	res.Telemetry.ResultBytes = len(res.Value)
	shown, _ := json.Marshal(outcomes)
	x.Mode, x.planned = "commit", &PlanRecord{ID: clientID, Steps: shown}
	x.planHash = memory.PlanIDHash(planID)
	rec, body := s.record(context.WithoutCancel(tools.WithCaller(ctx, caller)), sess, track.settled(), id, x, res, d.runArtifacts())
	s.flush(ctx, sess)
	s.audit.record(auditRecord{exec: executionRecord(id, caller, s.access.of(caller), x, started, res), calls: d.auditCalls(), requests: d.auditRequests()})
	s.log.Info("commit", "id", id, "principal", caller.Principal, "plan_hash", x.planHash, "state", state, "steps", len(steps))
	return rec, body
}

// commitStep makes one step's call as the plan's run would have: tokens
// resolved now, the data-flow rules checked against the sources the step
// recorded, the secrets the dry run knew in its arguments hidden in what
// the commit shows, the call audited with the commit.
func (s *Server) commitStep(ctx context.Context, d *runDispatcher, track *tracker, st plannedStep) (json.RawMessage, error) {
	var prov filter.Provenance
	if len(st.Provenance) > 0 {
		if err := json.Unmarshal(st.Provenance, &prov); err != nil {
			return nil, &tools.Error{Code: "plan_altered", Tool: st.Tool, Message: "the step's recorded sources cannot be read"}
		}
	}
	if track.flow != nil {
		resolved, err := resolveTokens(ctx, d.vault, st.Tool, st.Args)
		if err != nil {
			return nil, err
		}
		// The values in the arguments came from these sources, and are
		// what the dry run's flow knew them to be.
		track.flow.ObserveKnown("plan", st.known, prov)
		track.flow.Observe("plan", resolved, prov)
	}
	d.track = track
	return d.Call(ctx, executor.Call{Name: st.Tool, Args: st.Args})
}

// refusedRecord is the record of a request that never ran.
func (s *Server) refusedRecord(kind executor.Kind, msg string) (*Record, []byte) {
	rec := &Record{Status: executor.StatusError, Error: &RunError{Kind: kind, Message: msg}}
	return rec, finishRecord(rec, s.budget, nil)
}

// planHash names a plan, by the id its client holds, in the audit log:
// the hash of the store's id, as the store keeps it.
func planHash(clientID string) string {
	storeID, _, _ := splitPlanID(clientID)
	return memory.PlanIDHash(storeID)
}

// planModeError checks an execute_code request's mode and plan_id.
func planModeError(mode, planID, code string) string {
	switch {
	case mode != "" && mode != ModePlan && mode != "run":
		return fmt.Sprintf("mode %q: want \"run\" (default) or \"plan\"", mode)
	case planID != "" && (strings.TrimSpace(code) != "" || mode == ModePlan):
		return "send either code (with mode \"plan\" for a dry run) or plan_id (to commit a plan), not both"
	case planID == "" && strings.TrimSpace(code) == "":
		return "missing property 'code': send code to run, or plan_id to commit a plan"
	}
	return ""
}
