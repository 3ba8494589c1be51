package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"
	"unicode/utf8"
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
	// Provenance is the memory's (see Memory.Provenance): the report
	// shows its content, data of those sources.
	Provenance json.RawMessage `json:"provenance,omitempty"`
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
// that are close to it. It compares a survivor only with the items that
// can pass the word test — those sharing a stemmed word with it, of a
// size the overlap allows (two items without words overlap fully) — so
// that memories with words of their own cost no comparison; the groups
// are the same as comparing every pair. It ends with ctx.
func groupDuplicates(ctx context.Context, items []*consolidateItem, in ConsolidateInput) ([]DuplicateGroup, error) {
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
	// postings lists, for each word, the positions in order of the items
	// that have it, ascending; the items without words are under "".
	postings := map[string][]int32{}
	for i, it := range order {
		if len(it.words) == 0 {
			postings[""] = append(postings[""], int32(i))
		}
		for w := range it.words {
			postings[w] = append(postings[w], int32(i))
		}
	}
	var groups []DuplicateGroup
	taken := make([]bool, len(order))
	seen := make([]int32, len(order)) // the survivor (position+1) that last listed an item
	var cand []int32
	for si, sv := range order {
		if taken[si] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cand = cand[:0]
		add := func(ps []int32) {
			for _, p := range ps {
				if p != int32(si) && !taken[p] && seen[p] != int32(si)+1 {
					seen[p] = int32(si) + 1
					cand = append(cand, p)
				}
			}
		}
		switch {
		case in.MinOverlap <= 0: // every pair passes the word test
			for p := range order {
				add([]int32{int32(p)})
			}
		case len(sv.words) == 0:
			add(postings[""])
		default:
			for w := range sv.words {
				add(postings[w])
			}
		}
		slices.Sort(cand)
		g := DuplicateGroup{Survivor: sv.mem}
		var members []int32
		for _, p := range cand {
			c := order[p]
			if small, large := min(len(sv.words), len(c.words)), max(len(sv.words), len(c.words)); large > 0 && float64(small)/float64(large) < in.MinOverlap {
				continue // the overlap is at most small/large
			}
			sim := float64(Dot(sv.vec, c.vec))
			if sim < in.Threshold {
				continue
			}
			ov := jaccard(sv.words, c.words)
			if ov < in.MinOverlap {
				continue
			}
			members = append(members, p)
			g.Members = append(g.Members, c.mem)
			g.Similarities = append(g.Similarities, sim)
			g.Overlaps = append(g.Overlaps, ov)
		}
		if len(members) == 0 {
			continue
		}
		taken[si] = true
		for _, p := range members {
			taken[p] = true
		}
		groups = append(groups, g)
	}
	return groups, nil
}

// ReportGroups adds groups to res as Consolidate reports them: each
// memory's content with its provenance, so that what a program reads of
// the report (a dry run's too) is known by the sources it came from
// (issue 19, attack18 K4).
func ReportGroups(res *ConsolidateResult, groups []DuplicateGroup) {
	for _, g := range groups {
		mg := MergeGroup{Survivor: MemoryLink{ID: g.Survivor.ID, Layer: g.Survivor.Layer, Content: Clip(g.Survivor.Content, 300), Provenance: g.Survivor.Provenance}}
		for i, m := range g.Members {
			mg.Merged = append(mg.Merged, MergedEntry{ID: m.ID, Content: Clip(m.Content, 300), Similarity: Round4(g.Similarities[i]), Overlap: Round4(g.Overlaps[i]),
				Provenance: m.Provenance})
		}
		res.Groups = append(res.Groups, mg)
		res.Merged += len(g.Members)
	}
}

// MergeSurvivor returns the survivor of g as it is after the merge: the
// members' tags, metadata keys it lacks, entities and access counts
// added, the highest importance, the earliest creation time, and the
// provenance of every memory of the group (UnionProvenance): what it
// gained is data of the members' sources, and a data-flow rule on them
// must still stop it (issue 19, attack18 K2).
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
		next.Provenance = UnionProvenance(next.Provenance, m.Provenance)
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
	// A memory links at most maxEntities entities, as Remember and
	// Update keep it: the survivor's own first, then the others' (each
	// merge could otherwise add up to maxEntities links per member).
	next.Entities = capNames(ents, len(g.Survivor.Entities), maxEntities)
	return next
}

// Round4 rounds to four decimals, as consolidation records similarities.
func Round4(x float64) float64 {
	return float64(int64(x*10000+0.5)) / 10000
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

// MergeExcerptBytes bounds the content a merge record keeps: the first
// this many bytes of a merged memory's content (cut at a character), with
// the whole content's size and SHA-256 when it was cut.
const MergeExcerptBytes = 1024

// mergeRecord is the JSON memory_merges keeps of a merged memory.
type mergeRecord struct {
	ExportedMemory
	ContentBytes  int    `json:"content_bytes,omitempty"`
	ContentSHA256 string `json:"content_sha256,omitempty"`
}

// MergeRecord is the stored record of a memory that consolidation merged
// away, as memory_merges keeps it: the memory without its metadata and
// entities (the survivor gained those) and with at most
// MergeExcerptBytes of its content, so that a record stays small
// however large the memory was. Records count toward the principal's
// memory.max_memory_bytes (the stores' principal_usage triggers).
func MergeRecord(m Memory, uid string) string {
	return mergeRecordOf(m, uid, 0, "")
}

// ImportedMergeRecord is the record an import stores for mg: as
// MergeRecord, keeping the size and hash of a content that an earlier
// merge already cut.
func ImportedMergeRecord(mg MergedMemory) string {
	if mg.Record == nil {
		return "{}"
	}
	return mergeRecordOf(*mg.Record, "", mg.ContentBytes, mg.ContentSHA256)
}

func mergeRecordOf(m Memory, uid string, size int, sum string) string {
	m.Metadata = json.RawMessage(`{}`)
	m.Entities = nil
	m.MergedFrom = nil
	r := mergeRecord{ContentBytes: size, ContentSHA256: sum}
	if len(m.Content) > MergeExcerptBytes {
		if r.ContentSHA256 == "" {
			h := sha256.Sum256([]byte(m.Content))
			r.ContentBytes, r.ContentSHA256 = len(m.Content), hex.EncodeToString(h[:])
		}
		m.Content = excerpt(m.Content, MergeExcerptBytes)
	}
	r.ExportedMemory = exported(m, uid)
	rec, _ := json.Marshal(r)
	return string(rec)
}

// excerpt is s's first at most n bytes, cut before a character that
// would not fit.
func excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// ConsolidateItem is a memory with its stored vector, as consolidation
// compares them.
type ConsolidateItem struct {
	Memory Memory
	Vector []float32
}

// FindDuplicates groups the items of each layer as Consolidate does:
// layers[i] holds one layer's items. It reads no store — the stores load
// the items, give their connection back, then call it — and ends with
// ctx, so that a consolidate ends with the run that asked for it.
func FindDuplicates(ctx context.Context, layers [][]ConsolidateItem, in ConsolidateInput) ([]DuplicateGroup, error) {
	var groups []DuplicateGroup
	for _, items := range layers {
		its := make([]*consolidateItem, len(items))
		for i, it := range items {
			its[i] = &consolidateItem{mem: it.Memory, vec: it.Vector, words: wordSet(it.Memory.Content)}
		}
		gs, err := groupDuplicates(ctx, its, in)
		if err != nil {
			return nil, err
		}
		groups = append(groups, gs...)
	}
	return groups, nil
}

// ConsolidateGate lets each principal run one consolidate at a time: a
// consolidate compares up to Limit memories of each layer with each
// other, seconds of CPU, and one principal's many at once would take
// the CPU from every other. The zero value is ready.
type ConsolidateGate struct {
	mu   sync.Mutex
	busy map[string]bool
}

// Enter admits principal's consolidate, or fails with CodeBusy while
// another of its consolidates runs. leave ends the admission.
func (g *ConsolidateGate) Enter(principal string) (leave func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.busy[principal] {
		return nil, toolErr(CodeBusy, ErrBusy, "another memory.consolidate of yours is still running; each principal runs one at a time: wait for it (or await it in the same program) and call again")
	}
	if g.busy == nil {
		g.busy = map[string]bool{}
	}
	g.busy[principal] = true
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		delete(g.busy, principal)
	}, nil
}
