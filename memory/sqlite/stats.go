package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"fmt"
	"os"

	"github.com/codecell/codecell/tools"
)

// MemoryStats returns the caller's memory statistics.
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
	if s.vecOK != nil {
		st.Embedder["error"] = s.vecOK.Error()
	}
	s.vmu.RUnlock()
	now := ms(s.now())
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		if st.Memories, err = countLayers(ctx, tx, st.Layers, `WHERE principal = ?`, principal); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT status, count(*), sum(CASE WHEN due_at < ? AND status IN ('open', 'in_progress') THEN 1 ELSE 0 END)
			FROM memories WHERE principal = ? AND layer = 'prospective' GROUP BY status`, now, principal)
		if err != nil {
			return err
		}
		for rows.Next() {
			var status string
			var n, overdue int
			if err := rows.Scan(&status, &n, &overdue); err != nil {
				rows.Close()
				return err
			}
			st.Tasks[status] = n
			st.Tasks["overdue"] += overdue
		}
		rows.Close()
		rows, err = tx.QueryContext(ctx, `SELECT t.tag, count(*) AS n FROM memory_tags t JOIN memories m ON m.id = t.memory_id
			WHERE m.principal = ? GROUP BY t.tag ORDER BY n DESC, t.tag LIMIT 10`, principal)
		if err != nil {
			return err
		}
		for rows.Next() {
			var tc memory.TagCount
			if err := rows.Scan(&tc.Tag, &tc.Count); err != nil {
				rows.Close()
				return err
			}
			st.TopTags = append(st.TopTags, tc)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if err := topTagsProvenance(ctx, tx, principal, st.TopTags); err != nil {
			return err
		}
		var oldest, newest sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT min(created_at), max(created_at) FROM memories WHERE principal = ?`, principal).Scan(&oldest, &newest); err != nil {
			return err
		}
		st.Oldest, st.Newest = timePtr(oldest), timePtr(newest)
		for q, dst := range map[string]*int{
			`SELECT count(*) FROM entities WHERE principal = ?`:      &st.Entities,
			`SELECT count(*) FROM relations WHERE principal = ?`:     &st.Relations,
			`SELECT count(*) FROM memory_merges WHERE principal = ?`: &st.Merged,
		} {
			if err := tx.QueryRowContext(ctx, q, principal).Scan(dst); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return memory.MemoryStats{}, fmt.Errorf("memory stats: %w", err)
	}
	return st, nil
}

// Stats returns statistics of the whole database.
func (s *Store) Stats(ctx context.Context) (memory.StoreStats, error) {
	st := memory.StoreStats{Path: s.path, Layers: map[memory.Layer]int{}}
	for _, l := range memory.Layers {
		st.Layers[l] = 0
	}
	st.Embedder, _ = s.EmbedderStatus(ctx)
	if s.path != InMemory {
		for _, suffix := range []string{"", "-wal"} {
			if fi, err := os.Stat(s.path + suffix); err == nil {
				st.FileBytes += fi.Size()
			}
		}
	}
	err := s.read(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&st.SchemaVersion); err != nil {
			return err
		}
		var err error
		if st.Memories, err = countLayers(ctx, tx, st.Layers, ``); err != nil {
			return err
		}
		for q, dst := range map[string]any{
			`SELECT count(*) FROM (SELECT principal FROM memories UNION SELECT principal FROM entities UNION SELECT principal FROM workspace_files
				UNION SELECT principal FROM skills UNION SELECT owner FROM published_skills UNION SELECT principal FROM results
				UNION SELECT principal FROM executions)`: &st.Principals,
			`SELECT count(*) FROM entities`:         &st.Entities,
			`SELECT count(*) FROM relations`:        &st.Relations,
			`SELECT count(*) FROM executions`:       &st.Executions,
			`SELECT count(*) FROM tool_calls`:       &st.ToolCalls,
			`SELECT count(*) FROM skills`:           &st.Skills,
			`SELECT count(*) FROM published_skills`: &st.PublishedSkills,
		} {
			if err := tx.QueryRowContext(ctx, q).Scan(dst); err != nil {
				return err
			}
		}
		if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(stored_size), 0) FROM results`).Scan(&st.Results, &st.ResultBytes); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(size), 0) FROM workspace_files`).Scan(&st.Files, &st.FileBytesRaw)
	})
	if err != nil {
		return memory.StoreStats{}, fmt.Errorf("stats: %w", err)
	}
	return st, nil
}

// countLayers counts memories by layer into layers, over those that the
// WHERE clause where selects (all for ""), and returns the total.
func countLayers(ctx context.Context, tx *sql.Tx, layers map[memory.Layer]int, where string, args ...any) (int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT layer, count(*) FROM memories `+where+` GROUP BY layer`, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	total := 0
	for rows.Next() {
		var l string
		var n int
		if err := rows.Scan(&l, &n); err != nil {
			return 0, err
		}
		layers[memory.Layer(l)] = n
		total += n
	}
	return total, rows.Err()
}

// topTagsProvenance gives each of tags the provenance of the principal's
// memories that carry it: each distinct provenance once per tag.
func topTagsProvenance(ctx context.Context, tx *sql.Tx, principal string, tags []memory.TagCount) error {
	if len(tags) == 0 {
		return nil
	}
	args := []any{principal}
	for _, tc := range tags {
		args = append(args, tc.Tag)
	}
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT t.tag, m.provenance FROM memory_tags t JOIN memories m ON m.id = t.memory_id
		WHERE m.principal = ? AND m.provenance IS NOT NULL AND t.tag IN (`+placeholders(len(tags))+`)`, args...)
	if err != nil {
		return fmt.Errorf("top tags' provenance: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var tag string
		var prov sql.NullString
		if err := rows.Scan(&tag, &prov); err != nil {
			return err
		}
		memory.AddTagProvenance(tags, tag, provenanceOf(prov))
	}
	return rows.Err()
}
