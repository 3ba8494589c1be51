package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"fmt"
)

// Prune enforces Config.Retention: it deletes audit records (with their
// tool calls) and stored results that are too old or beyond the row and
// byte limits, oldest first, and episodic memories older than
// EpisodicMaxAge, and consolidation's records of merged memories older
// than ExecutionsMaxAge. It also trims the logs of binary-code changes and of
// skill changes to their latest codeLogKeep and skillLogKeep entries. Open calls it; a server calls it
// periodically.
func (s *Store) Prune(ctx context.Context) (memory.PruneReport, error) {
	var rep memory.PruneReport
	now := s.now()
	r := s.ret
	exec := func(tx *sql.Tx, n *int64, q string, args ...any) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		k, _ := res.RowsAffected()
		*n += k
		return nil
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if r.ExecutionsMaxAge > 0 {
			if err := exec(tx, &rep.Executions, `DELETE FROM executions WHERE started_at < ?`, ms(now.Add(-r.ExecutionsMaxAge))); err != nil {
				return err
			}
		}
		if r.ExecutionsMaxRows > 0 {
			if err := exec(tx, &rep.Executions, `DELETE FROM executions WHERE id IN
				(SELECT id FROM executions ORDER BY started_at DESC, id DESC LIMIT -1 OFFSET ?)`, r.ExecutionsMaxRows); err != nil {
				return err
			}
		}
		if r.ResultsMaxAge > 0 {
			if err := exec(tx, &rep.Results, `DELETE FROM results WHERE created_at < ?`, ms(now.Add(-r.ResultsMaxAge))); err != nil {
				return err
			}
		}
		if r.ResultsMaxRows > 0 {
			if err := exec(tx, &rep.Results, `DELETE FROM results WHERE id IN
				(SELECT id FROM results ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET ?)`, r.ResultsMaxRows); err != nil {
				return err
			}
		}
		if r.ResultsMaxBytes > 0 {
			if err := exec(tx, &rep.Results, `DELETE FROM results WHERE id IN (SELECT id FROM
				(SELECT id, sum(stored_size) OVER (ORDER BY created_at DESC, id DESC) AS total FROM results) WHERE total > ?)`, r.ResultsMaxBytes); err != nil {
				return err
			}
		}
		if err := exec(tx, &rep.Cache, `DELETE FROM cache_entries WHERE expires_at <= ?`, ms(now)); err != nil {
			return err
		}
		if err := exec(tx, &rep.Plans, `DELETE FROM plans WHERE (state = ? AND expires_at <= ?) OR (state <> ? AND created_at < ?)`,
			memory.PlanPlanned, ms(now), memory.PlanPlanned, ms(now.Add(-memory.KeepPlans(r)))); err != nil {
			return err
		}
		if r.ExecutionsMaxAge > 0 {
			if err := exec(tx, &rep.Merges, `DELETE FROM memory_merges WHERE merged_at < ?`, ms(now.Add(-r.ExecutionsMaxAge))); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM memory_code_log WHERE seq <= (SELECT max(seq) FROM memory_code_log) - ?`, codeLogKeep); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM skill_changes WHERE seq <= (SELECT max(seq) FROM skill_changes) - ?`, skillLogKeep); err != nil {
			return err
		}
		s.vmu.RLock()
		ok := s.vecOK == nil
		s.vmu.RUnlock()
		if r.EpisodicMaxAge > 0 && ok {
			rows, err := tx.QueryContext(ctx, `SELECT principal, id FROM memories WHERE layer = 'episodic' AND coalesce(occurred_at, created_at) < ?
				ORDER BY principal, id`, ms(now.Add(-r.EpisodicMaxAge)))
			if err != nil {
				return err
			}
			ids := map[string][]int64{}
			var principals []string
			for rows.Next() {
				var p string
				var id int64
				if err := rows.Scan(&p, &id); err != nil {
					rows.Close()
					return err
				}
				if len(ids[p]) == 0 {
					principals = append(principals, p)
				}
				ids[p] = append(ids[p], id)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, p := range principals {
				if err := deleteMemories(ctx, tx, p, ids[p]); err != nil {
					return err
				}
				rep.Episodic += int64(len(ids[p]))
			}
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("prune: %w", err)
	}
	if rep.Executions+rep.Results+rep.Episodic > 0 {
		s.log.Info("pruned", "executions", rep.Executions, "results", rep.Results, "episodic", rep.Episodic)
	}
	return rep, nil
}
