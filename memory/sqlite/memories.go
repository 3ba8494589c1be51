package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/codecell/codecell/tools"
)

// Remember stores a new memory for the caller's principal and returns it.
func (s *Store) Remember(ctx context.Context, in memory.RememberInput) (memory.Memory, error) {
	ms, err := s.RememberBatch(ctx, []memory.RememberInput{in})
	if err != nil {
		return memory.Memory{}, err
	}
	return ms[0], nil
}

// RememberBatch stores several memories in one transaction, embedding them
// in one call: all or none are stored.
func (s *Store) RememberBatch(ctx context.Context, ins []memory.RememberInput) ([]memory.Memory, error) {
	if len(ins) == 0 {
		return nil, nil
	}
	principal := tools.CallerFrom(ctx).Principal
	ps := make([]memory.PreparedMemory, len(ins))
	texts := make([]string, len(ins))
	for i, in := range ins {
		field := ""
		if len(ins) > 1 {
			field = fmt.Sprintf("items[%d].", i)
		}
		p, err := memory.PrepareMemory(ctx, in, s.lim, s.now(), field)
		if err != nil {
			return nil, err
		}
		ps[i] = p
		texts[i] = p.Text
	}
	s.vmu.RLock()
	defer s.vmu.RUnlock()
	if err := s.vectorsReady(); err != nil {
		return nil, err
	}
	vs, err := memory.Embed(ctx, s.emb, texts)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	ids := make([]int64, len(ps))
	err = s.writeWithin(ctx, principal, func(tx *sql.Tx) error {
		fts, err := ensureFTSTable(ctx, tx, principal)
		if err != nil {
			return err
		}
		for i, p := range ps {
			id, err := s.insertMemory(ctx, tx, principal, fts, p, vs[i], now, now)
			if err != nil {
				return err
			}
			ids[i] = id
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("remember: %w", err)
	}
	out := make([]memory.Memory, len(ps))
	for i, p := range ps {
		out[i] = memory.Memory{
			ID: ids[i], Layer: p.Input.Layer, Content: p.Input.Content, Tags: p.Input.Tags, Metadata: p.Metadata,
			Importance: p.Importance, Source: p.Input.Source, Session: p.Input.Session,
			OccurredAt: memory.StoredTime(p.Input.OccurredAt), DueAt: memory.StoredTime(p.Input.DueAt), Status: p.Input.Status,
			Entities: p.Input.Entities, Provenance: p.Provenance, CreatedAt: now, UpdatedAt: now,
		}
	}
	return out, nil
}

// insertMemory writes one PreparedMemory memory, its tags, vector, code,
// full-text entry (in fts, the principal's index: ensureFTSTable) and
// entity links.
func (s *Store) insertMemory(ctx context.Context, tx *sql.Tx, principal, fts string, p memory.PreparedMemory, v []float32, created, updated time.Time) (int64, error) {
	tagsJSON := memory.EncodeTags(p.Input.Tags)
	uid := p.UID
	if uid == "" {
		uid = memory.NewID()
	}
	var status any
	if p.Input.Layer == memory.Prospective {
		status = string(p.Input.Status)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO memories
		(principal, layer, content, tags, metadata, importance, source, session, occurred_at, due_at, status, created_at, updated_at, provenance, uid)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		principal, string(p.Input.Layer), p.Input.Content, tagsJSON, string(p.Metadata), p.Importance, p.Input.Source, p.Input.Session,
		nullMS(p.Input.OccurredAt), nullMS(p.Input.DueAt), status, ms(created), ms(updated), provenanceArg(p.Provenance), uid)
	if err != nil {
		return 0, fmt.Errorf("insert memory: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("insert memory: %w", err)
	}
	if err := insertTags(ctx, tx, id, p.Input.Tags); err != nil {
		return 0, err
	}
	if err := putVector(ctx, tx, s.quant, id, principal, string(p.Input.Layer), v); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+fts+` (rowid, content, tags) VALUES (?, ?, ?)`, id, p.Input.Content, strings.Join(p.Input.Tags, " ")); err != nil {
		return 0, fmt.Errorf("index memory text: %w", err)
	}
	if len(p.Input.Entities) > 0 {
		if err := s.linkEntities(ctx, tx, principal, id, p.Input.Entities, created); err != nil {
			return 0, err
		}
	}
	return id, nil
}

// writeTags replaces the tags of memory id.
func writeTags(ctx context.Context, tx *sql.Tx, id int64, tags []string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM memory_tags WHERE memory_id = ?`, id); err != nil {
		return fmt.Errorf("write tags: %w", err)
	}
	return insertTags(ctx, tx, id, tags)
}

// insertTags adds tags to memory id, which has none yet.
func insertTags(ctx context.Context, tx *sql.Tx, id int64, tags []string) error {
	for _, t := range tags {
		if _, err := tx.ExecContext(ctx, `INSERT INTO memory_tags (tag, memory_id) VALUES (?, ?)`, t, id); err != nil {
			return fmt.Errorf("write tags: %w", err)
		}
	}
	return nil
}

const memoryColumns = `m.id, m.layer, m.content, m.tags, m.metadata, m.importance, m.source, m.session,
	m.occurred_at, m.due_at, m.status, m.created_at, m.updated_at, m.accessed_at, m.access_count, m.provenance`

// prefixScanner scans the leading columns of a row into first, the rest
// into what its Scan is given.
type prefixScanner struct {
	sc    interface{ Scan(...any) error }
	first []any
}

func (p prefixScanner) Scan(dest ...any) error {
	return p.sc.Scan(append(append([]any{}, p.first...), dest...)...)
}

func scanMemory(sc interface{ Scan(...any) error }) (memory.Memory, error) {
	var m memory.Memory
	var layer, tags, meta string
	var occurred, due, accessed sql.NullInt64
	var status, prov sql.NullString
	var created, updated int64
	if err := sc.Scan(&m.ID, &layer, &m.Content, &tags, &meta, &m.Importance, &m.Source, &m.Session,
		&occurred, &due, &status, &created, &updated, &accessed, &m.AccessCount, &prov); err != nil {
		return m, err
	}
	m.Provenance = provenanceOf(prov)
	m.Layer = memory.Layer(layer)
	m.Tags = memory.DecodeTags(tags)
	m.Metadata = json.RawMessage(meta)
	m.OccurredAt, m.DueAt, m.AccessedAt = timePtr(occurred), timePtr(due), timePtr(accessed)
	m.Status = memory.TaskStatus(status.String)
	m.CreatedAt, m.UpdatedAt = fromMS(created), fromMS(updated)
	return m, nil
}

// loadMemories returns the principal's memories with the given ids, with
// their entity names, in the order of ids; missing ids are skipped.
//
// Queries for a list of memory ids with "principal = ?" say NOT INDEXED:
// without statistics SQLite takes an index equality to select about ten
// rows, and would scan the (principal, …) index, the whole store, rather
// than look the ids up by rowid.
func loadMemories(ctx context.Context, q queryer, principal string, ids []int64) ([]memory.Memory, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	byID := make(map[int64]*memory.Memory, len(ids))
	list := make([]memory.Memory, 0, len(ids))
	for start := 0; start < len(ids); start += 500 {
		chunk := ids[start:min(start+500, len(ids))]
		args := make([]any, 0, len(chunk)+1)
		args = append(args, principal)
		for _, id := range chunk {
			args = append(args, id)
		}
		rows, err := q.QueryContext(ctx, `SELECT `+memoryColumns+` FROM memories m NOT INDEXED WHERE m.principal = ? AND m.id IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("load memories: %w", err)
		}
		for rows.Next() {
			m, err := scanMemory(rows)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("load memories: %w", err)
			}
			list = append(list, m)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("load memories: %w", err)
		}
		erows, err := q.QueryContext(ctx, `SELECT me.memory_id, e.name FROM memory_entities me JOIN entities e ON e.id = me.entity_id
			WHERE me.memory_id IN (`+placeholders(len(chunk))+`) ORDER BY me.memory_id, e.name COLLATE NOCASE`, args[1:]...)
		if err != nil {
			return nil, fmt.Errorf("load memory entities: %w", err)
		}
		ents := map[int64][]string{}
		for erows.Next() {
			var id int64
			var name string
			if err := erows.Scan(&id, &name); err != nil {
				erows.Close()
				return nil, fmt.Errorf("load memory entities: %w", err)
			}
			ents[id] = append(ents[id], name)
		}
		erows.Close()
		for i := range list {
			if e, ok := ents[list[i].ID]; ok {
				list[i].Entities = e
			}
		}
	}
	for i := range list {
		byID[list[i].ID] = &list[i]
	}
	out := make([]memory.Memory, 0, len(list))
	for _, id := range ids {
		if m, ok := byID[id]; ok {
			out = append(out, *m)
		}
	}
	return out, nil
}

func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?,", n-1) + "?"
}

// Get returns the caller's memory id, with the provenance of memories
// merged into it, and counts the access. A memory that consolidation
// merged into another is reported as not found, naming the survivor.
func (s *Store) Get(ctx context.Context, id int64) (memory.Memory, error) {
	principal := tools.CallerFrom(ctx).Principal
	var m memory.Memory
	var merged int64
	err := s.read(ctx, func(tx *sql.Tx) error {
		ms, err := loadMemories(ctx, tx, principal, []int64{id})
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			err := tx.QueryRowContext(ctx, `SELECT survivor_id FROM memory_merges WHERE merged_id = ? AND principal = ?`, id, principal).Scan(&merged)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("get memory: %w", err)
			}
			return nil
		}
		m = ms[0]
		m.MergedFrom, err = loadMerges(ctx, tx, id)
		return err
	})
	if err != nil {
		return memory.Memory{}, err
	}
	if m.ID == 0 {
		if merged != 0 {
			return memory.Memory{}, memory.NotFound("memory %d was merged into memory %d by consolidation; get %d instead", id, merged, merged)
		}
		return memory.Memory{}, memory.NotFound("memory %d not found", id)
	}
	if s.w == nil {
		return m, nil // read-only: no access is recorded
	}
	if err := s.touch(ctx, []int64{id}); err != nil {
		return memory.Memory{}, err
	}
	t := s.now().UTC().Truncate(time.Millisecond)
	m.AccessedAt = &t
	m.AccessCount++
	return m, nil
}

func loadMerges(ctx context.Context, q queryer, survivor int64) ([]memory.MergedMemory, error) {
	rows, err := q.QueryContext(ctx, `SELECT merged_id, record, similarity, overlap, merged_at FROM memory_merges WHERE survivor_id = ? ORDER BY merged_id`, survivor)
	if err != nil {
		return nil, fmt.Errorf("load merges: %w", err)
	}
	defer rows.Close()
	var out []memory.MergedMemory
	for rows.Next() {
		var id int64
		var rec string
		var sim, overlap float64
		var at int64
		if err := rows.Scan(&id, &rec, &sim, &overlap, &at); err != nil {
			return nil, fmt.Errorf("load merges: %w", err)
		}
		out = append(out, memory.MergedOf(id, rec, sim, overlap, fromMS(at)))
	}
	return out, rows.Err()
}

// touch records an access of the memories; a read-only store does not.
func (s *Store) touch(ctx context.Context, ids []int64) error {
	if len(ids) == 0 || s.w == nil {
		return nil
	}
	now := ms(s.now())
	return s.write(ctx, func(tx *sql.Tx) error {
		args := make([]any, 0, len(ids)+1)
		args = append(args, now)
		for _, id := range ids {
			args = append(args, id)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE memories SET accessed_at = ?, access_count = access_count + 1 WHERE id IN (`+placeholders(len(ids))+`)`, args...); err != nil {
			return fmt.Errorf("record access: %w", err)
		}
		return nil
	})
}

// Update applies in to the caller's memory and returns the result. A new
// content or new tags are re-embedded.
func (s *Store) Update(ctx context.Context, in memory.UpdateInput) (memory.Memory, error) {
	principal := tools.CallerFrom(ctx).Principal
	if in.ID <= 0 {
		return memory.Memory{}, memory.Invalid("id must be a positive memory id")
	}
	prov, err := memory.Provenance(ctx, in.Provenance, "", s.lim)
	if err != nil {
		return memory.Memory{}, err
	}
	s.vmu.RLock()
	defer s.vmu.RUnlock()
	if err := s.vectorsReady(); err != nil {
		return memory.Memory{}, err
	}
	// Embedding may be slow (a network call): do it outside the write
	// transaction, and apply only if the memory did not change meanwhile.
	for attempt := 0; ; attempt++ {
		var cur memory.Memory
		if err := s.read(ctx, func(tx *sql.Tx) error {
			ms, err := loadMemories(ctx, tx, principal, []int64{in.ID})
			if err != nil {
				return err
			}
			if len(ms) == 0 {
				return memory.NotFound("memory %d not found", in.ID)
			}
			cur = ms[0]
			return nil
		}); err != nil {
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
		now := s.now().UTC().Truncate(time.Millisecond)
		stale := false
		err = s.writeWithin(ctx, principal, func(tx *sql.Tx) error {
			var updated int64
			if err := tx.QueryRowContext(ctx, `SELECT updated_at FROM memories WHERE id = ? AND principal = ?`, in.ID, principal).Scan(&updated); err != nil {
				if errors.Is(err, sql.ErrNoRows) {
					return memory.NotFound("memory %d not found", in.ID)
				}
				return fmt.Errorf("update memory: %w", err)
			}
			if updated != ms(cur.UpdatedAt) {
				stale = true
				return nil
			}
			var status any
			if next.Layer == memory.Prospective {
				status = string(next.Status)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE memories SET layer = ?, content = ?, tags = ?, metadata = ?, importance = ?, source = ?,
				occurred_at = ?, due_at = ?, status = ?, updated_at = ? WHERE id = ?`,
				string(next.Layer), next.Content, memory.EncodeTags(next.Tags), string(next.Metadata), next.Importance, next.Source,
				nullMS(next.OccurredAt), nullMS(next.DueAt), status, max(ms(now), updated+1), in.ID); err != nil {
				return fmt.Errorf("update memory: %w", err)
			}
			// The update's sources join the stored ones: what it keeps of
			// the memory (its content, the metadata keys and tags it does
			// not touch) is still data of the sources it came from (issue
			// 19, attack18 K3).
			if prov != nil {
				if _, err := tx.ExecContext(ctx, `UPDATE memories SET provenance = ? WHERE id = ?`, provenanceArg(memory.UnionProvenance(cur.Provenance, prov)), in.ID); err != nil {
					return fmt.Errorf("update memory: %w", err)
				}
			}
			if !slices.Equal(next.Tags, cur.Tags) {
				if err := writeTags(ctx, tx, in.ID, next.Tags); err != nil {
					return err
				}
			}
			if reembed {
				if err := putVector(ctx, tx, s.quant, in.ID, principal, string(next.Layer), vec); err != nil {
					return err
				}
				if err := indexText(ctx, tx, principal, in.ID, next.Content, next.Tags, true); err != nil {
					return err
				}
			} else if next.Layer != cur.Layer {
				if _, err := tx.ExecContext(ctx, `UPDATE memory_vectors SET layer = ? WHERE memory_id = ?`, string(next.Layer), in.ID); err != nil {
					return fmt.Errorf("update memory: %w", err)
				}
				if _, err := tx.ExecContext(ctx, `UPDATE memory_codes SET layer = ? WHERE memory_id = ?`, string(next.Layer), in.ID); err != nil {
					return fmt.Errorf("update memory: %w", err)
				}
			}
			if in.Entities != nil {
				if _, err := tx.ExecContext(ctx, `DELETE FROM memory_entities WHERE memory_id = ?`, in.ID); err != nil {
					return fmt.Errorf("update memory entities: %w", err)
				}
				if err := s.linkEntities(ctx, tx, principal, in.ID, entities, now); err != nil {
					return err
				}
			}
			if len(addEntities) > 0 {
				if err := s.linkEntities(ctx, tx, principal, in.ID, addEntities, now); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return memory.Memory{}, err
		}
		if stale {
			if attempt < 5 {
				continue
			}
			return memory.Memory{}, &tools.Error{Code: memory.CodeConflict, Message: fmt.Sprintf("memory %d keeps changing under concurrent updates; try again", in.ID), Err: memory.ErrInvalid}
		}
		var out memory.Memory
		err = s.read(ctx, func(tx *sql.Tx) error {
			ms, err := loadMemories(ctx, tx, principal, []int64{in.ID})
			if err != nil {
				return err
			}
			if len(ms) == 0 {
				return memory.NotFound("memory %d not found", in.ID)
			}
			out = ms[0]
			return nil
		})
		return out, err
	}
}

// onlyLayers reports whether the filter selects by layer alone.
func onlyLayers(f memory.Filter) bool {
	return len(f.Tags) == 0 && f.Session == "" && f.Since == nil && f.Until == nil && f.Entity == ""
}

// filterWhere renders the filter as SQL over the memories table aliased m.
func filterWhere(f memory.Filter, principal string) (string, []any) {
	conds := []string{"m.principal = ?"}
	args := []any{principal}
	if len(f.Layers) > 0 {
		conds = append(conds, "m.layer IN ("+placeholders(len(f.Layers))+")")
		for _, l := range f.Layers {
			args = append(args, string(l))
		}
	}
	for _, t := range f.Tags {
		conds = append(conds, "EXISTS (SELECT 1 FROM memory_tags t WHERE t.tag = ? AND t.memory_id = m.id)")
		args = append(args, t)
	}
	if f.Session != "" {
		conds = append(conds, "m.session = ?")
		args = append(args, f.Session)
	}
	if f.Since != nil {
		conds = append(conds, "coalesce(m.occurred_at, m.created_at) >= ?")
		args = append(args, ms(*f.Since))
	}
	if f.Until != nil {
		conds = append(conds, "coalesce(m.occurred_at, m.created_at) < ?")
		args = append(args, ms(*f.Until))
	}
	if f.Entity != "" {
		conds = append(conds, `EXISTS (SELECT 1 FROM memory_entities me JOIN entities e ON e.id = me.entity_id
			WHERE me.memory_id = m.id AND e.principal = ? AND e.name = ? COLLATE NOCASE)`)
		args = append(args, principal, f.Entity)
	}
	return strings.Join(conds, " AND "), args
}

// Forget deletes the caller's memories chosen by in, with their vectors,
// tags and links, and reports how many.
func (s *Store) Forget(ctx context.Context, in memory.ForgetInput) (memory.ForgetResult, error) {
	principal := tools.CallerFrom(ctx).Principal
	if _, err := memory.CheckForget(&in); err != nil {
		return memory.ForgetResult{}, err
	}
	res := memory.ForgetResult{IDs: []int64{}, DryRun: in.DryRun}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var ids []int64
		if len(in.IDs) > 0 {
			want := slices.Clone(in.IDs)
			slices.Sort(want)
			want = slices.Compact(want)
			found, err := existingIDs(ctx, tx, principal, want)
			if err != nil {
				return err
			}
			for _, id := range want {
				if found[id] {
					ids = append(ids, id)
				} else {
					res.NotFound = append(res.NotFound, id)
				}
			}
		} else {
			where, args := filterWhere(in.Filter, principal)
			if in.Before != nil {
				where += " AND m.created_at < ?"
				args = append(args, ms(*in.Before))
			}
			rows, err := tx.QueryContext(ctx, `SELECT m.id FROM memories m WHERE `+where+` ORDER BY m.id`, args...)
			if err != nil {
				return fmt.Errorf("forget: %w", err)
			}
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return fmt.Errorf("forget: %w", err)
				}
				ids = append(ids, id)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return fmt.Errorf("forget: %w", err)
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
		return memory.ForgetResult{}, err
	}
	return res, nil
}

func existingIDs(ctx context.Context, q queryer, principal string, ids []int64) (map[int64]bool, error) {
	found := map[int64]bool{}
	for start := 0; start < len(ids); start += 500 {
		chunk := ids[start:min(start+500, len(ids))]
		args := []any{principal}
		for _, id := range chunk {
			args = append(args, id)
		}
		// NOT INDEXED: see loadMemories.
		rows, err := q.QueryContext(ctx, `SELECT id FROM memories NOT INDEXED WHERE principal = ? AND id IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("find memories: %w", err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("find memories: %w", err)
			}
			found[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// deleteMemories removes memories of principal and everything that hangs
// off them, including the full-text index, which foreign keys do not
// reach.
func deleteMemories(ctx context.Context, tx *sql.Tx, principal string, ids []int64) error {
	if err := unindexText(ctx, tx, principal, ids); err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, `DELETE FROM memories WHERE id = ? AND principal = ?`, id, principal); err != nil {
			return fmt.Errorf("delete memory %d: %w", id, err)
		}
	}
	return nil
}
