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
	steps []memory.PlanStep
}

// maxPlanSteps bounds a plan.
const maxPlanSteps = 1000

// records reports whether a call of t is recorded rather than made.
func (p *planRecorder) records(t *tools.Tool) bool {
	return p != nil && t != nil && !t.Annotations.ReadOnly && t.Source == "" && !t.Runtime
}

// add records a write and returns the placeholder the program receives.
func (p *planRecorder) add(tool string, args, provenance json.RawMessage) (json.RawMessage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.steps) >= maxPlanSteps {
		return nil, tools.Errorf("plan_too_large", "a plan holds at most %d writes; plan fewer per run", maxPlanSteps)
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	p.steps = append(p.steps, memory.PlanStep{Tool: tool, Args: append(json.RawMessage(nil), args...), Provenance: provenance})
	return json.RawMessage(fmt.Sprintf(`{"planned":true,"id":%d}`, len(p.steps))), nil
}

func (p *planRecorder) recorded() []memory.PlanStep {
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
	id, saved, err := s.cfg.Store.SavePlan(asCaller(ctx, caller.Principal), memory.SavePlanInput{
		Session: caller.Session, ExecutionID: execID, Steps: steps, TTL: s.plans.TTL,
	})
	if err != nil {
		s.log.Error("save plan", "id", execID, "err", err)
		return rec, "The plan could not be saved; run the program again."
	}
	rec.ID, rec.ExpiresAt = id, &saved.ExpiresAt
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
	p, err := s.cfg.Store.ClaimPlan(asCaller(ctx, caller.Principal), planID, id)
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
	d := &runDispatcher{dispatcher: dispatcher{s: s, caller: caller, local: s.isLocal(ctx), vault: vault}, execID: id}
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
	outcomes := make([]outcome, len(p.Steps))
	results := make([]json.RawMessage, 0, len(p.Steps))
	res := &executor.Result{Status: executor.StatusOK, Logs: []executor.LogLine{}}
	var failed error
	for i, st := range p.Steps {
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
				Message: fmt.Sprintf("step %d of %d (%s) failed, so the %d steps after it did not run: %s", st.Seq, len(p.Steps), st.Tool, len(p.Steps)-st.Seq, msg)}
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
	steps, _ := json.Marshal(outcomes)
	x.Mode, x.planned = "commit", &PlanRecord{ID: planID, Steps: steps}
	x.planHash = memory.PlanIDHash(planID)
	rec, body := s.record(context.WithoutCancel(tools.WithCaller(ctx, caller)), sess, track.settled(), id, x, res, d.runArtifacts())
	s.flush(ctx, sess)
	s.audit.record(auditRecord{exec: executionRecord(id, caller, s.access.of(caller), x, started, res), calls: d.auditCalls(), requests: d.auditRequests()})
	s.log.Info("commit", "id", id, "principal", caller.Principal, "plan_hash", x.planHash, "state", state, "steps", len(p.Steps))
	return rec, body
}

// commitStep makes one step's call as the plan's run would have: tokens
// resolved now, the data-flow rules checked against the sources the step
// recorded, the call audited with the commit.
func (s *Server) commitStep(ctx context.Context, d *runDispatcher, track *tracker, st memory.PlanStep) (json.RawMessage, error) {
	var prov filter.Provenance
	if len(st.Provenance) > 0 {
		if err := json.Unmarshal(st.Provenance, &prov); err != nil {
			return nil, &tools.Error{Code: "plan_altered", Tool: st.Tool, Message: "the step's recorded sources cannot be read"}
		}
	}
	if !prov.IsZero() && track.flow != nil {
		resolved, err := resolveTokens(ctx, d.vault, st.Tool, st.Args)
		if err != nil {
			return nil, err
		}
		// The values in the arguments came from these sources.
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
