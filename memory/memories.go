package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/codecell/codecell/tools"
)

// Layer is one of the four kinds of memory.
type Layer string

// The memory layers.
const (
	// Episodic memories are events: what happened, when, in which session.
	Episodic Layer = "episodic"
	// Semantic memories are facts.
	Semantic Layer = "semantic"
	// Procedural memories are how-tos.
	Procedural Layer = "procedural"
	// Prospective memories are tasks and goals, with a due date and status.
	Prospective Layer = "prospective"
)

// Layers lists the layers in their documented order.
var Layers = []Layer{Episodic, Semantic, Procedural, Prospective}

func (l Layer) valid() bool { return slices.Contains(Layers, l) }

// TaskStatus is the state of a prospective memory.
type TaskStatus string

// Task states.
const (
	StatusOpen       TaskStatus = "open"
	StatusInProgress TaskStatus = "in_progress"
	StatusDone       TaskStatus = "done"
	StatusCancelled  TaskStatus = "cancelled"
)

// TaskStatuses lists the task states.
var TaskStatuses = []TaskStatus{StatusOpen, StatusInProgress, StatusDone, StatusCancelled}

func (s TaskStatus) valid() bool { return slices.Contains(TaskStatuses, s) }

// Memory is one stored memory as callers see it.
type Memory struct {
	ID         int64           `json:"id"`
	Layer      Layer           `json:"layer"`
	Content    string          `json:"content"`
	Tags       []string        `json:"tags"`
	Metadata   json.RawMessage `json:"metadata"`
	Importance float64         `json:"importance"`
	Source     string          `json:"source,omitempty"`
	// Session is the MCP session the memory was stored in. Tools never
	// show it (a session id lets its holder act in the session); exports
	// carry it (ExportedMemory).
	Session     string     `json:"-"`
	OccurredAt  *time.Time `json:"occurred_at,omitempty"`
	DueAt       *time.Time `json:"due_at,omitempty"`
	Status      TaskStatus `json:"status,omitempty"`
	Entities    []string   `json:"entities,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	AccessedAt  *time.Time `json:"accessed_at,omitempty"`
	AccessCount int64      `json:"access_count"`
	// Provenance is the tool sources its data came from (see
	// WithProvenance); absent when none was recorded.
	Provenance json.RawMessage `json:"provenance,omitempty"`
	// MergedFrom lists the memories consolidation merged into this one
	// (Get only).
	MergedFrom []MergedMemory `json:"merged_from,omitempty"`
}

// MergedMemory is the provenance of one memory that consolidation merged
// into another: the memory as it was (its content up to
// MergeExcerptBytes, without its metadata and entities, which the
// survivor gained), and how close it was.
type MergedMemory struct {
	ID      int64  `json:"id"`
	Content string `json:"content"`
	// ContentBytes and ContentSHA256 are the whole content's size and
	// hash, set when Content is its first MergeExcerptBytes.
	ContentBytes  int       `json:"content_bytes,omitempty"`
	ContentSHA256 string    `json:"content_sha256,omitempty"`
	Similarity    float64   `json:"similarity"`
	Overlap       float64   `json:"overlap"`
	MergedAt      time.Time `json:"merged_at"`
	Record        *Memory   `json:"record,omitempty"`
}

// RememberInput is a new memory.
type RememberInput struct {
	// Layer defaults to semantic.
	Layer   Layer    `json:"layer,omitempty"`
	Content string   `json:"content"`
	Tags    []string `json:"tags,omitempty"`
	// Metadata is a JSON object; nil means {}.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Importance in [0, 1]; nil means 0.5.
	Importance *float64 `json:"importance,omitempty"`
	Source     string   `json:"source,omitempty"`
	// Session defaults to the caller's session.
	Session string `json:"session,omitempty"`
	// OccurredAt is when an episodic event happened (default now).
	OccurredAt *time.Time `json:"occurred_at,omitempty"`
	// DueAt and Status apply to prospective memories (status default open).
	DueAt  *time.Time `json:"due_at,omitempty"`
	Status TaskStatus `json:"status,omitempty"`
	// Entities are names of knowledge-graph entities to link, created if
	// missing.
	Entities []string `json:"entities,omitempty"`
	// Provenance is set by the server, not by programs (see
	// WithProvenance); nil takes the context's.
	Provenance json.RawMessage `json:"-"`
}

const (
	maxTagLen        = 64
	maxEntityNameLen = 200
	maxEntities      = 32
	maxSourceLen     = 500
	maxSessionLen    = 200
)

// validateText checks a required or optional string field.
func validateText(field, s string, maxBytes int, required bool) error {
	if required && strings.TrimSpace(s) == "" {
		return Invalid("%s is empty; give the text to store", field)
	}
	if !utf8.ValidString(s) {
		return Invalid("%s is not valid UTF-8", field)
	}
	if len(s) > maxBytes {
		return TooLarge("%s is %d bytes; the limit is %d bytes", field, len(s), maxBytes)
	}
	return nil
}

// normalizeTags trims, lower-cases, de-duplicates and sorts tags.
func normalizeTags(field string, tags []string, limit int) ([]string, error) {
	out := make([]string, 0, len(tags))
	for i, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "" {
			return nil, Invalid("%s[%d] is empty; tags are short non-empty labels", field, i)
		}
		if len(t) > maxTagLen || !utf8.ValidString(t) {
			return nil, Invalid("%s[%d] %q: tags are at most %d bytes of UTF-8", field, i, Clip(t, 40), maxTagLen)
		}
		if strings.IndexFunc(t, unicode.IsControl) >= 0 {
			return nil, Invalid("%s[%d]: tags may not contain control characters", field, i)
		}
		out = append(out, t)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > limit {
		return nil, Invalid("%s has %d tags; the limit is %d", field, len(out), limit)
	}
	return out, nil
}

// normalizeObject checks that raw is a JSON object within the size limit
// and returns it compacted; nil becomes {}.
func normalizeObject(field string, raw json.RawMessage, limit int) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return json.RawMessage(`{}`), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, Invalid("%s must be a JSON object such as {\"key\": \"value\"}", field)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, Invalid("%s: %v", field, err)
	}
	if buf.Len() > limit {
		return nil, TooLarge("%s is %d bytes as JSON; the limit is %d bytes", field, buf.Len(), limit)
	}
	return json.RawMessage(buf.Bytes()), nil
}

// NormalizeEntities checks and de-duplicates entity names as Remember and
// Update do.
func NormalizeEntities(names []string) ([]string, error) {
	out := make([]string, 0, len(names))
	seen := map[string]bool{}
	for i, n := range names {
		n = strings.TrimSpace(n)
		if err := ValidateEntityName(fmt.Sprintf("entities[%d]", i), n); err != nil {
			return nil, err
		}
		if k := strings.ToLower(n); !seen[k] {
			seen[k] = true
			out = append(out, n)
		}
	}
	if len(out) > maxEntities {
		return nil, Invalid("entities has %d names; the limit is %d", len(out), maxEntities)
	}
	return out, nil
}

// ValidateEntityName checks an entity name as the graph operations do;
// field names it in the message.
func ValidateEntityName(field, n string) error {
	if n == "" {
		return Invalid("%s is empty; entities are named", field)
	}
	if len(n) > maxEntityNameLen || !utf8.ValidString(n) {
		return Invalid("%s: names are at most %d bytes of UTF-8", field, maxEntityNameLen)
	}
	if strings.IndexFunc(n, unicode.IsControl) >= 0 {
		return Invalid("%s: names may not contain control characters", field)
	}
	return nil
}

func checkImportance(field string, v *float64) (float64, error) {
	if v == nil {
		return 0.5, nil
	}
	if *v < 0 || *v > 1 || *v != *v {
		return 0, Invalid("%s is %v; it must be between 0 and 1", field, *v)
	}
	return *v, nil
}

func parseLayer(field string, l Layer) error {
	if !l.valid() {
		return Invalid("%s %q is not a layer; use one of episodic, semantic, procedural, prospective", field, Clip(string(l), 40))
	}
	return nil
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
	// UID is the stable identity of an imported memory (PrepareImport);
	// "" means a new one.
	UID string
}

// PrepareMemory checks in against lim and completes it as Remember does;
// now is the time an episodic memory happened when in has none. field
// prefixes messages ("memories[3].").
func PrepareMemory(ctx context.Context, in RememberInput, lim Limits, now time.Time, field string) (PreparedMemory, error) {
	lim = lim.Defaults()
	p := PreparedMemory{Input: in}
	if p.Input.Layer == "" {
		p.Input.Layer = Semantic
	}
	if err := parseLayer(field+"layer", p.Input.Layer); err != nil {
		return p, err
	}
	if err := validateText(field+"content", in.Content, lim.MaxContentBytes, true); err != nil {
		return p, err
	}
	var err error
	if p.Input.Tags, err = normalizeTags(field+"tags", in.Tags, lim.MaxTags); err != nil {
		return p, err
	}
	if p.Metadata, err = normalizeObject(field+"metadata", in.Metadata, lim.MaxMetadataBytes); err != nil {
		return p, err
	}
	if p.Importance, err = checkImportance(field+"importance", in.Importance); err != nil {
		return p, err
	}
	if err := validateText(field+"source", in.Source, maxSourceLen, false); err != nil {
		return p, err
	}
	if p.Input.Session == "" {
		p.Input.Session = tools.CallerFrom(ctx).Session
	}
	if err := validateText(field+"session", p.Input.Session, maxSessionLen, false); err != nil {
		return p, err
	}
	if p.Input.Entities, err = NormalizeEntities(in.Entities); err != nil {
		return p, err
	}
	if p.Provenance, err = Provenance(ctx, in.Provenance, field, lim); err != nil {
		return p, err
	}
	if p.Input.Layer == Prospective {
		if p.Input.Status == "" {
			p.Input.Status = StatusOpen
		}
		if !p.Input.Status.valid() {
			return p, Invalid("%sstatus %q is not a task status; use one of open, in_progress, done, cancelled", field, Clip(string(in.Status), 40))
		}
	} else if in.Status != "" || in.DueAt != nil {
		return p, Invalid("%sstatus and due_at apply to the prospective layer only; this memory's layer is %s (use memory.task_add for tasks)", field, p.Input.Layer)
	}
	if p.Input.Layer == Episodic && p.Input.OccurredAt == nil {
		t := now.UTC()
		p.Input.OccurredAt = &t
	}
	p.Text = EmbedText(in.Content, p.Input.Tags)
	return p, nil
}

// EmbedText is the text a memory's vector is made from: its content and
// tags.
func EmbedText(content string, tags []string) string {
	if len(tags) == 0 {
		return content
	}
	return content + "\n" + strings.Join(tags, " ")
}

// StoredTime is t as the store keeps it: in UTC, to the millisecond;
// nil stays nil.
func StoredTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC().Truncate(time.Millisecond)
	return &u
}

// EncodeTags and DecodeTags are the stored form of a memory's tags, a
// JSON array.
func EncodeTags(tags []string) string {
	if len(tags) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(tags)
	return string(b)
}

// DecodeTags reads the stored form of a memory's tags.
func DecodeTags(s string) []string {
	var out []string
	if err := json.Unmarshal([]byte(s), &out); err != nil || out == nil {
		return []string{}
	}
	return out
}

// MergedOf reads back a memory_merges row as Get shows it in MergedFrom.
func MergedOf(id int64, record string, similarity, overlap float64, at time.Time) MergedMemory {
	mm := MergedMemory{ID: id, Similarity: similarity, Overlap: overlap, MergedAt: at}
	var r mergeRecord
	if json.Unmarshal([]byte(record), &r) == nil {
		r.Memory.Session = r.Session
		mm.Content = r.Content
		mm.ContentBytes, mm.ContentSHA256 = r.ContentBytes, r.ContentSHA256
		mm.Record = &r.Memory
	}
	return mm
}

// UpdateInput changes a memory. Nil and empty fields are left as they are.
type UpdateInput struct {
	ID       int64     `json:"id"`
	Content  *string   `json:"content,omitempty"`
	Layer    *Layer    `json:"layer,omitempty"`
	Tags     *[]string `json:"tags,omitempty"`
	AddTags  []string  `json:"add_tags,omitempty"`
	DropTags []string  `json:"remove_tags,omitempty"`
	// Metadata replaces the metadata object; MergeMetadata sets some keys
	// (a null value removes the key).
	Metadata      json.RawMessage `json:"metadata,omitempty"`
	MergeMetadata json.RawMessage `json:"merge_metadata,omitempty"`
	Importance    *float64        `json:"importance,omitempty"`
	Source        *string         `json:"source,omitempty"`
	OccurredAt    *time.Time      `json:"occurred_at,omitempty"`
	DueAt         *time.Time      `json:"due_at,omitempty"`
	Status        *TaskStatus     `json:"status,omitempty"`
	// Entities replaces the linked entities; AddEntities adds links.
	Entities    *[]string `json:"entities,omitempty"`
	AddEntities []string  `json:"add_entities,omitempty"`
	// Provenance, set by the server (see WithProvenance), joins the
	// stored one (UnionProvenance): what the update leaves of the memory
	// is still data of the sources it came from. Nil takes the
	// context's, and without either the stored one stays.
	Provenance json.RawMessage `json:"-"`
}

// ApplyUpdate returns cur changed by in, validated against lim, as Update
// does (tags normalized, metadata merged, task fields checked).
func ApplyUpdate(cur Memory, in UpdateInput, lim Limits) (Memory, error) {
	lim = lim.Defaults()
	next := cur
	var err error
	if in.Content != nil {
		if err := validateText("content", *in.Content, lim.MaxContentBytes, true); err != nil {
			return next, err
		}
		next.Content = *in.Content
	}
	if in.Layer != nil {
		if err := parseLayer("layer", *in.Layer); err != nil {
			return next, err
		}
		next.Layer = *in.Layer
	}
	if in.Tags != nil {
		if next.Tags, err = normalizeTags("tags", *in.Tags, lim.MaxTags); err != nil {
			return next, err
		}
	}
	if len(in.AddTags) > 0 || len(in.DropTags) > 0 {
		add, err := normalizeTags("add_tags", in.AddTags, lim.MaxTags)
		if err != nil {
			return next, err
		}
		drop, err := normalizeTags("remove_tags", in.DropTags, lim.MaxTags)
		if err != nil {
			return next, err
		}
		tags := slices.Clone(next.Tags)
		tags = slices.DeleteFunc(tags, func(t string) bool { return slices.Contains(drop, t) })
		if next.Tags, err = normalizeTags("tags", append(tags, add...), lim.MaxTags); err != nil {
			return next, err
		}
	}
	if len(in.Metadata) > 0 {
		if next.Metadata, err = normalizeObject("metadata", in.Metadata, lim.MaxMetadataBytes); err != nil {
			return next, err
		}
	}
	if len(in.MergeMetadata) > 0 {
		patch, err := normalizeObject("merge_metadata", in.MergeMetadata, lim.MaxMetadataBytes)
		if err != nil {
			return next, err
		}
		merged, err := mergeObjects(next.Metadata, patch)
		if err != nil {
			return next, err
		}
		if next.Metadata, err = normalizeObject("metadata", merged, lim.MaxMetadataBytes); err != nil {
			return next, err
		}
	}
	if in.Importance != nil {
		if next.Importance, err = checkImportance("importance", in.Importance); err != nil {
			return next, err
		}
	}
	if in.Source != nil {
		if err := validateText("source", *in.Source, maxSourceLen, false); err != nil {
			return next, err
		}
		next.Source = *in.Source
	}
	if in.OccurredAt != nil {
		next.OccurredAt = StoredTime(in.OccurredAt)
	}
	if in.DueAt != nil {
		next.DueAt = StoredTime(in.DueAt)
	}
	if in.Status != nil {
		if !in.Status.valid() {
			return next, Invalid("status %q is not a task status; use one of open, in_progress, done, cancelled", Clip(string(*in.Status), 40))
		}
		next.Status = *in.Status
	}
	if next.Layer == Prospective {
		if next.Status == "" {
			next.Status = StatusOpen
		}
	} else {
		if in.Status != nil || in.DueAt != nil {
			return next, Invalid("status and due_at apply to the prospective layer only; memory %d is %s", cur.ID, next.Layer)
		}
		next.Status, next.DueAt = "", nil
	}
	if in.Entities != nil || len(in.AddEntities) > 0 {
		linked := cur.Entities
		if in.Entities != nil {
			linked = *in.Entities
		}
		if n, had := countNames(linked, in.AddEntities), countNames(cur.Entities, nil); n > maxEntities && n > had {
			return next, Invalid("memory %d would link %d entities; a memory links at most %d: link fewer (entities replaces the links, add_entities adds to them), or relate the entities to each other (memory.relate)", cur.ID, n, maxEntities)
		}
	}
	return next, nil
}

// countNames counts the names of a and b, each once (ignoring case).
func countNames(a, b []string) int {
	seen := map[string]bool{}
	for _, n := range slices.Concat(a, b) {
		seen[strings.ToLower(strings.TrimSpace(n))] = true
	}
	return len(seen)
}

// capNames de-duplicates names (ignoring case), in order, and keeps the
// first limit, or the first keep if more.
func capNames(names []string, keep, limit int) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		if k := strings.ToLower(strings.TrimSpace(n)); !seen[k] {
			seen[k] = true
			out = append(out, n)
		}
	}
	if n := max(keep, limit); len(out) > n {
		out = out[:n]
	}
	return out
}

// mergeObjects sets patch's keys in base; a null value removes the key.
func mergeObjects(base, patch json.RawMessage) (json.RawMessage, error) {
	var b, p map[string]json.RawMessage
	if err := json.Unmarshal(base, &b); err != nil || b == nil {
		b = map[string]json.RawMessage{}
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, Invalid("merge_metadata must be a JSON object")
	}
	for k, v := range p {
		if string(v) == "null" {
			delete(b, k)
		} else {
			b[k] = v
		}
	}
	return json.Marshal(b)
}

// Filter selects memories of one principal. Empty fields select all.
type Filter struct {
	Layers  []Layer    `json:"layers,omitempty"`
	Tags    []string   `json:"tags,omitempty"` // all of them
	Session string     `json:"session,omitempty"`
	Since   *time.Time `json:"since,omitempty"` // by occurred_at, else created_at
	Until   *time.Time `json:"until,omitempty"`
	Entity  string     `json:"entity,omitempty"` // linked to this entity
}

// Empty reports whether the filter selects every memory.
func (f Filter) Empty() bool {
	return len(f.Layers) == 0 && len(f.Tags) == 0 && f.Session == "" && f.Since == nil && f.Until == nil && f.Entity == ""
}

// Normalize checks a filter and puts it in canonical form (layers
// sorted, tags lower-cased), as Recall and Forget do.
func (f *Filter) Normalize() error {
	for i, l := range f.Layers {
		if err := parseLayer(fmt.Sprintf("layers[%d]", i), l); err != nil {
			return err
		}
	}
	slices.Sort(f.Layers)
	f.Layers = slices.Compact(f.Layers)
	tags, err := normalizeTags("tags", f.Tags, 64)
	if err != nil {
		return err
	}
	f.Tags = tags
	if f.Since != nil && f.Until != nil && f.Until.Before(*f.Since) {
		return Invalid("until (%s) is before since (%s)", f.Until.Format(time.RFC3339), f.Since.Format(time.RFC3339))
	}
	return nil
}

// ForgetInput selects memories to delete: by id, or by a filter. A filter
// that selects everything needs All.
type ForgetInput struct {
	IDs    []int64 `json:"ids,omitempty"`
	Filter Filter  `json:"filter"`
	// Before deletes memories created before this time.
	Before *time.Time `json:"before,omitempty"`
	All    bool       `json:"all,omitempty"`
	DryRun bool       `json:"dry_run,omitempty"`
}

// ForgetResult reports what Forget deleted (or would have, in a dry run).
type ForgetResult struct {
	Deleted  int     `json:"deleted"`
	IDs      []int64 `json:"ids"`
	NotFound []int64 `json:"not_found,omitempty"`
	DryRun   bool    `json:"dry_run,omitempty"`
}

// CheckForget checks what in asks to forget, as Forget does, and reports
// whether it selects by filter (or Before, or All) rather than by ids.
func CheckForget(in *ForgetInput) (bool, error) {
	if err := in.Filter.Normalize(); err != nil {
		return false, err
	}
	byFilter := !in.Filter.Empty() || in.Before != nil
	if len(in.IDs) == 0 && !byFilter && !in.All {
		return false, Invalid("say what to forget: ids, a filter (layers, tags, session, since, until, entity, before), or all: true to forget every memory")
	}
	if len(in.IDs) > 0 && (byFilter || in.All) {
		return false, Invalid("give either ids or a filter, not both")
	}
	return byFilter || in.All, nil
}

// Clip shortens s to at most n bytes on a rune boundary, marking the cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
