package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/codecell/codecell/tools"
)

// Consolidate merges near-duplicate memories of the caller: two memories
// of the same layer are duplicates when their vectors' cosine similarity
// is at least Threshold and their words overlap by at least MinOverlap.
// Each group keeps one survivor — the most important, then most accessed,
// then oldest — which gains the others' tags, metadata keys, entity links
// and access counts; the others are deleted and kept as provenance (Get on
// the survivor lists them in merged_from). Survivors are chosen greedily,
// so a memory joins a group only if it is close to the survivor itself.
func (s *Store) Consolidate(ctx context.Context, in memory.ConsolidateInput) (memory.ConsolidateResult, error) {
	principal := tools.CallerFrom(ctx).Principal
	layers, err := memory.NormalizeConsolidate(&in)
	if err != nil {
		return memory.ConsolidateResult{}, err
	}
	leave, err := s.consolidating.Enter(principal)
	if err != nil {
		return memory.ConsolidateResult{}, err
	}
	defer leave()
	res := memory.ConsolidateResult{Groups: []memory.MergeGroup{}, DryRun: in.DryRun}
	// Read the layers, give the connection back, then compare: the
	// comparison is seconds of CPU for thousands of memories, and the
	// write below checks that nothing it merges changed since.
	items, err := s.loadConsolidation(ctx, principal, layers, in.Limit)
	if err != nil {
		return memory.ConsolidateResult{}, fmt.Errorf("consolidate: %w", err)
	}
	for _, its := range items {
		res.Examined += len(its)
	}
	groups, err := memory.FindDuplicates(ctx, items, in)
	if err != nil {
		return memory.ConsolidateResult{}, fmt.Errorf("consolidate: %w", err)
	}
	memory.ReportGroups(&res, groups)
	if in.DryRun || len(groups) == 0 {
		return res, nil
	}

	// Build the survivors and embed those whose tags changed, outside
	// the write transaction.
	s.vmu.RLock()
	defer s.vmu.RUnlock()
	if err := s.vectorsReady(); err != nil {
		return memory.ConsolidateResult{}, err
	}
	type plan struct {
		next    memory.Memory
		vec     []float32
		g       memory.DuplicateGroup
		touched []memory.Memory // every memory of the group as read
	}
	plans := make([]plan, len(groups))
	var texts []string
	var need []int
	for i, g := range groups {
		next := memory.MergeSurvivor(g, s.lim)
		plans[i] = plan{next: next, g: g, touched: append([]memory.Memory{g.Survivor}, g.Members...)}
		if !slices.Equal(next.Tags, g.Survivor.Tags) {
			texts = append(texts, memory.EmbedText(next.Content, next.Tags))
			need = append(need, i)
		}
	}
	vs, err := memory.Embed(ctx, s.emb, texts)
	if err != nil {
		return memory.ConsolidateResult{}, err
	}
	for k, i := range need {
		plans[i].vec = vs[k]
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	err = s.writeWithin(ctx, principal, func(tx *sql.Tx) error {
		for _, p := range plans {
			for _, m := range p.touched {
				var upd int64
				err := tx.QueryRowContext(ctx, `SELECT updated_at FROM memories WHERE id = ? AND principal = ?`, m.ID, principal).Scan(&upd)
				if err != nil || upd != ms(m.UpdatedAt) {
					return &tools.Error{Code: memory.CodeConflict, Message: fmt.Sprintf("memory %d changed or was deleted during consolidation; nothing was merged; run consolidate again", m.ID), Err: memory.ErrInvalid}
				}
			}
			sv := p.next
			if _, err := tx.ExecContext(ctx, `UPDATE memories SET tags = ?, metadata = ?, importance = ?, access_count = ?, created_at = ?, updated_at = ?, provenance = ? WHERE id = ?`,
				memory.EncodeTags(sv.Tags), string(sv.Metadata), sv.Importance, sv.AccessCount, ms(sv.CreatedAt), max(ms(now), ms(sv.UpdatedAt)+1), provenanceArg(sv.Provenance), sv.ID); err != nil {
				return fmt.Errorf("update survivor %d: %w", sv.ID, err)
			}
			if err := writeTags(ctx, tx, sv.ID, sv.Tags); err != nil {
				return err
			}
			if p.vec != nil {
				if err := putVector(ctx, tx, s.quant, sv.ID, principal, string(sv.Layer), p.vec); err != nil {
					return err
				}
				if err := indexText(ctx, tx, principal, sv.ID, sv.Content, sv.Tags, true); err != nil {
					return err
				}
			}
			if err := s.linkEntities(ctx, tx, principal, sv.ID, sv.Entities, now); err != nil {
				return err
			}
			var merged []int64
			for i, m := range p.g.Members {
				if _, err := tx.ExecContext(ctx, `UPDATE memory_merges SET survivor_id = ? WHERE survivor_id = ?`, sv.ID, m.ID); err != nil {
					return fmt.Errorf("move provenance: %w", err)
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO memory_merges (merged_id, survivor_id, principal, record, similarity, overlap, merged_at)
					VALUES (?, ?, ?, ?, ?, ?, ?)`, m.ID, sv.ID, principal, memory.MergeRecord(m, ""), memory.Round4(p.g.Similarities[i]), memory.Round4(p.g.Overlaps[i]), ms(now)); err != nil {
					return fmt.Errorf("record provenance: %w", err)
				}
				merged = append(merged, m.ID)
			}
			if err := deleteMemories(ctx, tx, principal, merged); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return memory.ConsolidateResult{}, err
	}
	s.log.Info("consolidated", "examined", res.Examined, "merged", res.Merged, "groups", len(res.Groups))
	return res, nil
}

// loadConsolidation reads the limit most recent memories of each layer
// of principal, with their vectors, in one read transaction.
func (s *Store) loadConsolidation(ctx context.Context, principal string, layers []memory.Layer, limit int) ([][]memory.ConsolidateItem, error) {
	s.vmu.RLock()
	defer s.vmu.RUnlock()
	if err := s.vectorsReady(); err != nil {
		return nil, err
	}
	out := make([][]memory.ConsolidateItem, len(layers))
	err := s.read(ctx, func(tx *sql.Tx) error {
		for i, layer := range layers {
			items, err := loadForConsolidation(ctx, tx, principal, layer, limit)
			if err != nil {
				return err
			}
			out[i] = items
		}
		return nil
	})
	return out, err
}

func loadForConsolidation(ctx context.Context, tx *sql.Tx, principal string, layer memory.Layer, limit int) ([]memory.ConsolidateItem, error) {
	rows, err := tx.QueryContext(ctx, `SELECT m.id, v.embedding FROM memories m JOIN memory_vectors v ON v.memory_id = m.id
		WHERE m.principal = ? AND m.layer = ? ORDER BY m.created_at DESC, m.id DESC LIMIT ?`, principal, string(layer), limit)
	if err != nil {
		return nil, err
	}
	vecs := map[int64][]float32{}
	var ids []int64
	for rows.Next() {
		var id int64
		var blob []byte
		if err := rows.Scan(&id, &blob); err != nil {
			rows.Close()
			return nil, err
		}
		v, err := memory.DecodeVector(blob, nil)
		if err != nil {
			rows.Close()
			return nil, err
		}
		vecs[id] = v
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Sort(ids)
	mems, err := loadMemories(ctx, tx, principal, ids)
	if err != nil {
		return nil, err
	}
	out := make([]memory.ConsolidateItem, len(mems))
	for i, m := range mems {
		out[i] = memory.ConsolidateItem{Memory: m, Vector: vecs[m.ID]}
	}
	return out, nil
}
