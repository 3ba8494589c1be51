package memory

import (
	"encoding/json"
	"fmt"
	"time"
)

// The rules of plans, the cache and the state instances share, as both
// backends apply them (see backendkit.go): each backend keeps only its
// SQL and its way of making a claim or a reservation atomic.

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

// CheckCacheSet checks an entry to set as CacheSet does.
func CheckCacheSet(in CacheSetInput) error {
	if in.TTL <= 0 {
		return Invalid("cache set: the time to live must be positive")
	}
	if in.Kind == "" || in.Key == "" {
		return Invalid("cache set: kind and key must not be empty")
	}
	return nil
}

// CacheFull is CacheSet's error when the caller holds n unexpired
// entries of the kind, its limit, and sets a new key.
func CacheFull(n int) error {
	return toolErr(CodeQuotaExceeded, ErrQuota, "the cache holds %d entries already, its limit; delete some (cache.delete) or let them expire", n)
}

// CheckVaultToken checks a token to store as PutVaultTokens does.
func CheckVaultToken(t VaultToken) error {
	if t.Principal == "" || t.Token == "" || len(t.Sealed) == 0 {
		return fmt.Errorf("put vault tokens: %w: a token needs a principal, a token and a sealed value", ErrInvalid)
	}
	return nil
}

// CheckReserve checks the arguments of ReserveQuota.
func CheckReserve(limit, n int) error {
	if n <= 0 || limit <= 0 {
		return fmt.Errorf("reserve quota: %w: want n > 0 and limit > 0, got %d and %d", ErrInvalid, n, limit)
	}
	return nil
}

// Reserved is what ReserveQuota grants of n when the window's counter,
// n included, reached total: n while the window has room, less at its
// end, 0 once limit is spent.
func Reserved(total, limit, n int) int {
	before := total - n
	return max(0, min(n, limit-before))
}

// FilterKeyMismatch is CheckFilterKey's error when the store's instances
// use the key with fingerprint have and this one's is id.
func FilterKeyMismatch(id, have string) error {
	return fmt.Errorf("%w: this instance's filter key is %s, the store's instances use %s; give every instance the same key (filter.key_file on a shared secret, or cluster.key_env)", ErrKeyMismatch, id, have)
}
