package memory

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"
)

// Plans are the writes a dry run recorded instead of making: the server
// saves them with SavePlan, and a later commit claims the plan once with
// ClaimPlan, runs its steps and reports each with FinishPlanStep. The
// store keeps a plan under the SHA-256 of its id, bound to its principal,
// with a hash over its steps that ClaimPlan checks.

// Plan states.
const (
	PlanPlanned    = "planned"
	PlanCommitting = "committing"
	PlanCommitted  = "committed"
	PlanFailed     = "failed"
)

// Plan step statuses.
const (
	StepPending = "pending"
	StepOK      = "ok"
	StepError   = "error"
	StepNotRun  = "not_run"
)

// Error codes of plan operations, beside tools.CodeNotFound.
const (
	// CodePlanExpired: the plan's time to live has passed.
	CodePlanExpired = "plan_expired"
	// CodePlanCommitted: the plan was committed (or is being committed)
	// already.
	CodePlanCommitted = "plan_committed"
	// CodePlanAltered: the stored steps no longer match their hash.
	CodePlanAltered = "plan_altered"
)

// Sentinel errors of ClaimPlan.
var (
	ErrPlanExpired   = errors.New("plan expired")
	ErrPlanCommitted = errors.New("plan already committed")
	ErrPlanAltered   = errors.New("plan altered")
)

// PlanStep is one intended write.
type PlanStep struct {
	// Seq numbers the steps from 1 in the order the program made them.
	Seq  int    `json:"seq"`
	Tool string `json:"tool"`
	// Args are the arguments as the program passed them: tokens stay
	// tokens, resolved when the step runs.
	Args json.RawMessage `json:"args"`
	// Provenance is the sources of the values in Args (a
	// filter.Provenance as JSON); nil when none.
	Provenance json.RawMessage `json:"provenance,omitempty"`
	Status     string          `json:"status"`
	ErrorCode  string          `json:"error_code,omitempty"`
}

// Plan is a saved plan. Its id is not kept: IDHash is its SHA-256.
type Plan struct {
	IDHash      string     `json:"id_hash"`
	Principal   string     `json:"principal"`
	Session     string     `json:"-"`
	ExecutionID string     `json:"execution_id"`
	State       string     `json:"state"`
	Steps       []PlanStep `json:"steps"`
	CreatedAt   time.Time  `json:"created_at"`
	ExpiresAt   time.Time  `json:"expires_at"`
	CommittedAt *time.Time `json:"committed_at,omitempty"`
}

// SavePlanInput is a plan to save for the caller in the context.
type SavePlanInput struct {
	Session     string
	ExecutionID string
	Steps       []PlanStep
	// TTL is how long the plan may be committed; it must be positive.
	TTL time.Duration
}

// maxPlanSteps bounds the steps of one plan.
const maxPlanSteps = 10000

// PlanIDHash returns the hex SHA-256 of a plan id, the form the store and
// the audit log keep it in.
func PlanIDHash(id string) string { return Hash([]byte(id)) }

// planStepsHash hashes the steps' tools and arguments, in order, each part
// length-prefixed so that no two lists hash alike.
func planStepsHash(steps []PlanStep) string {
	h := sha256.New()
	var n [8]byte
	part := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for _, st := range steps {
		part([]byte(st.Tool))
		part(st.Args)
		part(st.Provenance)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// NewPlan checks a plan to save for principal as SavePlan does and makes
// it at now: its id, the plan as saved (steps numbered from 1, pending)
// and the hash over its steps that ClaimPlan checks.
func NewPlan(principal string, in SavePlanInput, now time.Time) (id string, p Plan, stepsHash string, err error) {
	if in.TTL <= 0 {
		return "", Plan{}, "", Invalid("save plan: the time to live must be positive")
	}
	if len(in.Steps) == 0 || len(in.Steps) > maxPlanSteps {
		return "", Plan{}, "", Invalid("save plan: want 1 to %d steps, got %d", maxPlanSteps, len(in.Steps))
	}
	id = "plan_" + NewID()
	p = Plan{IDHash: PlanIDHash(id), Principal: principal, Session: in.Session, ExecutionID: in.ExecutionID, State: PlanPlanned,
		CreatedAt: now.UTC(), ExpiresAt: now.Add(in.TTL).UTC()}
	for i, st := range in.Steps {
		if !json.Valid(st.Args) {
			return "", Plan{}, "", Invalid("save plan: step %d: arguments are not JSON", i+1)
		}
		st.Seq, st.Status, st.ErrorCode = i+1, StepPending, ""
		p.Steps = append(p.Steps, st)
	}
	return id, p, planStepsHash(p.Steps), nil
}

// PlanBytes is what a plan's steps take in the store, as SavePlan counts
// them against Limits.MaxPrincipalPlanBytes: their tools, arguments and
// provenance.
func PlanBytes(steps []PlanStep) int64 {
	var n int64
	for _, st := range steps {
		n += int64(len(st.Tool) + len(st.Args) + len(st.Provenance))
	}
	return n
}

// CheckPlanBytes is SavePlan's verdict on a plan of adding bytes for a
// principal whose live plans (planned, not expired) hold held bytes: nil
// within l's MaxPrincipalPlanBytes, else a CodeQuotaExceeded error that
// says the bound, the setting that raises it and what frees it.
func (l Limits) CheckPlanBytes(held, adding int64) error {
	bound := l.Defaults().MaxPrincipalPlanBytes
	if held+adding <= bound {
		return nil
	}
	return Quota("this plan's %d bytes would take the caller's live plans to %d bytes, past its quota of %d (limits.max_principal_plan_bytes): commit its plans (execute_code {plan_id}) or let them expire to free their share, plan fewer or smaller writes, or have the operator raise limits.max_principal_plan_bytes", adding, held+adding, bound)
}

// PlanNotFound is ClaimPlan's error for an id that is not a plan of the
// caller's.
func PlanNotFound(id string) error {
	return NotFound("no plan %s for you: plans are bound to the principal that made them; make a new one with execute_code {mode: \"plan\"}", Clip(id, 40))
}

// CheckClaim is ClaimPlan's verdict on the caller's plan id as stored (p,
// with its state, expiry and steps, and storedHash, the hash saved with
// it) at now: nil when it may be claimed, else the error ClaimPlan
// returns (CodePlanCommitted, CodePlanExpired or CodePlanAltered, in that
// order of precedence).
func CheckClaim(id string, p Plan, storedHash string, now time.Time) error {
	if p.State != PlanPlanned {
		return PlanCommittedError(id, p.State)
	}
	if !now.Before(p.ExpiresAt) {
		return toolErr(CodePlanExpired, ErrPlanExpired, "plan %s expired at %s; make a new one", Clip(id, 40), p.ExpiresAt.Format(time.RFC3339))
	}
	if planStepsHash(p.Steps) != storedHash {
		return toolErr(CodePlanAltered, ErrPlanAltered, "plan %s was altered in the store since it was made; it will not run", Clip(id, 40))
	}
	return nil
}

// PlanCommittedError is ClaimPlan's error for a plan in state (committing,
// committed or failed; empty when a concurrent claim took it first).
func PlanCommittedError(id, state string) error {
	if state == "" {
		return toolErr(CodePlanCommitted, ErrPlanCommitted, "plan %s was committed already; a plan runs once", Clip(id, 40))
	}
	return toolErr(CodePlanCommitted, ErrPlanCommitted, "plan %s was committed already (%s); a plan runs once: make a new one to run its writes again", Clip(id, 40), state)
}

// KeepPlans is how long Prune keeps a plan that was claimed, counted from
// its creation: the audit log's age limit, or 30 days without one. (A
// plan never claimed goes once it expires.)
func KeepPlans(r Retention) time.Duration {
	if r.ExecutionsMaxAge < 0 {
		return 30 * 24 * time.Hour
	}
	return r.ExecutionsMaxAge
}
