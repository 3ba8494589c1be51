package memory

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/codecell/codecell/tools"
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

// SavePlan saves a plan for the caller and returns its id, "plan_"
// followed by 128 random bits: whoever holds it (as that principal) can
// commit the plan once.
func (s *Store) SavePlan(ctx context.Context, in SavePlanInput) (string, Plan, error) {
	principal := tools.CallerFrom(ctx).Principal
	now := s.now()
	id, p, hash, err := NewPlan(principal, in, now)
	if err != nil {
		return "", Plan{}, err
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO plans (id_hash, principal, session, execution_id, steps_hash, state, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, p.IDHash, principal, in.Session, in.ExecutionID, hash, PlanPlanned, ms(now), ms(p.ExpiresAt)); err != nil {
			return err
		}
		for _, st := range p.Steps {
			if _, err := tx.ExecContext(ctx, `INSERT INTO plan_steps (plan_hash, seq, tool, args, provenance, status) VALUES (?, ?, ?, ?, ?, ?)`,
				p.IDHash, st.Seq, st.Tool, []byte(st.Args), nullBytes(st.Provenance), StepPending); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", Plan{}, fmt.Errorf("save plan: %w", err)
	}
	return id, p, nil
}

func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// ClaimPlan takes the caller's plan id for a commit: in one transaction
// it checks that the plan is the caller's (else ErrNotFound, as for an id
// that never was), still planned (else ErrPlanCommitted), not expired
// (else ErrPlanExpired) and unaltered (else ErrPlanAltered), and marks it
// committing. Of two concurrent claims exactly one succeeds. The errors
// are *tools.Error values with the codes CodeNotFound, CodePlanCommitted,
// CodePlanExpired and CodePlanAltered.
func (s *Store) ClaimPlan(ctx context.Context, id, commitExecutionID string) (Plan, error) {
	principal := tools.CallerFrom(ctx).Principal
	h := PlanIDHash(id)
	var p Plan
	err := s.write(ctx, func(tx *sql.Tx) error {
		var stored string
		var created, expires int64
		var committed sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT principal, session, execution_id, steps_hash, state, created_at, expires_at, committed_at
			FROM plans WHERE id_hash = ? AND principal = ?`, h, principal).
			Scan(&p.Principal, &p.Session, &p.ExecutionID, &stored, &p.State, &created, &expires, &committed)
		if errors.Is(err, sql.ErrNoRows) {
			return PlanNotFound(id)
		}
		if err != nil {
			return err
		}
		p.IDHash, p.CreatedAt, p.ExpiresAt, p.CommittedAt = h, fromMS(created), fromMS(expires), timePtr(committed)
		if p.State == PlanPlanned {
			if p.Steps, err = planSteps(ctx, tx, h); err != nil {
				return err
			}
		}
		if err := CheckClaim(id, p, stored, s.now()); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE plans SET state = ?, committed_at = ?, commit_execution_id = ? WHERE id_hash = ? AND state = ?`,
			PlanCommitting, ms(s.now()), commitExecutionID, h, PlanPlanned)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return PlanCommittedError(id, "")
		}
		p.State = PlanCommitting
		return nil
	})
	if err != nil {
		return Plan{}, fmt.Errorf("claim plan: %w", err)
	}
	return p, nil
}

func planSteps(ctx context.Context, tx *sql.Tx, h string) ([]PlanStep, error) {
	rows, err := tx.QueryContext(ctx, `SELECT seq, tool, args, provenance, status, error_code FROM plan_steps WHERE plan_hash = ? ORDER BY seq`, h)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []PlanStep
	for rows.Next() {
		var st PlanStep
		var args, prov []byte
		if err := rows.Scan(&st.Seq, &st.Tool, &args, &prov, &st.Status, &st.ErrorCode); err != nil {
			return nil, err
		}
		st.Args = args
		if len(prov) > 0 {
			st.Provenance = prov
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// GetPlan returns the caller's plan by id, or ErrNotFound.
func (s *Store) GetPlan(ctx context.Context, id string) (Plan, error) {
	principal := tools.CallerFrom(ctx).Principal
	h := PlanIDHash(id)
	p := Plan{IDHash: h}
	err := s.read(ctx, func(tx *sql.Tx) error {
		var created, expires int64
		var committed sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT principal, session, execution_id, state, created_at, expires_at, committed_at
			FROM plans WHERE id_hash = ? AND principal = ?`, h, principal).
			Scan(&p.Principal, &p.Session, &p.ExecutionID, &p.State, &created, &expires, &committed)
		if errors.Is(err, sql.ErrNoRows) {
			return NotFound("no plan %s for you", Clip(id, 40))
		}
		if err != nil {
			return err
		}
		p.CreatedAt, p.ExpiresAt, p.CommittedAt = fromMS(created), fromMS(expires), timePtr(committed)
		p.Steps, err = planSteps(ctx, tx, h)
		return err
	})
	if err != nil {
		return Plan{}, fmt.Errorf("get plan: %w", err)
	}
	return p, nil
}

// FinishPlanStep records the outcome of one step of a claimed plan.
func (s *Store) FinishPlanStep(ctx context.Context, id string, seq int, status, errorCode string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE plan_steps SET status = ?, error_code = ? WHERE plan_hash = ? AND seq = ?`,
			status, Clip(errorCode, 64), PlanIDHash(id), seq)
		return err
	})
	if err != nil {
		return fmt.Errorf("finish plan step %d: %w", seq, err)
	}
	return nil
}

// FinishPlan records the end of a claimed plan's commit: PlanCommitted
// when every step ran, PlanFailed when one failed (the steps after it are
// marked not run).
func (s *Store) FinishPlan(ctx context.Context, id, state string) error {
	h := PlanIDHash(id)
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE plan_steps SET status = ? WHERE plan_hash = ? AND status = ?`, StepNotRun, h, StepPending); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE plans SET state = ? WHERE id_hash = ? AND state = ?`, state, h, PlanCommitting)
		return err
	})
	if err != nil {
		return fmt.Errorf("finish plan: %w", err)
	}
	return nil
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
