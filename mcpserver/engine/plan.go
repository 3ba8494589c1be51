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

// planRecorder collects a dry run's writes, nested skills' included.
type planRecorder struct {
	mu    sync.Mutex
	steps []plannedStep
	bytes int // of the steps' arguments
}

// maxPlanSteps and maxPlanBytes bound a plan: its writes, and the bytes
// of their arguments together. A planned write goes to no source, so no
// source's limit bounds its arguments; without a bound, 40 writes of one
// 4 MiB string took 1.7 GiB of the server's memory as they were
// recorded, shown, sealed and stored (issue 19, fourth round, A10).
const (
	maxPlanSteps = 1000
	maxPlanBytes = 4 << 20
)

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
	if p.bytes+len(args) > maxPlanBytes {
		return nil, tools.Errorf("plan_too_large", "a plan holds at most %d bytes of its writes' arguments, and this write's %d would make it %d; plan fewer or smaller writes per run", maxPlanBytes, len(args), p.bytes+len(args))
	}
	p.bytes += len(args)
	p.steps = append(p.steps, plannedStep{PlanStep: memory.PlanStep{Tool: tool, Args: append(json.RawMessage(nil), args...), Provenance: provenance}, known: known})
	return json.RawMessage(fmt.Sprintf(`{"planned":true,"id":%d}`, len(p.steps))), nil
}

func (p *planRecorder) recorded() []plannedStep {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.steps
}

// plans keeps dry runs' plans: it seals and saves a dry run's writes,
// shows them in its record, and opens them again for their commit
// (commit.go).
type plans struct {
	store  planStore // nil: the server has no store, and no plans
	seal   *planSealer
	ttl    time.Duration
	filter *filter.Filter
	log    *slog.Logger
}

// save saves a finished dry run's writes and describes them for the
// record; it returns nil when the run failed (nothing is saved).
func (pl *plans) save(ctx context.Context, caller tools.Caller, execID string, p *planRecorder, res *executor.Result) (*PlanRecord, string) {
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
	sealed, secret, err := pl.seal.seal(steps)
	if err != nil {
		pl.log.Error("seal plan", "id", execID, "err", err)
		return rec, "The plan could not be saved; run the program again."
	}
	id, saved, err := pl.store.SavePlan(asCaller(ctx, caller.Principal), memory.SavePlanInput{
		Session: caller.Session, ExecutionID: execID, Steps: sealed, TTL: pl.ttl,
	})
	if te := (*tools.Error)(nil); errors.As(err, &te) && te.Code == memory.CodeQuotaExceeded {
		pl.log.Warn("save plan: quota", "id", execID, "bytes", memory.PlanBytes(sealed))
		return rec, "Nothing was written, and the plan was not saved: " + te.Message
	}
	if err != nil {
		pl.log.Error("save plan", "id", execID, "err", err)
		return rec, "The plan could not be saved; run the program again."
	}
	rec.ID, rec.ExpiresAt = planClientID(id, secret), &saved.ExpiresAt
	return rec, fmt.Sprintf("Nothing was written: steps lists the %d writes the program would make. Commit exactly these, once, with execute_code {plan_id} before expires_at.", len(steps))
}

// show passes a plan's steps through the filter, as the result is: values
// the run read from tools and secrets become tokens, and the steps keep
// to a share of the budget. An error is opts.Findings' refusal (a
// *filter.FindingsError).
func (pl *plans) show(p *PlanRecord, opts filter.Options) (*PlanRecord, error) {
	out := *p
	opts.Budget = max(opts.Budget/2, filter.MinBudget)
	f, err := pl.filter.Apply(filter.Input{Result: p.Steps}, opts)
	var held *filter.FindingsError
	if errors.As(err, &held) {
		return nil, err
	}
	if err != nil {
		out.Steps = json.RawMessage("[]")
		return &out, nil
	}
	out.Steps = f.Limited
	return &out, nil
}

// planHash names a plan, by the id its client holds, in the audit log:
// the hash of the store's id, as the store keeps it.
func planHash(clientID string) string {
	storeID, _, _ := splitPlanID(clientID)
	return memory.PlanIDHash(storeID)
}
