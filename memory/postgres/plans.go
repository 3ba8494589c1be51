package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Plans, as memory/plans.go keeps them on SQLite: saved under the SHA-256
// of their id, bound to their principal, claimed once for a commit. The
// rules (validation, the verdict on a claim, the errors) are memory's
// (NewPlan, CheckClaim); what is PostgreSQL's is how a claim is made
// atomic across instances: the plan's row is locked (SELECT … FOR
// UPDATE) for the claim's transaction, so a concurrent claim waits for it
// and then reads the plan as claimed.

// planLockClass is the first key of the transaction-level advisory lock
// SavePlan takes on its principal (the second key, cacheLockKey's hash),
// so that two instances saving for one principal take turns and the
// second counts the first's plan: neither takes the last of
// memory.Limits.MaxPrincipalPlanBytes twice.
const planLockClass = 0x706c616e // "plan"

// SavePlan saves a plan for the caller and returns its id, "plan_"
// followed by 128 random bits: whoever holds it (as that principal) can
// commit the plan once. A plan that would take the caller's live plans
// past memory.Limits.MaxPrincipalPlanBytes fails with
// memory.CodeQuotaExceeded.
func (s *Store) SavePlan(ctx context.Context, in memory.SavePlanInput) (string, memory.Plan, error) {
	principal := tools.CallerFrom(ctx).Principal
	now := s.now()
	id, p, hash, err := memory.NewPlan(principal, in, now)
	if err != nil {
		return "", memory.Plan{}, err
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1::int4, $2::int4)`, planLockClass, cacheLockKey(principal, "")); err != nil {
			return err
		}
		var held int64
		if err := tx.QueryRow(ctx, `SELECT COALESCE(SUM(octet_length(st.tool) + octet_length(st.args) + COALESCE(octet_length(st.provenance), 0)), 0)::bigint
			FROM plans p JOIN plan_steps st ON st.plan_hash = p.id_hash
			WHERE p.principal = $1 AND p.state = $2 AND p.expires_at > $3`, principal, memory.PlanPlanned, ms(now)).Scan(&held); err != nil {
			return err
		}
		if err := s.lim.CheckPlanBytes(held, memory.PlanBytes(p.Steps)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO plans (id_hash, principal, session, execution_id, steps_hash, state, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, p.IDHash, principal, in.Session, in.ExecutionID, hash, memory.PlanPlanned, ms(now), ms(p.ExpiresAt)); err != nil {
			return err
		}
		rows := make([][]any, len(p.Steps))
		for i, st := range p.Steps {
			rows[i] = []any{p.IDHash, int64(st.Seq), st.Tool, []byte(st.Args), nullBytes(st.Provenance), memory.StepPending}
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"plan_steps"}, []string{"plan_hash", "seq", "tool", "args", "provenance", "status"}, pgx.CopyFromRows(rows))
		return err
	})
	if err != nil {
		return "", memory.Plan{}, fmt.Errorf("save plan: %w", err)
	}
	return id, p, nil
}

// nullBytes is b, or NULL when it is empty.
func nullBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// ClaimPlan takes the caller's plan id for a commit: in one transaction
// it checks that the plan is the caller's (else memory.ErrNotFound, as
// for an id that never was), still planned (else
// memory.ErrPlanCommitted), not expired (else memory.ErrPlanExpired) and
// unaltered (else memory.ErrPlanAltered), and marks it committing. It
// returns the plan's steps and keeps only their tools, as SQLite's does.
// Of two concurrent claims, on any instances, exactly one succeeds: the row
// lock makes the second wait, then see the plan committing.
func (s *Store) ClaimPlan(ctx context.Context, id, commitExecutionID string) (memory.Plan, error) {
	principal := tools.CallerFrom(ctx).Principal
	h := memory.PlanIDHash(id)
	var p memory.Plan
	err := s.tx(ctx, func(tx pgx.Tx) error {
		p = memory.Plan{IDHash: h}
		var stored string
		var created, expires int64
		var committed *int64
		err := tx.QueryRow(ctx, `SELECT principal, session, execution_id, steps_hash, state, created_at, expires_at, committed_at
			FROM plans WHERE id_hash = $1 AND principal = $2 FOR UPDATE`, h, principal).
			Scan(&p.Principal, &p.Session, &p.ExecutionID, &stored, &p.State, &created, &expires, &committed)
		if errors.Is(err, pgx.ErrNoRows) {
			return memory.PlanNotFound(id)
		}
		if err != nil {
			return err
		}
		p.CreatedAt, p.ExpiresAt, p.CommittedAt = fromMS(created), fromMS(expires), timePtr(committed)
		if p.State == memory.PlanPlanned {
			if p.Steps, err = planSteps(ctx, tx, h); err != nil {
				return err
			}
		}
		if err := memory.CheckClaim(id, p, stored, s.now()); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE plans SET state = $1, committed_at = $2, commit_execution_id = $3 WHERE id_hash = $4 AND state = $5`,
			memory.PlanCommitting, ms(s.now()), commitExecutionID, h, memory.PlanPlanned)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return memory.PlanCommittedError(id, "")
		}
		p.State = memory.PlanCommitting
		// The claimed plan left the quota: its arguments leave the store
		// (as SQLite's clearPlanArgs says, attack8 C1).
		_, err = tx.Exec(ctx, `UPDATE plan_steps SET args = ''::bytea, provenance = NULL WHERE plan_hash = $1`, h)
		return err
	})
	if err != nil {
		return memory.Plan{}, fmt.Errorf("claim plan: %w", err)
	}
	return p, nil
}

func planSteps(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, h string) ([]memory.PlanStep, error) {
	rows, err := q.Query(ctx, `SELECT seq, tool, args, provenance, status, error_code FROM plan_steps WHERE plan_hash = $1 ORDER BY seq`, h)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.PlanStep, error) {
		var st memory.PlanStep
		var args, prov []byte
		err := r.Scan(&st.Seq, &st.Tool, &args, &prov, &st.Status, &st.ErrorCode)
		st.Args = args
		if len(prov) > 0 {
			st.Provenance = prov
		}
		return st, err
	})
}

// GetPlan returns the caller's plan by id, or memory.ErrNotFound.
func (s *Store) GetPlan(ctx context.Context, id string) (memory.Plan, error) {
	principal := tools.CallerFrom(ctx).Principal
	h := memory.PlanIDHash(id)
	var p memory.Plan
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		p = memory.Plan{IDHash: h}
		var created, expires int64
		var committed *int64
		err := tx.QueryRow(ctx, `SELECT principal, session, execution_id, state, created_at, expires_at, committed_at
			FROM plans WHERE id_hash = $1 AND principal = $2`, h, principal).
			Scan(&p.Principal, &p.Session, &p.ExecutionID, &p.State, &created, &expires, &committed)
		if errors.Is(err, pgx.ErrNoRows) {
			return memory.NotFound("no plan %s for you", memory.Clip(id, 40))
		}
		if err != nil {
			return err
		}
		p.CreatedAt, p.ExpiresAt, p.CommittedAt = fromMS(created), fromMS(expires), timePtr(committed)
		p.Steps, err = planSteps(ctx, tx, h)
		return err
	})
	if err != nil {
		return memory.Plan{}, fmt.Errorf("get plan: %w", err)
	}
	return p, nil
}

// FinishPlanStep records the outcome of one step of a claimed plan.
func (s *Store) FinishPlanStep(ctx context.Context, id string, seq int, status, errorCode string) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE plan_steps SET status = $1, error_code = $2 WHERE plan_hash = $3 AND seq = $4`,
			status, memory.Clip(errorCode, 64), memory.PlanIDHash(id), seq)
		return err
	})
	if err != nil {
		return fmt.Errorf("finish plan step %d: %w", seq, err)
	}
	return nil
}

// FinishPlan records the end of a claimed plan's commit:
// memory.PlanCommitted when every step ran, memory.PlanFailed when one
// failed (the steps after it are marked not run).
func (s *Store) FinishPlan(ctx context.Context, id, state string) error {
	h := memory.PlanIDHash(id)
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE plan_steps SET status = $1 WHERE plan_hash = $2 AND status = $3`, memory.StepNotRun, h, memory.StepPending); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE plans SET state = $1 WHERE id_hash = $2 AND state = $3`, state, h, memory.PlanCommitting)
		return err
	})
	if err != nil {
		return fmt.Errorf("finish plan: %w", err)
	}
	return nil
}
