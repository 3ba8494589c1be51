package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/codecell/codecell/tools"
)

// This file is what another backend of the store (package
// memory/postgres) shares with this one, so that the two validate,
// report errors, embed, rank and fuse alike: the rules live once, here,
// and each backend keeps only its SQL.

// NewID returns a random identifier of 26 lower-case letters and digits,
// as the store gives results, memories (their uid) and stores.
func NewID() string { return newID() }

// Invalid is a *tools.Error with tools.CodeInvalidArguments wrapping
// ErrInvalid.
func Invalid(format string, args ...any) error { return invalidf(format, args...) }

// NotFound is a *tools.Error with tools.CodeNotFound wrapping ErrNotFound.
func NotFound(format string, args ...any) error { return notFoundf(format, args...) }

// TooLarge is a *tools.Error with CodeTooLarge wrapping ErrTooLarge.
func TooLarge(format string, args ...any) error { return tooLargef(format, args...) }

// Quota is a *tools.Error with CodeQuotaExceeded wrapping ErrQuota.
func Quota(format string, args ...any) error {
	return toolErr(CodeQuotaExceeded, ErrQuota, format, args...)
}

// Conflict is a *tools.Error with CodeConflict wrapping ErrConflict.
func Conflict(format string, args ...any) error {
	return toolErr(CodeConflict, ErrConflict, format, args...)
}

// PathToolError turns a *PathError from ValidatePath into the
// *tools.Error the workspace operations report.
func PathToolError(err error) error { return pathErr(err) }

// Clip shortens s to at most n bytes on a rune boundary, marking the cut.
func Clip(s string, n int) string { return clip(s, n) }

// Defaults returns l with every unset limit at its default.
func (l Limits) Defaults() Limits { return l.withDefaults() }

// Defaults returns r with every unset field at its default.
func (r Retention) Defaults() Retention { return r.withDefaults() }

// Provenance returns the provenance to record: given, or else the
// context's (WithProvenance), compacted; nil when there is none. field
// prefixes the message of an invalid one.
func Provenance(ctx context.Context, given json.RawMessage, field string) (json.RawMessage, error) {
	return (&Store{lim: Limits{}.withDefaults()}).provenance(ctx, given, field)
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
	s := &Store{lim: lim.withDefaults(), now: func() time.Time { return now }}
	p, err := s.prepareRemember(ctx, in, field)
	if err != nil {
		return PreparedMemory{}, err
	}
	return PreparedMemory{Input: p.in, Importance: p.importance, Metadata: p.metadata, Provenance: p.provenance, Text: p.text}, nil
}

// NormalizeRecall checks a recall and sets its defaults, as Recall does.
func NormalizeRecall(in *RecallInput, lim Limits) error {
	return (&Store{lim: lim.withDefaults()}).normalizeRecall(in)
}

// Embed embeds texts with e and checks the vectors it returns, normalized
// to unit length; failures are *tools.Error values as Remember reports
// them.
func Embed(ctx context.Context, e Embedder, texts []string) ([][]float32, error) {
	return embedWith(ctx, e, texts)
}

// CheckEmbedder says whether e can serve a store: a name, and dimensions
// a multiple of 8 between 8 and 8192.
func CheckEmbedder(e Embedder) error { return checkEmbedder(e) }

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

// SortHits orders hits best first, ties by id.
func SortHits(hits []Hit) {
	sortHits(hits)
}

// EncodeTags and DecodeTags are the stored form of a memory's tags, a
// JSON array.
func EncodeTags(tags []string) string { return encodeTags(tags) }

// DecodeTags reads the stored form of a memory's tags.
func DecodeTags(s string) []string { return decodeTags(s) }

// ValidSkillName reports whether name can name a skill (it becomes a tool
// name).
func ValidSkillName(name string) bool { return skillNameRE.MatchString(name) }

// PrepareSkill checks a skill to save against lim and completes it as
// SaveSkill does: language defaulted, input schema compacted and compiled,
// owner and code hash set. It returns the schema as stored (nil for
// none).
func PrepareSkill(owner string, sk Skill, lim Limits) (Skill, error) {
	lim = lim.withDefaults()
	if !skillNameRE.MatchString(sk.Name) {
		return Skill{}, invalidf("name %q: skill names are lower-case identifiers ([a-z][a-z0-9_]*, at most 64 characters), because they become tool names", clip(sk.Name, 70))
	}
	if err := validateText("description", sk.Description, lim.MaxContentBytes, true); err != nil {
		return Skill{}, err
	}
	if strings.ContainsAny(strings.SplitN(sk.Description, "\n", 2)[0], "\r") {
		return Skill{}, invalidf("description: the first line may not contain carriage returns")
	}
	if err := validateText("code", sk.Code, lim.MaxSkillCodeBytes, true); err != nil {
		return Skill{}, err
	}
	switch sk.Language {
	case "":
		sk.Language = "javascript"
	case "javascript", "typescript":
	default:
		return Skill{}, invalidf("language %q: use javascript or typescript", clip(sk.Language, 20))
	}
	if len(sk.InputSchema) > 0 && string(sk.InputSchema) != "null" {
		obj, err := normalizeObject("input_schema", sk.InputSchema, lim.MaxMetadataBytes)
		if err != nil {
			return Skill{}, err
		}
		if _, err := tools.CompileSchema(obj); err != nil {
			return Skill{}, invalidf("input_schema is not a valid JSON Schema: %v", err)
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

// CheckToolShape checks a tool shape to store and returns it compacted.
func CheckToolShape(source, tool string, shape json.RawMessage) (string, error) {
	return checkToolShape(source, tool, shape)
}

// AuditCodeLimit is the most code an audit record keeps.
const AuditCodeLimit = maxAuditCode

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

// EncodeVector is the stored form of a vector: float32 little-endian.
func EncodeVector(v []float32) []byte { return encodeVector(v) }

// DecodeVector reads the stored form of a vector into dst (reused when
// large enough).
func DecodeVector(b []byte, dst []float32) ([]float32, error) { return decodeVector(b, dst) }

// ApplyUpdate returns cur changed by in, validated against lim, as Update
// does (tags normalized, metadata merged, task fields checked).
func ApplyUpdate(cur Memory, in UpdateInput, lim Limits) (Memory, error) {
	return (&Store{lim: lim.withDefaults()}).applyUpdate(cur, in)
}

// NormalizeEntities checks and de-duplicates entity names as Remember and
// Update do.
func NormalizeEntities(names []string) ([]string, error) { return normalizeEntities(names) }

// NormalizeFilter checks a filter and puts it in canonical form (layers
// sorted, tags lower-cased), as Recall and Forget do.
func NormalizeFilter(f *Filter) error { return f.normalize() }

// CheckForget checks what in asks to forget, as Forget does, and reports
// whether it selects by filter (or Before, or All) rather than by ids.
func CheckForget(in *ForgetInput) (byFilter bool, err error) { return checkForget(in) }

// EmbedText is the text a memory's vector is made from: its content and
// tags.
func EmbedText(content string, tags []string) string { return embedText(content, tags) }

// MergeRecord is the stored record of a memory that consolidation merged
// away, as memory_merges keeps it.
func MergeRecord(m Memory, uid string) string {
	rec, _ := json.Marshal(exported(m, uid))
	return string(rec)
}

// MergedOf reads back a memory_merges row as Get shows it in MergedFrom.
func MergedOf(id int64, record string, similarity, overlap float64, at time.Time) MergedMemory {
	return mergedOf(id, record, similarity, overlap, at)
}

// PrepareEntity checks an entity to upsert as UpsertEntity does and
// returns it trimmed, with its properties compacted.
func PrepareEntity(in EntityInput, lim Limits) (EntityInput, json.RawMessage, error) {
	return prepareEntity(in, lim)
}

// MergeEntity returns the stored entity cur updated by the prepared in
// and props at time now, as UpsertEntity does.
func MergeEntity(cur Entity, in EntityInput, props json.RawMessage, lim Limits, now time.Time) (Entity, error) {
	return mergeEntity(cur, in, props, lim, now)
}

// PrepareRelation checks a relation to record as Relate does and returns
// it trimmed, with its weight and compacted properties.
func PrepareRelation(in RelateInput, lim Limits) (RelateInput, float64, json.RawMessage, error) {
	return prepareRelation(in, lim)
}

// LinkedPerEntity is how many linked memories Neighbors shows per entity.
const LinkedPerEntity = linkedPerNode

// NormalizeNeighbors sets a Neighbors walk's defaults, checks it and
// returns the relation types to follow.
func NormalizeNeighbors(in *NeighborsInput) ([]string, error) { return normalizeNeighbors(in) }

// WalkNeighbors walks g breadth-first from start as the normalized in
// asks, as Neighbors does.
func WalkNeighbors(ctx context.Context, g GraphReader, start Entity, in NeighborsInput, types []string) (NeighborsResult, error) {
	return walkNeighbors(ctx, g, start, in, types)
}

// NormalizePath sets a Path search's defaults, checks it and returns the
// relation types to follow.
func NormalizePath(in *PathInput) ([]string, error) { return normalizePath(in) }

// FindPath searches g for a shortest path between two entities as the
// normalized in asks, as Path does.
func FindPath(ctx context.Context, g GraphReader, from, to Entity, in PathInput, types []string) (PathResult, error) {
	return findPath(ctx, g, from, to, in, types)
}

// TaskOf is m as a task at time now (overdue or not).
func TaskOf(m Memory, now time.Time) Task { return taskOf(m, now) }

// PrepareTaskQuery sets q's defaults, checks it and says what it selects
// at time now, as ListTasks does.
func PrepareTaskQuery(q *TaskQuery, now time.Time) (TaskSelection, error) {
	return prepareTaskQuery(q, now)
}

// TaskRemember is the memory AddTask stores for in.
func TaskRemember(in TaskInput) RememberInput {
	return RememberInput{Layer: Prospective, Content: in.Content, DueAt: in.DueAt, Status: in.Status, Tags: in.Tags,
		Metadata: in.Metadata, Importance: in.Importance, Entities: in.Entities}
}

// TaskUpdateOf turns a task update of the stored memory cur into the
// memory update UpdateTask makes at time now.
func TaskUpdateOf(cur Memory, in TaskUpdate, now time.Time) (UpdateInput, error) {
	return taskUpdate(cur, in, now)
}

// NormalizeConsolidate sets a consolidation pass's defaults, checks it
// and returns the layers to consolidate.
func NormalizeConsolidate(in *ConsolidateInput) ([]Layer, error) { return normalizeConsolidate(in) }

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

// ReportGroups adds groups to res as Consolidate reports them.
func ReportGroups(res *ConsolidateResult, groups []DuplicateGroup) { reportGroups(res, groups) }

// MergeSurvivor returns g's survivor as it is after the merge.
func MergeSurvivor(g DuplicateGroup, lim Limits) Memory { return mergeSurvivor(g, lim) }

// Round4 rounds to four decimals, as consolidation records similarities.
func Round4(x float64) float64 { return round4(x) }

// KeywordCommonDocs is the default bound of keyword recall's common-word
// cut (see RecallResult.CommonWords).
const KeywordCommonDocs = keywordCommonDocs

// ReadExport reads and decodes every line of an export, checking the
// header (the first record; its Version is the format's).
func ReadExport(r io.Reader) ([]Record, error) { return readExport(r) }

// PrepareImport checks the memory of an import record as Import does and
// completes it as Remember would, keeping its session and provenance;
// its stable identity is rec.Memory.UID.
func PrepareImport(ctx context.Context, rec Record, lim Limits, now time.Time) (PreparedMemory, error) {
	if rec.Memory == nil {
		return PreparedMemory{}, fmt.Errorf("%w: memory record without memory", ErrInvalid)
	}
	s := &Store{lim: lim.withDefaults(), now: func() time.Time { return now }}
	p, err := s.prepareImport(ctx, rec)
	if err != nil {
		return PreparedMemory{}, err
	}
	return PreparedMemory{Input: p.in, Importance: p.importance, Metadata: p.metadata, Provenance: p.provenance, Text: p.text}, nil
}

// ImportedSkill checks the skill of an import record of an export of the
// given format version, and says whose it is and whether it is (also)
// published, as Import does.
func ImportedSkill(rec Record, version int) (sk Skill, owner string, publish bool, err error) {
	return importedSkill(rec, version)
}

// ImportOutcome is what an import did with one record.
type ImportOutcome = importOutcome

// Import outcomes.
const (
	Imported = imported // added
	Updated  = updated  // replaced an older version
	Skipped  = skipped  // already present, as it is or newer
	Refused  = refused  // not imported: a conflict, reported
)

// OutcomeOf says what an import does with a record updated at rec when
// the store holds a version updated at stored (Unix milliseconds), if
// present: add it, replace the older one, or skip it.
func OutcomeOf(present bool, stored int64, rec time.Time) ImportOutcome {
	return outcomeOf(present, stored, rec)
}

// Count adds a record of kind and what was done with it to r.
func (r *ImportReport) Count(kind string, o ImportOutcome) {
	switch o {
	case imported:
		r.Imported.add(kind)
	case updated:
		r.Updated.add(kind)
	case skipped:
		r.Skipped++
	}
}

// ValidateEntityName checks an entity name as the graph operations do;
// field names it in the message.
func ValidateEntityName(field, name string) error { return validateEntityName(field, name) }
