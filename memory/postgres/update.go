package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Update applies in to the caller's memory and returns the result, as
// sqlite.Store.Update does: the change is computed and re-embedded outside
// the transaction, and applied only if the memory did not change
// meanwhile (else it is computed again, up to five times).
func (s *Store) Update(ctx context.Context, in memory.UpdateInput) (memory.Memory, error) {
	principal := tools.CallerFrom(ctx).Principal
	if in.ID <= 0 {
		return memory.Memory{}, memory.Invalid("id must be a positive memory id")
	}
	prov, err := memory.Provenance(ctx, in.Provenance, "", s.lim)
	if err != nil {
		return memory.Memory{}, err
	}
	var entities []string
	if in.Entities != nil {
		if entities, err = memory.NormalizeEntities(*in.Entities); err != nil {
			return memory.Memory{}, err
		}
	}
	addEntities, err := memory.NormalizeEntities(in.AddEntities)
	if err != nil {
		return memory.Memory{}, err
	}
	release, err := s.vectorsReady(ctx)
	if err != nil {
		return memory.Memory{}, err
	}
	defer release()
	for attempt := 0; ; attempt++ {
		cur, err := s.peek(ctx, principal, in.ID)
		if err != nil {
			return memory.Memory{}, err
		}
		next, err := memory.ApplyUpdate(cur, in, s.lim)
		if err != nil {
			return memory.Memory{}, err
		}
		var vec []float32
		reembed := next.Content != cur.Content || !slices.Equal(next.Tags, cur.Tags)
		if reembed {
			vs, err := memory.Embed(ctx, s.emb, []string{memory.EmbedText(next.Content, next.Tags)})
			if err != nil {
				return memory.Memory{}, err
			}
			vec = vs[0]
		}
		now := s.now().UTC().Truncate(time.Millisecond)
		stale := false
		err = s.tx(ctx, func(tx pgx.Tx) error {
			if reembed || next.Layer != cur.Layer {
				if err := lockCodes(ctx, tx); err != nil {
					return err
				}
			}
			var updated int64
			err := tx.QueryRow(ctx, `SELECT updated_at FROM memories WHERE id = $1 AND principal = $2 FOR UPDATE`, in.ID, principal).Scan(&updated)
			if errors.Is(err, pgx.ErrNoRows) {
				return memory.NotFound("memory %d not found", in.ID)
			}
			if err != nil {
				return err
			}
			if updated != ms(cur.UpdatedAt) {
				stale = true
				return nil
			}
			var status *string
			if next.Layer == memory.Prospective {
				st := string(next.Status)
				status = &st
			}
			if _, err := tx.Exec(ctx, `UPDATE memories SET layer = $1, content = $2, tags = $3, metadata = $4, importance = $5, source = $6,
				occurred_at = $7, due_at = $8, status = $9, updated_at = $10, provenance = coalesce($11, provenance),
				tsv = to_tsvector('english', $2 || ' ' || $12) WHERE id = $13`,
				string(next.Layer), next.Content, memory.EncodeTags(next.Tags), string(next.Metadata), next.Importance, next.Source,
				nullMS(next.OccurredAt), nullMS(next.DueAt), status, max(ms(now), updated+1), provArg(prov), joinTags(next.Tags), in.ID); err != nil {
				return err
			}
			if !slices.Equal(next.Tags, cur.Tags) {
				if err := writeTags(ctx, tx, in.ID, next.Tags); err != nil {
					return err
				}
			}
			if reembed {
				if err := s.putVector(ctx, tx, in.ID, principal, next.Layer, vec); err != nil {
					return err
				}
			} else if next.Layer != cur.Layer {
				if err := relayer(ctx, tx, in.ID, principal, next.Layer); err != nil {
					return err
				}
			}
			if in.Entities != nil {
				if _, err := tx.Exec(ctx, `DELETE FROM memory_entities WHERE memory_id = $1`, in.ID); err != nil {
					return err
				}
				if err := linkEntities(ctx, tx, principal, in.ID, entities, now); err != nil {
					return err
				}
			}
			return linkEntities(ctx, tx, principal, in.ID, addEntities, now)
		})
		if err != nil {
			var te *tools.Error
			if errors.As(err, &te) {
				return memory.Memory{}, te
			}
			return memory.Memory{}, fmt.Errorf("update memory: %w", err)
		}
		if stale {
			if attempt < 5 {
				continue
			}
			return memory.Memory{}, memory.Conflict("memory %d keeps changing under concurrent updates; try again", in.ID)
		}
		return s.peek(ctx, principal, in.ID)
	}
}

// joinTags is the tags' part of the text the tsv column indexes.
func joinTags(tags []string) string { return strings.Join(tags, " ") }

// peek reads the principal's memory id without counting an access.
func (s *Store) peek(ctx context.Context, principal string, id int64) (memory.Memory, error) {
	if s.closed.Load() {
		return memory.Memory{}, memory.ErrClosed
	}
	ms, err := s.loadMemories(ctx, s.pool, principal, []int64{id})
	if err != nil {
		return memory.Memory{}, err
	}
	if len(ms) == 0 {
		return memory.Memory{}, memory.NotFound("memory %d not found", id)
	}
	return ms[0], nil
}

// writeTags replaces the tag rows of memory id.
func writeTags(ctx context.Context, tx pgx.Tx, id int64, tags []string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM memory_tags WHERE memory_id = $1`, id); err != nil {
		return fmt.Errorf("write tags: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO memory_tags (tag, memory_id) SELECT DISTINCT unnest($1::text[]), $2::bigint`, tags, id); err != nil {
		return fmt.Errorf("write tags: %w", err)
	}
	return nil
}

// putVector stores v as memory id's vector, binary code and pgvector
// embedding (when the database has them), replacing any it had, and logs
// the change of code. The caller holds codesLock and vmu.
func (s *Store) putVector(ctx context.Context, tx pgx.Tx, id int64, principal string, layer memory.Layer, v []float32) error {
	if _, err := tx.Exec(ctx, `INSERT INTO memory_vectors (memory_id, principal, layer, embedding) VALUES ($1, $2, $3, $4)
		ON CONFLICT (memory_id) DO UPDATE SET principal = excluded.principal, layer = excluded.layer, embedding = excluded.embedding`,
		id, principal, string(layer), memory.EncodeVector(v)); err != nil {
		return fmt.Errorf("store vector of memory %d: %w", id, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO memory_codes (memory_id, principal, layer, code) VALUES ($1, $2, $3, $4)
		ON CONFLICT (memory_id) DO UPDATE SET principal = excluded.principal, layer = excluded.layer, code = excluded.code`,
		id, principal, string(layer), s.quant.Code(v)); err != nil {
		return fmt.Errorf("store code of memory %d: %w", id, err)
	}
	if s.fillEmb {
		if err := putEmbedding(ctx, tx, id, v); err != nil {
			return err
		}
	}
	return logCodes(ctx, tx, principal, []int64{id})
}

// relayer moves memory id's vector and code to another layer. The caller
// holds codesLock.
func relayer(ctx context.Context, tx pgx.Tx, id int64, principal string, layer memory.Layer) error {
	if _, err := tx.Exec(ctx, `UPDATE memory_vectors SET layer = $1 WHERE memory_id = $2`, string(layer), id); err != nil {
		return fmt.Errorf("move vector: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE memory_codes SET layer = $1 WHERE memory_id = $2`, string(layer), id); err != nil {
		return fmt.Errorf("move code: %w", err)
	}
	return logCodes(ctx, tx, principal, []int64{id})
}

// logCodes records that the codes of ids changed (or went). The caller
// holds codesLock.
func logCodes(ctx context.Context, tx pgx.Tx, principal string, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO memory_code_log (memory_id, principal) SELECT unnest($1::bigint[]), $2::text`, ids, principal); err != nil {
		return fmt.Errorf("log codes: %w", err)
	}
	return nil
}

// Forget deletes the caller's memories chosen by in (ids, or a filter,
// Before, All), with their vectors, tags and links, as
// sqlite.Store.Forget does.
func (s *Store) Forget(ctx context.Context, in memory.ForgetInput) (memory.ForgetResult, error) {
	principal := tools.CallerFrom(ctx).Principal
	if _, err := memory.CheckForget(&in); err != nil {
		return memory.ForgetResult{}, err
	}
	res := memory.ForgetResult{IDs: []int64{}, DryRun: in.DryRun}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if !in.DryRun {
			if err := lockCodes(ctx, tx); err != nil {
				return err
			}
		}
		var rows pgx.Rows
		var err error
		if len(in.IDs) > 0 {
			rows, err = tx.Query(ctx, `SELECT id FROM memories WHERE principal = $1 AND id = ANY($2) ORDER BY id`, principal, in.IDs)
		} else {
			cond, args := where(principal, in.Filter, 1)
			if in.Before != nil {
				args = append(args, ms(*in.Before))
				cond += fmt.Sprintf(" AND m.created_at < $%d", len(args))
			}
			rows, err = tx.Query(ctx, `SELECT m.id FROM memories m WHERE `+cond+` ORDER BY m.id`, args...)
		}
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if len(in.IDs) > 0 {
			want := slices.Clone(in.IDs)
			slices.Sort(want)
			for _, id := range slices.Compact(want) {
				if _, found := slices.BinarySearch(ids, id); !found {
					res.NotFound = append(res.NotFound, id)
				}
			}
		}
		res.IDs = append(res.IDs, ids...)
		res.Deleted = len(ids)
		if in.DryRun {
			return nil
		}
		return deleteMemories(ctx, tx, principal, ids)
	})
	if err != nil {
		return memory.ForgetResult{}, fmt.Errorf("forget: %w", err)
	}
	return res, nil
}

// deleteMemories removes memories of principal and what hangs off them,
// logs their codes' removal and updates the count. The caller holds
// codesLock.
func deleteMemories(ctx context.Context, tx pgx.Tx, principal string, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	tag, err := tx.Exec(ctx, `DELETE FROM memories WHERE principal = $1 AND id = ANY($2)`, principal, ids)
	if err != nil {
		return fmt.Errorf("delete memories: %w", err)
	}
	if err := logCodes(ctx, tx, principal, ids); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE memory_counts SET n = n - $2 WHERE principal = $1`, principal, tag.RowsAffected()); err != nil {
		return fmt.Errorf("delete memories: %w", err)
	}
	return nil
}

// loadMerges returns what consolidation merged into survivor.
func loadMerges(ctx context.Context, q querier, survivor int64) ([]memory.MergedMemory, error) {
	rows, err := q.Query(ctx, `SELECT merged_id, record, similarity, overlap, merged_at FROM memory_merges WHERE survivor_id = $1 ORDER BY merged_id`, survivor)
	if err != nil {
		return nil, fmt.Errorf("load merges: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.MergedMemory, error) {
		var id, at int64
		var rec string
		var sim, ov float64
		if err := r.Scan(&id, &rec, &sim, &ov, &at); err != nil {
			return memory.MergedMemory{}, err
		}
		return memory.MergedOf(id, rec, sim, ov, fromMS(at)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("load merges: %w", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
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
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
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
