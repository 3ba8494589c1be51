package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
)

// codeLogKeep is how many entries of memory_code_log Prune keeps: more
// than codeLogCatchUp, so that an instance that is within catching-up
// distance of the head still finds every entry it lacks, and one further
// behind reloads its code sets.
const codeLogKeep = 2 * codeLogCatchUp

// Prune enforces Config.Retention as sqlite.Store.Prune does: audit
// records (with their tool calls) and stored results too old or beyond
// the row and byte limits, oldest first, and episodic memories older than
// EpisodicMaxAge, expired cache entries, plans expired before a commit
// and claimed plans and records of merged memories older than the audit
// log's age limit; it also trims
// the change log of binary codes to its latest codeLogKeep entries. Every instance may call it: it runs in one
// transaction, and two at once only delete what the other left.
func (s *Store) Prune(ctx context.Context) (memory.PruneReport, error) {
	var rep memory.PruneReport
	now := s.now()
	r := s.ret
	err := s.tx(ctx, func(tx pgx.Tx) error {
		rep = memory.PruneReport{}
		exec := func(n *int64, q string, args ...any) error {
			tag, err := tx.Exec(ctx, q, args...)
			*n += tag.RowsAffected()
			return err
		}
		if r.ExecutionsMaxAge > 0 {
			if err := exec(&rep.Executions, `DELETE FROM executions WHERE started_at < $1`, ms(now.Add(-r.ExecutionsMaxAge))); err != nil {
				return err
			}
		}
		if r.ExecutionsMaxRows > 0 {
			if err := exec(&rep.Executions, `DELETE FROM executions WHERE id IN
				(SELECT id FROM executions ORDER BY started_at DESC, id COLLATE "C" DESC OFFSET $1)`, r.ExecutionsMaxRows); err != nil {
				return err
			}
		}
		if r.ResultsMaxAge > 0 {
			if err := exec(&rep.Results, `DELETE FROM results WHERE created_at < $1`, ms(now.Add(-r.ResultsMaxAge))); err != nil {
				return err
			}
		}
		if r.ResultsMaxRows > 0 {
			if err := exec(&rep.Results, `DELETE FROM results WHERE id IN
				(SELECT id FROM results ORDER BY created_at DESC, id COLLATE "C" DESC OFFSET $1)`, r.ResultsMaxRows); err != nil {
				return err
			}
		}
		if r.ResultsMaxBytes > 0 {
			if err := exec(&rep.Results, `DELETE FROM results WHERE id IN (SELECT id FROM
				(SELECT id, sum(stored_size) OVER (ORDER BY created_at DESC, id COLLATE "C" DESC) AS total FROM results) t WHERE total > $1)`, r.ResultsMaxBytes); err != nil {
				return err
			}
		}
		if err := exec(&rep.Cache, `DELETE FROM cache_entries WHERE expires_at <= $1`, ms(now)); err != nil {
			return err
		}
		if err := exec(&rep.Plans, `DELETE FROM plans WHERE (state = $1 AND expires_at <= $2) OR (state <> $1 AND created_at < $3)`,
			memory.PlanPlanned, ms(now), ms(now.Add(-memory.KeepPlans(r)))); err != nil {
			return err
		}
		if r.ExecutionsMaxAge > 0 {
			if err := exec(&rep.Merges, `DELETE FROM memory_merges WHERE merged_at < $1`, ms(now.Add(-r.ExecutionsMaxAge))); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM memory_code_log WHERE seq <= (SELECT max(seq) FROM memory_code_log) - $1`, codeLogKeep); err != nil {
			return err
		}
		if r.EpisodicMaxAge <= 0 {
			return nil
		}
		rows, err := tx.Query(ctx, `SELECT principal, array_agg(id ORDER BY id) FROM memories WHERE layer = 'episodic'
			AND coalesce(occurred_at, created_at) < $1 GROUP BY principal ORDER BY principal`, ms(now.Add(-r.EpisodicMaxAge)))
		if err != nil {
			return err
		}
		type old struct {
			principal string
			ids       []int64
		}
		olds, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (old, error) {
			var o old
			err := r.Scan(&o.principal, &o.ids)
			return o, err
		})
		if err != nil || len(olds) == 0 {
			return err
		}
		if err := lockCodes(ctx, tx); err != nil {
			return err
		}
		for _, o := range olds {
			if err := deleteMemories(ctx, tx, o.principal, o.ids); err != nil {
				return err
			}
			rep.Episodic += int64(len(o.ids))
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
