package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/codecell/codecell/tools"
)

// SavePlan saves a plan for the caller and returns its id, "plan_"
// followed by 128 random bits: whoever holds it (as that principal) can
// commit the plan once. A plan that would take the caller's live plans
// past Limits.MaxPrincipalPlanBytes fails with CodeQuotaExceeded.
func (s *Store) SavePlan(ctx context.Context, in memory.SavePlanInput) (string, memory.Plan, error) {
	principal := tools.CallerFrom(ctx).Principal
	now := s.now()
	id, p, hash, err := memory.NewPlan(principal, in, now)
	if err != nil {
		return "", memory.Plan{}, err
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		// The principal's live plans, by the index plans_principal; the
		// single writer counts and inserts with nobody between.
		var held int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(length(CAST(st.tool AS BLOB)) + length(st.args) + COALESCE(length(st.provenance), 0)), 0)
			FROM plans p JOIN plan_steps st ON st.plan_hash = p.id_hash
			WHERE p.principal = ? AND p.state = ? AND p.expires_at > ?`, principal, memory.PlanPlanned, ms(now)).Scan(&held); err != nil {
			return err
		}
		if err := s.lim.CheckPlanBytes(held, memory.PlanBytes(p.Steps)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO plans (id_hash, principal, session, execution_id, steps_hash, state, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, p.IDHash, principal, in.Session, in.ExecutionID, hash, memory.PlanPlanned, ms(now), ms(p.ExpiresAt)); err != nil {
			return err
		}
		for _, st := range p.Steps {
			if _, err := tx.ExecContext(ctx, `INSERT INTO plan_steps (plan_hash, seq, tool, args, provenance, status) VALUES (?, ?, ?, ?, ?, ?)`,
				p.IDHash, st.Seq, st.Tool, []byte(st.Args), nullBytes(st.Provenance), memory.StepPending); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", memory.Plan{}, fmt.Errorf("save plan: %w", err)
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
// committing. It returns the plan's steps and keeps only their tools
// (clearPlanArgs). Of two concurrent claims exactly one succeeds. The errors
// are *tools.Error values with the codes CodeNotFound, CodePlanCommitted,
// CodePlanExpired and CodePlanAltered.
func (s *Store) ClaimPlan(ctx context.Context, id, commitExecutionID string) (memory.Plan, error) {
	principal := tools.CallerFrom(ctx).Principal
	h := memory.PlanIDHash(id)
	var p memory.Plan
	err := s.write(ctx, func(tx *sql.Tx) error {
		var stored string
		var created, expires int64
		var committed sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT principal, session, execution_id, steps_hash, state, created_at, expires_at, committed_at
			FROM plans WHERE id_hash = ? AND principal = ?`, h, principal).
			Scan(&p.Principal, &p.Session, &p.ExecutionID, &stored, &p.State, &created, &expires, &committed)
		if errors.Is(err, sql.ErrNoRows) {
			return memory.PlanNotFound(id)
		}
		if err != nil {
			return err
		}
		p.IDHash, p.CreatedAt, p.ExpiresAt, p.CommittedAt = h, fromMS(created), fromMS(expires), timePtr(committed)
		if p.State == memory.PlanPlanned {
			if p.Steps, err = planSteps(ctx, tx, h); err != nil {
				return err
			}
		}
		if err := memory.CheckClaim(id, p, stored, s.now()); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE plans SET state = ?, committed_at = ?, commit_execution_id = ? WHERE id_hash = ? AND state = ?`,
			memory.PlanCommitting, ms(s.now()), commitExecutionID, h, memory.PlanPlanned)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return memory.PlanCommittedError(id, "")
		}
		p.State = memory.PlanCommitting
		return clearPlanArgs(ctx, tx, h)
	})
	if err != nil {
		return memory.Plan{}, fmt.Errorf("claim plan: %w", err)
	}
	return p, nil
}

// clearPlanArgs drops the arguments and provenance of a claimed plan's
// steps, keeping their tools and outcomes. A claimed plan leaves the
// principal's plan quota (SavePlan counts planned plans only), and the
// claim hands its steps to the commit (which, on protocol 2026-07-28,
// keeps them in its journal, bounded on its own): kept until Prune
// (memory.KeepPlans, 30 days), the arguments of plans claimed one after
// another filled the disk, finished or not — a commit whose client went
// away, or whose retry never came, never finishes (attack8 C1).
func clearPlanArgs(ctx context.Context, tx *sql.Tx, h string) error {
	_, err := tx.ExecContext(ctx, `UPDATE plan_steps SET args = X'', provenance = NULL WHERE plan_hash = ?`, h)
	return err
}

func planSteps(ctx context.Context, tx *sql.Tx, h string) ([]memory.PlanStep, error) {
	rows, err := tx.QueryContext(ctx, `SELECT seq, tool, args, provenance, status, error_code FROM plan_steps WHERE plan_hash = ? ORDER BY seq`, h)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []memory.PlanStep
	for rows.Next() {
		var st memory.PlanStep
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
func (s *Store) GetPlan(ctx context.Context, id string) (memory.Plan, error) {
	principal := tools.CallerFrom(ctx).Principal
	h := memory.PlanIDHash(id)
	p := memory.Plan{IDHash: h}
	err := s.read(ctx, func(tx *sql.Tx) error {
		var created, expires int64
		var committed sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT principal, session, execution_id, state, created_at, expires_at, committed_at
			FROM plans WHERE id_hash = ? AND principal = ?`, h, principal).
			Scan(&p.Principal, &p.Session, &p.ExecutionID, &p.State, &created, &expires, &committed)
		if errors.Is(err, sql.ErrNoRows) {
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
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE plan_steps SET status = ?, error_code = ? WHERE plan_hash = ? AND seq = ?`,
			status, memory.Clip(errorCode, 64), memory.PlanIDHash(id), seq)
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
	h := memory.PlanIDHash(id)
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE plan_steps SET status = ? WHERE plan_hash = ? AND status = ?`, memory.StepNotRun, h, memory.StepPending); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE plans SET state = ? WHERE id_hash = ? AND state = ?`, state, h, memory.PlanCommitting)
		return err
	})
	if err != nil {
		return fmt.Errorf("finish plan: %w", err)
	}
	return nil
}
