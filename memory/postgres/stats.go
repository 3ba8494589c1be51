package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Stats returns statistics of the whole database, every principal
// included. Path names the database (host, port, database name; never
// credentials) and FileBytes is its size on disk.
func (s *Store) Stats(ctx context.Context) (memory.StoreStats, error) {
	cc := s.pool.Config().ConnConfig
	st := memory.StoreStats{Path: fmt.Sprintf("postgres://%s:%d/%s", cc.Host, cc.Port, cc.Database), Layers: map[memory.Layer]int{}}
	for _, l := range memory.Layers {
		st.Layers[l] = 0
	}
	st.Embedder, _ = s.EmbedderStatus(ctx)
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		var err error
		if st.Memories, err = countLayers(ctx, tx, st.Layers, ``); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT pg_database_size(current_database()), (SELECT coalesce(max(version), 0) FROM schema_migrations),
			(SELECT count(*) FROM (SELECT principal FROM memories UNION SELECT principal FROM entities UNION SELECT principal FROM workspace_files
				UNION SELECT principal FROM skills UNION SELECT owner FROM published_skills UNION SELECT principal FROM results
				UNION SELECT principal FROM executions) p),
			(SELECT count(*) FROM entities), (SELECT count(*) FROM relations), (SELECT count(*) FROM executions), (SELECT count(*) FROM tool_calls),
			(SELECT count(*) FROM skills), (SELECT count(*) FROM published_skills),
			(SELECT count(*) FROM results), (SELECT coalesce(sum(stored_size), 0) FROM results),
			(SELECT count(*) FROM workspace_files), (SELECT coalesce(sum(size), 0) FROM workspace_files)`).Scan(
			&st.FileBytes, &st.SchemaVersion, &st.Principals, &st.Entities, &st.Relations, &st.Executions, &st.ToolCalls,
			&st.Skills, &st.PublishedSkills, &st.Results, &st.ResultBytes, &st.Files, &st.FileBytesRaw)
	})
	if err != nil {
		return memory.StoreStats{}, fmt.Errorf("stats: %w", err)
	}
	return st, nil
}

// MemoryStats returns the caller's memory statistics, as
// sqlite.Store.MemoryStats does.
func (s *Store) MemoryStats(ctx context.Context) (memory.MemoryStats, error) {
	principal := tools.CallerFrom(ctx).Principal
	st := memory.MemoryStats{Layers: map[memory.Layer]int{}, Tasks: map[string]int{}, TopTags: []memory.TagCount{}}
	for _, l := range memory.Layers {
		st.Layers[l] = 0
	}
	for _, t := range memory.TaskStatuses {
		st.Tasks[string(t)] = 0
	}
	st.Tasks["overdue"] = 0
	s.vmu.RLock()
	st.Embedder = map[string]any{"name": s.emb.Name(), "dimensions": s.emb.Dimensions(), "exact_search_limit": s.cfg.ExactSearchLimit}
	if s.vecErr != nil {
		st.Embedder["error"] = s.vecErr.Error()
	}
	s.vmu.RUnlock()
	now := ms(s.now())
	err := s.beginFunc(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if st.Memories, err = countLayers(ctx, tx, st.Layers, `WHERE principal = $1`, principal); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT status, count(*), count(*) FILTER (WHERE due_at < $1 AND status IN ('open', 'in_progress'))
			FROM memories WHERE principal = $2 AND layer = 'prospective' GROUP BY status`, now, principal)
		if err != nil {
			return err
		}
		var status string
		var n, overdue int
		if _, err := pgx.ForEachRow(rows, []any{&status, &n, &overdue}, func() error {
			st.Tasks[status] = n
			st.Tasks["overdue"] += overdue
			return nil
		}); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT t.tag, count(*) AS n FROM memory_tags t JOIN memories m ON m.id = t.memory_id
			WHERE m.principal = $1 GROUP BY t.tag ORDER BY n DESC, t.tag COLLATE "C" LIMIT 10`, principal)
		if err != nil {
			return err
		}
		var tc memory.TagCount
		if _, err := pgx.ForEachRow(rows, []any{&tc.Tag, &tc.Count}, func() error {
			st.TopTags = append(st.TopTags, tc)
			return nil
		}); err != nil {
			return err
		}
		// Each tag with the provenance of the memories carrying it: a
		// tag is data of its memory's sources (issue 19, attack18 K5).
		if len(st.TopTags) > 0 {
			names := make([]string, len(st.TopTags))
			for i, tc := range st.TopTags {
				names[i] = tc.Tag
			}
			rows, err = tx.Query(ctx, `SELECT DISTINCT t.tag, m.provenance FROM memory_tags t JOIN memories m ON m.id = t.memory_id
				WHERE m.principal = $1 AND m.provenance IS NOT NULL AND t.tag = ANY($2)`, principal, names)
			if err != nil {
				return err
			}
			var tag string
			var prov *string
			if _, err := pgx.ForEachRow(rows, []any{&tag, &prov}, func() error {
				memory.AddTagProvenance(st.TopTags, tag, provOf(prov))
				return nil
			}); err != nil {
				return err
			}
		}
		var oldest, newest *int64
		if err := tx.QueryRow(ctx, `SELECT min(created_at), max(created_at) FROM memories WHERE principal = $1`, principal).Scan(&oldest, &newest); err != nil {
			return err
		}
		st.Oldest, st.Newest = timePtr(oldest), timePtr(newest)
		return tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM entities WHERE principal = $1), (SELECT count(*) FROM relations WHERE principal = $1),
			(SELECT count(*) FROM memory_merges WHERE principal = $1)`, principal).Scan(&st.Entities, &st.Relations, &st.Merged)
	})
	if err != nil {
		return memory.MemoryStats{}, fmt.Errorf("memory stats: %w", err)
	}
	return st, nil
}

// countLayers counts memories by layer into layers, over those the WHERE
// clause cond selects (all for ""), and returns the total.
func countLayers(ctx context.Context, q querier, layers map[memory.Layer]int, cond string, args ...any) (int, error) {
	rows, err := q.Query(ctx, `SELECT layer, count(*) FROM memories `+cond+` GROUP BY layer`, args...)
	if err != nil {
		return 0, err
	}
	total := 0
	var l string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&l, &n}, func() error {
		layers[memory.Layer(l)] = n
		total += n
		return nil
	})
	return total, err
}
