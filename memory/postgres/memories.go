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

// Remember stores a new memory for the caller's principal.
func (s *Store) Remember(ctx context.Context, in memory.RememberInput) (memory.Memory, error) {
	ms, err := s.RememberBatch(ctx, []memory.RememberInput{in})
	if err != nil {
		return memory.Memory{}, err
	}
	return ms[0], nil
}

// RememberBatch stores several memories in one transaction: all or none.
func (s *Store) RememberBatch(ctx context.Context, ins []memory.RememberInput) ([]memory.Memory, error) {
	if len(ins) == 0 {
		return []memory.Memory{}, nil
	}
	principal := tools.CallerFrom(ctx).Principal
	now := s.now().UTC().Truncate(time.Millisecond)
	ps := make([]memory.PreparedMemory, len(ins))
	texts := make([]string, len(ins))
	for i, in := range ins {
		field := ""
		if len(ins) > 1 {
			field = fmt.Sprintf("memories[%d].", i)
		}
		p, err := memory.PrepareMemory(ctx, in, s.lim, now, field)
		if err != nil {
			return nil, err
		}
		ps[i], texts[i] = p, p.Text
	}
	release, err := s.vectorsReady(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	vs, err := memory.Embed(ctx, s.emb, texts)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(ps))
	err = s.txWithin(ctx, principal, func(tx pgx.Tx) error {
		if err := lockCodes(ctx, tx); err != nil {
			return err
		}
		for i, p := range ps {
			if ids[i], err = s.insertMemory(ctx, tx, principal, p, vs[i], now, now, ""); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO memory_counts (principal, n) VALUES ($1, $2)
			ON CONFLICT (principal) DO UPDATE SET n = memory_counts.n + excluded.n`, principal, len(ps))
		return err
	})
	if err != nil {
		var te *tools.Error
		if errors.As(err, &te) {
			return nil, te
		}
		return nil, fmt.Errorf("remember: %w", err)
	}
	return s.loadMemories(ctx, s.db, principal, ids)
}

// insertMemory inserts a prepared memory with its vector, code, pgvector
// embedding (when the database has them), tags and entity links; uid ""
// gives it a new stable identity. The caller holds codesLock and vmu to
// read, and counts it in memory_counts.
func (s *Store) insertMemory(ctx context.Context, tx pgx.Tx, principal string, p memory.PreparedMemory, v []float32, created, updated time.Time, uid string) (int64, error) {
	in := p.Input
	if uid == "" {
		uid = memory.NewID()
	}
	var status *string
	if in.Layer == memory.Prospective {
		st := string(in.Status)
		status = &st
	}
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO memories
		(principal, layer, content, tags, metadata, importance, source, session, occurred_at, due_at, status, created_at, updated_at, provenance, uid, tsv)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $16, $13, $14, to_tsvector('english', $3 || ' ' || $15)) RETURNING id`,
		principal, string(in.Layer), in.Content, memory.EncodeTags(in.Tags), string(p.Metadata), p.Importance, in.Source, in.Session,
		nullMS(in.OccurredAt), nullMS(in.DueAt), status, ms(created), provArg(p.Provenance), uid, joinTags(in.Tags), ms(updated)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("insert memory: %w", err)
	}
	for _, t := range in.Tags {
		if _, err := tx.Exec(ctx, `INSERT INTO memory_tags (tag, memory_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, t, id); err != nil {
			return 0, fmt.Errorf("insert tags: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO memory_vectors (memory_id, principal, layer, embedding) VALUES ($1, $2, $3, $4)`,
		id, principal, string(in.Layer), memory.EncodeVector(v)); err != nil {
		return 0, fmt.Errorf("insert vector: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO memory_codes (memory_id, principal, layer, code) VALUES ($1, $2, $3, $4)`,
		id, principal, string(in.Layer), s.quant.Code(v)); err != nil {
		return 0, fmt.Errorf("insert code: %w", err)
	}
	if s.fillEmb {
		if err := putEmbedding(ctx, tx, id, v); err != nil {
			return 0, err
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO memory_code_log (memory_id, principal) VALUES ($1, $2)`, id, principal); err != nil {
		return 0, fmt.Errorf("log code: %w", err)
	}
	if err := linkEntities(ctx, tx, principal, id, in.Entities, created); err != nil {
		return 0, err
	}
	return id, nil
}

const memoryColumns = `m.id, m.layer, m.content, m.tags, m.metadata, m.importance, m.source, m.session,
	m.occurred_at, m.due_at, m.status, m.created_at, m.updated_at, m.accessed_at, m.access_count, m.provenance`

func scanMemory(sc interface{ Scan(...any) error }) (memory.Memory, error) {
	var m memory.Memory
	var layer, tags, meta string
	var occurred, due, accessed *int64
	var status, prov *string
	var created, updated int64
	if err := sc.Scan(&m.ID, &layer, &m.Content, &tags, &meta, &m.Importance, &m.Source, &m.Session,
		&occurred, &due, &status, &created, &updated, &accessed, &m.AccessCount, &prov); err != nil {
		return m, err
	}
	m.Layer, m.Tags, m.Metadata, m.Provenance = memory.Layer(layer), memory.DecodeTags(tags), []byte(meta), provOf(prov)
	m.OccurredAt, m.DueAt, m.AccessedAt = timePtr(occurred), timePtr(due), timePtr(accessed)
	if status != nil {
		m.Status = memory.TaskStatus(*status)
	}
	m.CreatedAt, m.UpdatedAt = fromMS(created), fromMS(updated)
	return m, nil
}

// querier is what the pool and a transaction have in common.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// loadMemories returns the principal's memories of ids, with their
// entities, in the order of ids; missing ids are skipped.
func (s *Store) loadMemories(ctx context.Context, q querier, principal string, ids []int64) ([]memory.Memory, error) {
	out := []memory.Memory{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `SELECT `+memoryColumns+`,
		coalesce((SELECT array_agg(e.name ORDER BY e.name) FROM memory_entities me JOIN entities e ON e.id = me.entity_id WHERE me.memory_id = m.id), '{}')
		FROM memories m WHERE m.principal = $1 AND m.id = ANY($2)`, principal, ids)
	if err != nil {
		return nil, fmt.Errorf("load memories: %w", err)
	}
	byID := map[int64]memory.Memory{}
	for rows.Next() {
		var ents []string
		m, err := scanMemory(prefixScan{rows, &ents})
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("load memories: %w", err)
		}
		if len(ents) > 0 {
			m.Entities = ents
		}
		byID[m.ID] = m
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load memories: %w", err)
	}
	for _, id := range ids {
		if m, ok := byID[id]; ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// prefixScan scans a memory's columns followed by one more.
type prefixScan struct {
	rows  pgx.Rows
	extra any
}

func (p prefixScan) Scan(dest ...any) error { return p.rows.Scan(append(dest, p.extra)...) }

// Get returns the caller's memory id and counts the access.
func (s *Store) Get(ctx context.Context, id int64) (memory.Memory, error) {
	principal := tools.CallerFrom(ctx).Principal
	ms, err := s.loadMemories(ctx, s.db, principal, []int64{id})
	if err != nil {
		return memory.Memory{}, err
	}
	if len(ms) == 0 {
		var survivor int64
		if s.db.QueryRow(ctx, `SELECT survivor_id FROM memory_merges WHERE merged_id = $1 AND principal = $2`, id, principal).Scan(&survivor) == nil {
			return memory.Memory{}, memory.NotFound("memory %d was merged into memory %d by consolidation; get %d instead", id, survivor, survivor)
		}
		return memory.Memory{}, memory.NotFound("memory %d not found", id)
	}
	m := ms[0]
	if m.MergedFrom, err = loadMerges(ctx, s.db, id); err != nil {
		return memory.Memory{}, err
	}
	if err := s.touch(ctx, []int64{id}); err != nil {
		return memory.Memory{}, err
	}
	m.AccessCount++
	t := s.now().UTC().Truncate(time.Millisecond)
	m.AccessedAt = &t
	return m, nil
}

func (s *Store) touch(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.db.Exec(ctx, `UPDATE memories SET accessed_at = $1, access_count = access_count + 1 WHERE id = ANY($2)`, ms(s.now()), ids)
	if err != nil {
		return fmt.Errorf("touch: %w", err)
	}
	return nil
}

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
		err = s.txWithin(ctx, principal, func(tx pgx.Tx) error {
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
			// The update's sources join the stored ones: what it keeps of
			// the memory is still data of the sources it came from (issue
			// 19, attack18 K3).
			var status *string
			if next.Layer == memory.Prospective {
				st := string(next.Status)
				status = &st
			}
			if _, err := tx.Exec(ctx, `UPDATE memories SET layer = $1, content = $2, tags = $3, metadata = $4, importance = $5, source = $6,
				occurred_at = $7, due_at = $8, status = $9, updated_at = $10, provenance = $11,
				tsv = to_tsvector('english', $2 || ' ' || $12) WHERE id = $13`,
				string(next.Layer), next.Content, memory.EncodeTags(next.Tags), string(next.Metadata), next.Importance, next.Source,
				nullMS(next.OccurredAt), nullMS(next.DueAt), status, max(ms(now), updated+1), provArg(memory.UnionProvenance(cur.Provenance, prov)), joinTags(next.Tags), in.ID); err != nil {
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
	ms, err := s.loadMemories(ctx, s.db, principal, []int64{id})
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
