package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/codecell/codecell/tools"
)

// ConsolidateInput configures a consolidation pass.
type ConsolidateInput struct {
	// Layers to consolidate; empty: all. Memories merge only within a
	// layer.
	Layers []Layer `json:"layers,omitempty"`
	// Threshold is the cosine similarity at or above which two memories
	// may be duplicates (default 0.9, at least 0.5).
	Threshold float64 `json:"threshold,omitempty"`
	// MinOverlap is the least share of words (Jaccard index of their
	// stemmed words) two duplicates must have (default 0.5).
	MinOverlap float64 `json:"min_overlap,omitempty"`
	// Limit is how many of the most recent memories of each layer are
	// examined (default 2000, at most 5000).
	Limit  int  `json:"limit,omitempty"`
	DryRun bool `json:"dry_run,omitempty"`
}

// MergeGroup is one survivor and the memories merged into it.
type MergeGroup struct {
	Survivor MemoryLink    `json:"survivor"`
	Merged   []MergedEntry `json:"merged"`
}

// MergedEntry is a memory merged (or, in a dry run, to be merged) into a
// survivor.
type MergedEntry struct {
	ID         int64   `json:"id"`
	Content    string  `json:"content"`
	Similarity float64 `json:"similarity"`
	Overlap    float64 `json:"overlap"`
}

// ConsolidateResult reports a consolidation pass.
type ConsolidateResult struct {
	Examined int          `json:"examined"`
	Merged   int          `json:"merged"`
	Groups   []MergeGroup `json:"groups"`
	DryRun   bool         `json:"dry_run"`
}

type consolidateItem struct {
	mem   Memory
	vec   []float32
	words map[string]bool
}

// Consolidate merges near-duplicate memories of the caller: two memories
// of the same layer are duplicates when their vectors' cosine similarity
// is at least Threshold and their words overlap by at least MinOverlap.
// Each group keeps one survivor — the most important, then most accessed,
// then oldest — which gains the others' tags, metadata keys, entity links
// and access counts; the others are deleted and kept as provenance (Get on
// the survivor lists them in merged_from). Survivors are chosen greedily,
// so a memory joins a group only if it is close to the survivor itself.
func (s *Store) Consolidate(ctx context.Context, in ConsolidateInput) (ConsolidateResult, error) {
	principal := tools.CallerFrom(ctx).Principal
	layers, err := NormalizeConsolidate(&in)
	if err != nil {
		return ConsolidateResult{}, err
	}
	s.vmu.RLock()
	defer s.vmu.RUnlock()
	if err := s.vectorsReady(); err != nil {
		return ConsolidateResult{}, err
	}
	res := ConsolidateResult{Groups: []MergeGroup{}, DryRun: in.DryRun}
	var groups []DuplicateGroup
	err = s.read(ctx, func(tx *sql.Tx) error {
		for _, layer := range layers {
			items, err := loadForConsolidation(ctx, tx, principal, layer, in.Limit)
			if err != nil {
				return err
			}
			res.Examined += len(items)
			groups = append(groups, GroupDuplicates(items, in)...)
		}
		return nil
	})
	if err != nil {
		return ConsolidateResult{}, fmt.Errorf("consolidate: %w", err)
	}
	ReportGroups(&res, groups)
	if in.DryRun || len(groups) == 0 {
		return res, nil
	}

	// Build the survivors and embed those whose tags changed, outside
	// the write transaction.
	type plan struct {
		next    Memory
		vec     []float32
		g       DuplicateGroup
		touched []Memory // every memory of the group as read
	}
	plans := make([]plan, len(groups))
	var texts []string
	var need []int
	for i, g := range groups {
		next := MergeSurvivor(g, s.lim)
		plans[i] = plan{next: next, g: g, touched: append([]Memory{g.Survivor}, g.Members...)}
		if !slices.Equal(next.Tags, g.Survivor.Tags) {
			texts = append(texts, EmbedText(next.Content, next.Tags))
			need = append(need, i)
		}
	}
	vs, err := Embed(ctx, s.emb, texts)
	if err != nil {
		return ConsolidateResult{}, err
	}
	for k, i := range need {
		plans[i].vec = vs[k]
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	err = s.write(ctx, func(tx *sql.Tx) error {
		for _, p := range plans {
			for _, m := range p.touched {
				var upd int64
				err := tx.QueryRowContext(ctx, `SELECT updated_at FROM memories WHERE id = ? AND principal = ?`, m.ID, principal).Scan(&upd)
				if err != nil || upd != ms(m.UpdatedAt) {
					return &tools.Error{Code: CodeConflict, Message: fmt.Sprintf("memory %d changed or was deleted during consolidation; nothing was merged; run consolidate again", m.ID), Err: ErrInvalid}
				}
			}
			sv := p.next
			if _, err := tx.ExecContext(ctx, `UPDATE memories SET tags = ?, metadata = ?, importance = ?, access_count = ?, created_at = ?, updated_at = ? WHERE id = ?`,
				EncodeTags(sv.Tags), string(sv.Metadata), sv.Importance, sv.AccessCount, ms(sv.CreatedAt), max(ms(now), ms(sv.UpdatedAt)+1), sv.ID); err != nil {
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
					VALUES (?, ?, ?, ?, ?, ?, ?)`, m.ID, sv.ID, principal, MergeRecord(m, ""), Round4(p.g.Similarities[i]), Round4(p.g.Overlaps[i]), ms(now)); err != nil {
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
		return ConsolidateResult{}, err
	}
	s.log.Info("consolidated", "examined", res.Examined, "merged", res.Merged, "groups", len(res.Groups))
	return res, nil
}

// NormalizeConsolidate sets a consolidation pass's defaults, checks it
// and returns the layers to consolidate.
func NormalizeConsolidate(in *ConsolidateInput) ([]Layer, error) {
	if in.Threshold == 0 {
		in.Threshold = 0.9
	}
	if in.Threshold < 0.5 || in.Threshold > 1 {
		return nil, Invalid("threshold is %v; it must be between 0.5 and 1", in.Threshold)
	}
	if in.MinOverlap == 0 {
		in.MinOverlap = 0.5
	}
	if in.MinOverlap < 0 || in.MinOverlap > 1 {
		return nil, Invalid("min_overlap is %v; it must be between 0 and 1", in.MinOverlap)
	}
	if in.Limit == 0 {
		in.Limit = 2000
	}
	if in.Limit < 2 || in.Limit > 5000 {
		return nil, Invalid("limit is %d; it must be between 2 and 5000", in.Limit)
	}
	f := Filter{Layers: in.Layers}
	if err := f.Normalize(); err != nil {
		return nil, err
	}
	if len(f.Layers) == 0 {
		return Layers, nil
	}
	return f.Layers, nil
}

// DuplicateGroup is a survivor and the memories of its layer that
// duplicate it, with each one's similarity and word overlap to it.
type DuplicateGroup struct {
	Survivor     Memory
	Members      []Memory
	Similarities []float64
	Overlaps     []float64
}

// groupDuplicates groups the items of one layer: survivors in order of
// importance, access count, then id, each taking the items not yet taken
// that are close to it.
func groupDuplicates(items []*consolidateItem, in ConsolidateInput) []DuplicateGroup {
	order := slices.Clone(items)
	slices.SortStableFunc(order, func(a, b *consolidateItem) int {
		switch {
		case a.mem.Importance != b.mem.Importance:
			if a.mem.Importance > b.mem.Importance {
				return -1
			}
			return 1
		case a.mem.AccessCount != b.mem.AccessCount:
			if a.mem.AccessCount > b.mem.AccessCount {
				return -1
			}
			return 1
		}
		return cmpID(a.mem.ID, b.mem.ID)
	})
	var groups []DuplicateGroup
	taken := map[int64]bool{}
	for _, sv := range order {
		if taken[sv.mem.ID] {
			continue
		}
		g := DuplicateGroup{Survivor: sv.mem}
		var members []*consolidateItem
		for _, c := range order {
			if c == sv || taken[c.mem.ID] {
				continue
			}
			sim := float64(Dot(sv.vec, c.vec))
			if sim < in.Threshold {
				continue
			}
			ov := jaccard(sv.words, c.words)
			if ov < in.MinOverlap {
				continue
			}
			members = append(members, c)
			g.Members = append(g.Members, c.mem)
			g.Similarities = append(g.Similarities, sim)
			g.Overlaps = append(g.Overlaps, ov)
		}
		if len(members) == 0 {
			continue
		}
		taken[sv.mem.ID] = true
		for _, m := range members {
			taken[m.mem.ID] = true
		}
		groups = append(groups, g)
	}
	return groups
}

// ReportGroups adds groups to res as Consolidate reports them.
func ReportGroups(res *ConsolidateResult, groups []DuplicateGroup) {
	for _, g := range groups {
		mg := MergeGroup{Survivor: MemoryLink{ID: g.Survivor.ID, Layer: g.Survivor.Layer, Content: Clip(g.Survivor.Content, 300)}}
		for i, m := range g.Members {
			mg.Merged = append(mg.Merged, MergedEntry{ID: m.ID, Content: Clip(m.Content, 300), Similarity: Round4(g.Similarities[i]), Overlap: Round4(g.Overlaps[i])})
		}
		res.Groups = append(res.Groups, mg)
		res.Merged += len(g.Members)
	}
}

// MergeSurvivor returns the survivor of g as it is after the merge: the
// members' tags, metadata keys it lacks, entities and access counts
// added, the highest importance, the earliest creation time.
func MergeSurvivor(g DuplicateGroup, lim Limits) Memory {
	next := g.Survivor
	tags := slices.Clone(next.Tags)
	meta := map[string]json.RawMessage{}
	json.Unmarshal(next.Metadata, &meta)
	ents := slices.Clone(next.Entities)
	for _, m := range g.Members {
		tags = append(tags, m.Tags...)
		var mm map[string]json.RawMessage
		if json.Unmarshal(m.Metadata, &mm) == nil {
			for k, v := range mm {
				if _, ok := meta[k]; !ok {
					meta[k] = v
				}
			}
		}
		ents = append(ents, m.Entities...)
		next.Importance = max(next.Importance, m.Importance)
		next.AccessCount += m.AccessCount
		if m.CreatedAt.Before(next.CreatedAt) {
			next.CreatedAt = m.CreatedAt
		}
	}
	slices.Sort(tags)
	next.Tags = slices.Compact(tags)
	if maxTags := lim.Defaults().MaxTags; len(next.Tags) > maxTags {
		next.Tags = next.Tags[:maxTags]
	}
	b, _ := json.Marshal(meta)
	next.Metadata = b
	next.Entities = ents
	return next
}

// Round4 rounds to four decimals, as consolidation records similarities.
func Round4(x float64) float64 {
	return float64(int64(x*10000+0.5)) / 10000
}

func loadForConsolidation(ctx context.Context, tx *sql.Tx, principal string, layer Layer, limit int) ([]ConsolidateItem, error) {
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
		v, err := DecodeVector(blob, nil)
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
	out := make([]ConsolidateItem, len(mems))
	for i, m := range mems {
		out[i] = ConsolidateItem{Memory: m, Vector: vecs[m.ID]}
	}
	return out, nil
}

// wordSet is the set of stemmed words of text, without stop words.
func wordSet(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range tokenize(text) {
		if !stopwords[w] {
			out[stem(w)] = true
		}
	}
	return out
}

func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for w := range a {
		if b[w] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// MergeRecord is the stored record of a memory that consolidation merged
// away, as memory_merges keeps it.
func MergeRecord(m Memory, uid string) string {
	rec, _ := json.Marshal(exported(m, uid))
	return string(rec)
}

// ConsolidateItem is a memory with its stored vector, as consolidation
// compares them.
type ConsolidateItem struct {
	Memory Memory
	Vector []float32
}

// GroupDuplicates groups the items of one layer as Consolidate does.
func GroupDuplicates(items []ConsolidateItem, in ConsolidateInput) []DuplicateGroup {
	its := make([]*consolidateItem, len(items))
	for i, it := range items {
		its[i] = &consolidateItem{mem: it.Memory, vec: it.Vector, words: wordSet(it.Memory.Content)}
	}
	return groupDuplicates(its, in)
}
