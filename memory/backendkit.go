package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/codecell/codecell/tools"
)

// This file is what another backend of the store (package
// memory/postgres) shares with this one, so that the two validate,
// report errors, embed, rank and fuse alike: the rules live once, here,
// and each backend keeps only its SQL.

// Quota is a *tools.Error with CodeQuotaExceeded wrapping ErrQuota.
func Quota(format string, args ...any) error {
	return toolErr(CodeQuotaExceeded, ErrQuota, format, args...)
}

// Conflict is a *tools.Error with CodeConflict wrapping ErrConflict.
func Conflict(format string, args ...any) error {
	return toolErr(CodeConflict, ErrConflict, format, args...)
}

// Provenance returns the provenance to record: given, or else the
// context's (WithProvenance), compacted; nil when there is none. field
// prefixes the message of an invalid one.
func Provenance(ctx context.Context, given json.RawMessage, field string) (json.RawMessage, error) {
	return (&Store{lim: Limits{}.Defaults()}).provenance(ctx, given, field)
}

// PreparedMemory is a RememberInput checked and completed: defaults set,
// tags, metadata and entities normalized, provenance taken from the
// context, and the text its vector is made from.
type PreparedMemory struct {
	Input      RememberInput
	Importance float64
	Metadata   json.RawMessage
	Provenance json.RawMessage
	// Text is what the embedder is given: content and tags.
	Text string
}

// PrepareMemory checks in against lim and completes it as Remember does;
// now is the time an episodic memory happened when in has none. field
// prefixes messages ("memories[3].").
func PrepareMemory(ctx context.Context, in RememberInput, lim Limits, now time.Time, field string) (PreparedMemory, error) {
	s := &Store{lim: lim.Defaults(), now: func() time.Time { return now }}
	p, err := s.prepareRemember(ctx, in, field)
	if err != nil {
		return PreparedMemory{}, err
	}
	return PreparedMemory{Input: p.in, Importance: p.importance, Metadata: p.metadata, Provenance: p.provenance, Text: p.text}, nil
}

// NormalizeRecall checks a recall and sets its defaults, as Recall does.
func NormalizeRecall(in *RecallInput, lim Limits) error {
	return (&Store{lim: lim.Defaults()}).normalizeRecall(in)
}

// Scored is a memory id with the score one retriever gave it.
type Scored struct {
	ID    int64
	Score float64
}

// Fuse merges a vector list and a keyword list, each best first, into
// hits as Recall does: in hybrid mode by reciprocal rank fusion (scaled so
// that first place in both lists scores 1), else by the list's own score.
// The hits are in no particular order; see SortHits.
func Fuse(mode string, vec, kw []Scored) []Hit {
	conv := func(xs []Scored) []scored {
		out := make([]scored, len(xs))
		for i, x := range xs {
			out[i] = scored{id: x.ID, score: x.Score}
		}
		return out
	}
	return fuse(mode, conv(vec), conv(kw))
}

// Recency blends recency into hits as Recall does: score =
// (1-w)·score + w·0.5^(age/half-life), where created gives each hit's
// creation time.
func Recency(hits []Hit, created map[int64]time.Time, now time.Time, w, halfLifeDays float64) {
	for i := range hits {
		t, ok := created[hits[i].ID]
		if !ok {
			continue
		}
		r := recencyOf(now, t, halfLifeDays)
		hits[i].Recency = &r
		hits[i].Score = (1-w)*hits[i].Score + w*r
	}
}

// ValidSkillName reports whether name can name a skill (it becomes a tool
// name).
func ValidSkillName(name string) bool { return skillNameRE.MatchString(name) }

// PrepareSkill checks a skill to save against lim and completes it as
// SaveSkill does: language defaulted, input schema compacted and compiled,
// owner and code hash set. It returns the schema as stored (nil for
// none).
func PrepareSkill(owner string, sk Skill, lim Limits) (Skill, error) {
	lim = lim.Defaults()
	if !skillNameRE.MatchString(sk.Name) {
		return Skill{}, Invalid("name %q: skill names are lower-case identifiers ([a-z][a-z0-9_]*, at most 64 characters), because they become tool names", Clip(sk.Name, 70))
	}
	if err := validateText("description", sk.Description, lim.MaxContentBytes, true); err != nil {
		return Skill{}, err
	}
	if strings.ContainsAny(strings.SplitN(sk.Description, "\n", 2)[0], "\r") {
		return Skill{}, Invalid("description: the first line may not contain carriage returns")
	}
	if err := validateText("code", sk.Code, lim.MaxSkillCodeBytes, true); err != nil {
		return Skill{}, err
	}
	switch sk.Language {
	case "":
		sk.Language = "javascript"
	case "javascript", "typescript":
	default:
		return Skill{}, Invalid("language %q: use javascript or typescript", Clip(sk.Language, 20))
	}
	if len(sk.InputSchema) > 0 && string(sk.InputSchema) != "null" {
		obj, err := normalizeObject("input_schema", sk.InputSchema, lim.MaxMetadataBytes)
		if err != nil {
			return Skill{}, err
		}
		if _, err := tools.CompileSchema(obj); err != nil {
			return Skill{}, Invalid("input_schema is not a valid JSON Schema: %v", err)
		}
		sk.InputSchema = obj
	} else {
		sk.InputSchema = nil
	}
	sk.Owner = owner
	sk.CodeSHA256 = Hash([]byte(sk.Code))
	sk.Snapshot = false
	return sk, nil
}

// SkillChangeOf completes a change with the fields its kind implies and
// the skills version it made.
func SkillChangeOf(principal, name string, kind SkillChangeKind, version int64) SkillChange {
	return SkillChange{Principal: principal, Name: name, Kind: kind, Version: version,
		Deleted:  kind == SkillDeleted || kind == SkillUnpublished,
		Everyone: kind == SkillPublished || kind == SkillUnpublished}
}

// Quantizer makes the binary codes of vectors that the coarse vector
// pass compares: the same construction for every backend, so that codes
// copied from one store serve another.
type Quantizer struct{ q *quantizer }

// NewQuantizer returns the quantizer of vectors of dims dimensions.
func NewQuantizer(dims int) *Quantizer { return &Quantizer{q: newQuantizer(dims)} }

// Name identifies the construction; codes made by another are rebuilt.
func (q *Quantizer) Name() string { return quantizerName }

// Code returns the binary code of the unit vector v.
func (q *Quantizer) Code(v []float32) []byte { return q.q.code(v) }

// CodeSet is one principal's binary codes held in memory, searched by
// Hamming distance: the coarse pass of vector recall on a large store.
// It is not safe for concurrent use.
type CodeSet struct{ cs codeSet }

// NewCodeSet returns an empty set for codes of q.
func NewCodeSet(q *Quantizer) *CodeSet {
	return &CodeSet{cs: codeSet{words: (q.q.bits + 63) / 64}}
}

// Len is the number of codes held.
func (c *CodeSet) Len() int { return len(c.cs.ids) }

// Bytes is about how much memory the set holds.
func (c *CodeSet) Bytes() int64 { return c.cs.bytes() }

// CodeEntry is one memory's code.
type CodeEntry struct {
	ID    int64
	Layer Layer
	Code  []byte
}

// Apply puts entries (replacing a held id's) and removes gone ids.
func (c *CodeSet) Apply(puts []CodeEntry, gone []int64) {
	es := make([]codeEntry, 0, len(puts))
	for _, p := range puts {
		li, _ := layerIndex(string(p.Layer))
		es = append(es, codeEntry{id: p.ID, layer: li, code: codeWords(p.Code, c.cs.words)})
	}
	slices.SortFunc(es, func(a, b codeEntry) int { return cmpID(a.id, b.id) })
	es = slices.CompactFunc(es, func(a, b codeEntry) bool { return a.id == b.id })
	gone = slices.Clone(gone)
	slices.Sort(gone)
	c.cs.apply(es, gone)
}

// Nearest returns the ids of the k codes of layers (all when nil)
// nearest to code, nearest first, ties by id.
func (c *CodeSet) Nearest(code []byte, layers []Layer, k int) []int64 {
	return c.cs.nearest(codeWords(code, c.cs.words), layerMask(layers), k)
}

// ApplyUpdate returns cur changed by in, validated against lim, as Update
// does (tags normalized, metadata merged, task fields checked).
func ApplyUpdate(cur Memory, in UpdateInput, lim Limits) (Memory, error) {
	return (&Store{lim: lim.Defaults()}).applyUpdate(cur, in)
}

// NormalizeFilter checks a filter and puts it in canonical form (layers
// sorted, tags lower-cased), as Recall and Forget do.
func NormalizeFilter(f *Filter) error { return f.normalize() }

// MergeRecord is the stored record of a memory that consolidation merged
// away, as memory_merges keeps it.
func MergeRecord(m Memory, uid string) string {
	rec, _ := json.Marshal(exported(m, uid))
	return string(rec)
}

// TaskRemember is the memory AddTask stores for in.
func TaskRemember(in TaskInput) RememberInput {
	return RememberInput{Layer: Prospective, Content: in.Content, DueAt: in.DueAt, Status: in.Status, Tags: in.Tags,
		Metadata: in.Metadata, Importance: in.Importance, Entities: in.Entities}
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

// PrepareImport checks the memory of an import record as Import does and
// completes it as Remember would, keeping its session and provenance;
// its stable identity is rec.Memory.UID.
func PrepareImport(ctx context.Context, rec Record, lim Limits, now time.Time) (PreparedMemory, error) {
	if rec.Memory == nil {
		return PreparedMemory{}, fmt.Errorf("%w: memory record without memory", ErrInvalid)
	}
	s := &Store{lim: lim.Defaults(), now: func() time.Time { return now }}
	p, err := s.prepareImport(ctx, rec)
	if err != nil {
		return PreparedMemory{}, err
	}
	return PreparedMemory{Input: p.in, Importance: p.importance, Metadata: p.metadata, Provenance: p.provenance, Text: p.text}, nil
}

// Count adds a record of kind and what was done with it to r.
func (r *ImportReport) Count(kind string, o ImportOutcome) {
	switch o {
	case Imported:
		r.Imported.add(kind)
	case Updated:
		r.Updated.add(kind)
	case Skipped:
		r.Skipped++
	}
}
