package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Consolidate merges near-duplicate memories of the caller, as
// sqlite.Store.Consolidate does: the grouping and the merged survivor are
// package memory's; the groups are read in one snapshot and written in
// one transaction that first checks no memory of a group changed since.
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
	release, err := s.vectorsReady(ctx)
	if err != nil {
		return memory.ConsolidateResult{}, err
	}
	defer release()
	survivors := make([]memory.Memory, len(groups))
	vecs := make([][]float32, len(groups))
	var texts []string
	var need []int
	for i, g := range groups {
		survivors[i] = memory.MergeSurvivor(g, s.lim)
		if !slices.Equal(survivors[i].Tags, g.Survivor.Tags) {
			texts = append(texts, memory.EmbedText(survivors[i].Content, survivors[i].Tags))
			need = append(need, i)
		}
	}
	vs, err := memory.Embed(ctx, s.emb, texts)
	if err != nil {
		return memory.ConsolidateResult{}, err
	}
	for k, i := range need {
		vecs[i] = vs[k]
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	err = s.txWithin(ctx, principal, func(tx pgx.Tx) error {
		if err := lockCodes(ctx, tx); err != nil {
			return err
		}
		for i, g := range groups {
			for _, m := range append([]memory.Memory{g.Survivor}, g.Members...) {
				var upd int64
				err := tx.QueryRow(ctx, `SELECT updated_at FROM memories WHERE id = $1 AND principal = $2 FOR UPDATE`, m.ID, principal).Scan(&upd)
				if err != nil || upd != ms(m.UpdatedAt) {
					return memory.Conflict("memory %d changed or was deleted during consolidation; nothing was merged; run consolidate again", m.ID)
				}
			}
			sv := survivors[i]
			if _, err := tx.Exec(ctx, `UPDATE memories SET tags = $1, metadata = $2, importance = $3, access_count = $4, created_at = $5, updated_at = $6,
				tsv = to_tsvector('english', content || ' ' || $7), provenance = $8 WHERE id = $9`,
				memory.EncodeTags(sv.Tags), string(sv.Metadata), sv.Importance, sv.AccessCount, ms(sv.CreatedAt), max(ms(now), ms(sv.UpdatedAt)+1),
				joinTags(sv.Tags), provArg(sv.Provenance), sv.ID); err != nil {
				return fmt.Errorf("update survivor %d: %w", sv.ID, err)
			}
			if err := writeTags(ctx, tx, sv.ID, sv.Tags); err != nil {
				return err
			}
			if vecs[i] != nil {
				if err := s.putVector(ctx, tx, sv.ID, principal, sv.Layer, vecs[i]); err != nil {
					return err
				}
			}
			if err := linkEntities(ctx, tx, principal, sv.ID, sv.Entities, now); err != nil {
				return err
			}
			merged := make([]int64, len(g.Members))
			for k, m := range g.Members {
				if _, err := tx.Exec(ctx, `UPDATE memory_merges SET survivor_id = $1 WHERE survivor_id = $2`, sv.ID, m.ID); err != nil {
					return fmt.Errorf("move provenance: %w", err)
				}
				if _, err := tx.Exec(ctx, `INSERT INTO memory_merges (merged_id, survivor_id, principal, record, similarity, overlap, merged_at)
					VALUES ($1, $2, $3, $4, $5, $6, $7)`, m.ID, sv.ID, principal, memory.MergeRecord(m, ""),
					memory.Round4(g.Similarities[k]), memory.Round4(g.Overlaps[k]), ms(now)); err != nil {
					return fmt.Errorf("record provenance: %w", err)
				}
				merged[k] = m.ID
			}
			if err := deleteMemories(ctx, tx, principal, merged); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return memory.ConsolidateResult{}, toolOr("consolidate", err)
	}
	s.log.Info("consolidated", "examined", res.Examined, "merged", res.Merged, "groups", len(res.Groups))
	return res, nil
}

// loadConsolidation reads the limit most recent memories of each layer
// of principal, with their vectors, in one snapshot.
func (s *Store) loadConsolidation(ctx context.Context, principal string, layers []memory.Layer, limit int) ([][]memory.ConsolidateItem, error) {
	release, err := s.vectorsReady(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	out := make([][]memory.ConsolidateItem, len(layers))
	err = s.readTx(ctx, func(tx pgx.Tx) error {
		for i, layer := range layers {
			items, err := s.loadForConsolidation(ctx, tx, principal, layer, limit)
			if err != nil {
				return err
			}
			out[i] = items
		}
		return nil
	})
	return out, err
}

func (s *Store) loadForConsolidation(ctx context.Context, tx pgx.Tx, principal string, layer memory.Layer, limit int) ([]memory.ConsolidateItem, error) {
	rows, err := tx.Query(ctx, `SELECT m.id, v.embedding FROM memories m JOIN memory_vectors v ON v.memory_id = m.id
		WHERE m.principal = $1 AND m.layer = $2 ORDER BY m.created_at DESC, m.id DESC LIMIT $3`, principal, string(layer), limit)
	if err != nil {
		return nil, err
	}
	vecs := map[int64][]float32{}
	var ids []int64
	var id int64
	var blob []byte
	if _, err := pgx.ForEachRow(rows, []any{&id, &blob}, func() error {
		v, err := memory.DecodeVector(blob, nil)
		vecs[id] = v
		ids = append(ids, id)
		return err
	}); err != nil {
		return nil, err
	}
	slices.Sort(ids)
	mems, err := s.loadMemories(ctx, tx, principal, ids)
	if err != nil {
		return nil, err
	}
	out := make([]memory.ConsolidateItem, len(mems))
	for i, m := range mems {
		out[i] = memory.ConsolidateItem{Memory: m, Vector: vecs[m.ID]}
	}
	return out, nil
}
