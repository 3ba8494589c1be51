package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// A commit, in order: the plan is claimed (the caller's, unexpired, not
// committed before: memory's ClaimPlan, one transaction) and its sealed
// steps opened (planseal.go); the steps run through the gate, once, in
// order, as one run of the caller's, stopping at the first failure; and
// the run is finished as any run is (finish: the record, the session's
// tokens, the audit log).

// Commit runs the writes of the caller's plan planID, once, and returns
// the record — the result is the list of the steps' results — and its
// serialization.
func (e *Engine) Commit(ctx context.Context, planID string, x Execution) (*Record, []byte) {
	if e.cfg.Store == nil {
		return e.RefusedRecord(KindNoStore, "plans need the store (memory.path); this server runs without one")
	}
	if x.Resume != nil {
		return e.commitResumable(ctx, planID, x) // protocol 2026-07-28 (commit2026.go)
	}
	id, started := newExecutionID(), time.Now()
	p, err := e.claim(ctx, x.Caller, planID, id)
	x.Mode, x.planHash = "commit", memory.PlanIDHash(p.storeID)
	if err != nil {
		return e.refuseCommit(x, id, started, err)
	}
	run, sess := e.newRun(ctx, id, x)
	defer run.flowKeep.release()
	res, outcomes, state := e.commitSteps(ctx, run, p, started)
	x.planned = &PlanRecord{ID: planID, Steps: outcomes}
	rec, body := e.finish(ctx, run, sess, x, started, res)
	e.log.Info("commit", "id", id, "principal", x.Caller.Principal, "plan_hash", x.planHash, "state", state, "steps", len(p.steps))
	return rec, body
}

// claimedPlan is a plan claimed for a commit, its steps opened.
type claimedPlan struct {
	storeID string
	steps   []plannedStep
	sealed  []memory.PlanStep // the steps as the store keeps them
}

// claim claims the caller's plan clientID for the commit execID and opens
// its steps. A plan whose steps do not open is finished as failed.
func (e *Engine) claim(ctx context.Context, caller tools.Caller, clientID, execID string) (claimedPlan, error) {
	storeID, secret, whole := splitPlanID(clientID)
	p := claimedPlan{storeID: storeID}
	if !whole {
		// The store's id alone does not commit a plan: its secret opens
		// the steps.
		return p, memory.PlanNotFound(storeID)
	}
	as := asCaller(ctx, caller.Principal)
	stored, err := e.plans.store.ClaimPlan(as, storeID, execID)
	if err != nil {
		return p, err
	}
	p.sealed = stored.Steps
	if p.steps, err = e.plans.seal.open(stored.Steps, secret); err != nil {
		e.log.Warn("a plan's steps do not open", "principal", caller.Principal, "plan_hash", memory.PlanIDHash(storeID))
		if ferr := e.plans.store.FinishPlan(context.WithoutCancel(as), storeID, memory.PlanFailed); ferr != nil {
			e.log.Error("finish plan", "id", execID, "err", ferr)
		}
		return p, &tools.Error{Code: memory.CodePlanAltered, Message: planSealError(storeID)}
	}
	return p, nil
}

// refuseCommit is the record of a commit whose plan could not be claimed.
// A refused commit is audited too: a plan committed twice, or tried by
// another principal, is what the log is for.
func (e *Engine) refuseCommit(x Execution, execID string, started time.Time, err error) (*Record, []byte) {
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
		e.log.Error("claim plan", "principal", x.Caller.Principal, "err", err)
		return e.RefusedRecord(executor.KindInternal, "the plan could not be read; try again")
	}
	var te *tools.Error
	msg := err.Error()
	if errors.As(err, &te) {
		msg = te.Message
	}
	refused := &executor.Result{Status: executor.StatusError, Error: &executor.Error{Kind: kind, Message: msg}}
	e.audit.record(auditRecord{exec: executionRecord(execID, x.Caller, e.access.of(x.Caller), x, started, refused)})
	return e.RefusedRecord(kind, msg)
}

// stepOutcome is a step as a commit's record shows it.
type stepOutcome struct {
	Step      int    `json:"step"`
	Tool      string `json:"tool"`
	Status    string `json:"status"`
	ErrorCode string `json:"error_code,omitempty"`
}

// commitSteps makes the steps' calls, in order, until one fails, and
// keeps each step's outcome in the store; it returns the commit's result,
// the outcomes and the plan's final state.
func (e *Engine) commitSteps(ctx context.Context, run *Run, p claimedPlan, started time.Time) (*executor.Result, json.RawMessage, string) {
	// The steps' outcomes and the plan's end are kept even when the
	// client gives up on the commit while a step runs: written with the
	// request's context, they failed with it, and the plan stayed
	// committing with every step's arguments (attack9 D1).
	as := asCaller(context.WithoutCancel(ctx), run.Caller.Principal)
	steps := p.steps
	outcomes := make([]stepOutcome, len(steps))
	results := make([]json.RawMessage, 0, len(steps))
	res := &executor.Result{Status: executor.StatusOK, Logs: []executor.LogLine{}}
	var failed error
	for i, st := range steps {
		outcomes[i] = stepOutcome{Step: st.Seq, Tool: st.Tool, Status: memory.StepNotRun}
		if failed != nil {
			continue
		}
		start := time.Now()
		out, err := e.commitStep(ctx, run, st)
		if stoppedCommit(ctx, res) {
			// Asked the client (protocol 2026-07-28): the step is made
			// on the retry, and the plan stays claimed until then.
			shown, _ := json.Marshal(outcomes)
			return res, shown, "waiting"
		}
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
		if err := e.plans.store.FinishPlanStep(as, p.storeID, st.Seq, status, code); err != nil {
			e.log.Error("finish plan step", "id", run.ID, "step", st.Seq, "err", err)
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
	if err := e.plans.store.FinishPlan(as, p.storeID, state); err != nil {
		e.log.Error("finish plan", "id", run.ID, "err", err)
	}
	res.Telemetry.DurationMS = float64(time.Since(started).Microseconds()) / 1000
	res.Telemetry.ResultBytes = len(res.Value)
	shown, _ := json.Marshal(outcomes)
	return res, shown, state
}

// commitStep makes one step's call as the plan's run would have: tokens
// resolved now, the data-flow rules checked against the sources the step
// recorded, the secrets the dry run knew in its arguments hidden in what
// the commit shows, the call audited with the commit.
func (e *Engine) commitStep(ctx context.Context, run *Run, st plannedStep) (json.RawMessage, error) {
	var prov filter.Provenance
	if len(st.Provenance) > 0 {
		if err := json.Unmarshal(st.Provenance, &prov); err != nil {
			return nil, &tools.Error{Code: "plan_altered", Tool: st.Tool, Message: "the step's recorded sources cannot be read"}
		}
	}
	if flow := run.flow.flow; flow != nil {
		resolved, err := resolveTokens(ctx, run.vault, st.Tool, st.Args)
		if err != nil {
			return nil, err
		}
		// The values in the arguments came from these sources, and are
		// what the dry run's flow knew them to be.
		flow.ObserveKnown("plan", st.known, prov)
		flow.Observe("plan", resolved, prov)
	}
	return e.stepCall(ctx, run, st)
}
