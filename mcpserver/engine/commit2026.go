package engine

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// A plan's commit on protocol 2026-07-28 (multi round-trip requests): a
// step whose call asks the client — its [approval] guard, a question
// inside its handler — stops the commit, which ends with input_required
// as a program's run does (mrtr.go). The plan stays claimed by the first
// attempt (its state "committing": no other commit may claim it), and the
// journal carries the claim: the plan's store id and its sealed steps.
// The retry — the same plan_id, the state and the answers — opens the
// steps again with the plan_id's secret, answers the steps made before
// from the journal, with the results they had, and goes on from the step
// that asked: no step is made twice.

// journalPlan is the plan a commit's journal resumes: claimed by its
// first attempt, its steps as the store keeps them (sealed).
type journalPlan struct {
	StoreID string            `json:"id"`
	Steps   []memory.PlanStep `json:"steps"`
}

// commitResumable is Commit for a request that can take input_required.
func (e *Engine) commitResumable(ctx context.Context, planID string, x Execution) (*Record, []byte) {
	id, started := newExecutionID(), time.Now()
	storeID, secret, whole := splitPlanID(planID)
	// The state resumes this plan's commit only.
	xd := x
	xd.Mode = "commit " + storeID
	x.Mode, x.planHash = "commit", memory.PlanIDHash(storeID)
	run, sess := e.newRun(ctx, id, x)
	defer run.flowKeep.release()
	r, err := e.startResume(ctx, xd, run)
	if err != nil {
		return e.refusedResume(err)
	}
	var p claimedPlan
	if r.prior.Plan == nil {
		if p, err = e.claim(ctx, x.Caller, planID, id); err != nil {
			return e.refuseCommit(x, id, started, err)
		}
		r.prior.Plan = &journalPlan{StoreID: p.storeID, Steps: p.sealed}
	} else {
		p = claimedPlan{storeID: r.prior.Plan.StoreID, sealed: r.prior.Plan.Steps}
		if p.steps, err = e.plans.seal.open(p.sealed, secret); err != nil || !whole {
			return e.refuseCommit(x, id, started, &tools.Error{Code: memory.CodePlanAltered, Message: planSealError(storeID)})
		}
	}
	run.resume = r
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.stop = cancel
	res, outcomes, state := e.commitSteps(runCtx, run, p, started)
	input, err := e.endResume(ctx, run, xd, res)
	if err != nil {
		e.log.Error("seal request state", "id", id, "err", err)
		res.Status, res.Value = executor.StatusError, nil
		res.Error = &executor.Error{Kind: executor.KindInternal, Message: "the commit needs the client's input, and its journal could not be kept: " + err.Error()}
	}
	x.planned = &PlanRecord{ID: planID, Steps: outcomes}
	rec, body := e.finish(ctx, run, sess, x, started, res)
	rec.Input = input
	e.log.Info("commit", "id", id, "principal", x.Caller.Principal, "plan_hash", x.planHash, "state", state, "steps", len(p.steps), "round", r.prior.Rounds)
	return rec, body
}

// stepCall makes a step's call: from the journal when a resumed commit
// made it before, else through the gate, journaled when the commit may
// stop to ask.
func (e *Engine) stepCall(ctx context.Context, run *Run, st plannedStep) (json.RawMessage, error) {
	c := &Call{Run: run, Name: st.Tool, Args: st.Args}
	r := run.resume
	if r == nil {
		return e.gate.call(ctx, c)
	}
	seq := st.Seq - 1
	jc, err, ok := r.replayFrom(seq, st.Tool, st.Args)
	if ok {
		r.replaySeen(run, jc, e.gate.reg.View(run.Caller)) // the flow learns again what the step's call showed it
		return jc.Out, err
	}
	if err != nil {
		return nil, err
	}
	r.enter() // one step at a time: never stopping here
	defer r.leave()
	c.resume, c.seen = &resumeCall{seq: seq}, &observations{r: r}
	out, err := e.gate.call(ctx, c)
	if ctx.Err() == nil {
		r.record(seq, st.Tool, st.Args, out, err, c.sources, c.seen)
	}
	return out, err
}

// stoppedCommit reports whether a commit's steps stopped to ask the
// client, and makes res say so: the commit waits for the retry.
func stoppedCommit(ctx context.Context, res *executor.Result) bool {
	if !errors.Is(context.Cause(ctx), errInputRequired) {
		return false
	}
	res.Status, res.Value = executor.StatusError, nil
	res.Error = &executor.Error{Kind: executor.KindCanceled, Message: errInputRequired.Error()}
	return true
}
