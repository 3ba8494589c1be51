package memory

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
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
// into another: the memory as it was, and how close it was.
type MergedMemory struct {
	ID         int64     `json:"id"`
	Content    string    `json:"content"`
	Similarity float64   `json:"similarity"`
	Overlap    float64   `json:"overlap"`
	MergedAt   time.Time `json:"merged_at"`
	Record     *Memory   `json:"record,omitempty"`
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

// Remember stores a new memory for the caller's principal and returns it.
func (s *Store) Remember(ctx context.Context, in RememberInput) (Memory, error) {
	ms, err := s.RememberBatch(ctx, []RememberInput{in})
	if err != nil {
		return Memory{}, err
	}
	return ms[0], nil
}

// RememberBatch stores several memories in one transaction, embedding them
// in one call: all or none are stored.
func (s *Store) RememberBatch(ctx context.Context, ins []RememberInput) ([]Memory, error) {
	if len(ins) == 0 {
		return nil, nil
	}
	principal := tools.CallerFrom(ctx).Principal
	ps := make([]PreparedMemory, len(ins))
	texts := make([]string, len(ins))
	for i, in := range ins {
		field := ""
		if len(ins) > 1 {
			field = fmt.Sprintf("items[%d].", i)
		}
		p, err := PrepareMemory(ctx, in, s.lim, s.now(), field)
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
	vs, err := Embed(ctx, s.emb, texts)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	ids := make([]int64, len(ps))
	err = s.write(ctx, func(tx *sql.Tx) error {
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
	out := make([]Memory, len(ps))
	for i, p := range ps {
		out[i] = Memory{
			ID: ids[i], Layer: p.Input.Layer, Content: p.Input.Content, Tags: p.Input.Tags, Metadata: p.Metadata,
			Importance: p.Importance, Source: p.Input.Source, Session: p.Input.Session,
			OccurredAt: StoredTime(p.Input.OccurredAt), DueAt: StoredTime(p.Input.DueAt), Status: p.Input.Status,
			Entities: p.Input.Entities, Provenance: p.Provenance, CreatedAt: now, UpdatedAt: now,
		}
	}
	return out, nil
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

// insertMemory writes one PreparedMemory memory, its tags, vector, code,
// full-text entry (in fts, the principal's index: ensureFTSTable) and
// entity links.
func (s *Store) insertMemory(ctx context.Context, tx *sql.Tx, principal, fts string, p PreparedMemory, v []float32, created, updated time.Time) (int64, error) {
	tagsJSON := EncodeTags(p.Input.Tags)
	uid := p.UID
	if uid == "" {
		uid = NewID()
	}
	var status any
	if p.Input.Layer == Prospective {
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

func scanMemory(sc interface{ Scan(...any) error }) (Memory, error) {
	var m Memory
	var layer, tags, meta string
	var occurred, due, accessed sql.NullInt64
	var status, prov sql.NullString
	var created, updated int64
	if err := sc.Scan(&m.ID, &layer, &m.Content, &tags, &meta, &m.Importance, &m.Source, &m.Session,
		&occurred, &due, &status, &created, &updated, &accessed, &m.AccessCount, &prov); err != nil {
		return m, err
	}
	m.Provenance = provenanceOf(prov)
	m.Layer = Layer(layer)
	m.Tags = DecodeTags(tags)
	m.Metadata = json.RawMessage(meta)
	m.OccurredAt, m.DueAt, m.AccessedAt = timePtr(occurred), timePtr(due), timePtr(accessed)
	m.Status = TaskStatus(status.String)
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
func loadMemories(ctx context.Context, q queryer, principal string, ids []int64) ([]Memory, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	byID := make(map[int64]*Memory, len(ids))
	list := make([]Memory, 0, len(ids))
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
	out := make([]Memory, 0, len(list))
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
func (s *Store) Get(ctx context.Context, id int64) (Memory, error) {
	principal := tools.CallerFrom(ctx).Principal
	var m Memory
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
		return Memory{}, err
	}
	if m.ID == 0 {
		if merged != 0 {
			return Memory{}, NotFound("memory %d was merged into memory %d by consolidation; get %d instead", id, merged, merged)
		}
		return Memory{}, NotFound("memory %d not found", id)
	}
	if s.w == nil {
		return m, nil // read-only: no access is recorded
	}
	if err := s.touch(ctx, []int64{id}); err != nil {
		return Memory{}, err
	}
	t := s.now().UTC().Truncate(time.Millisecond)
	m.AccessedAt = &t
	m.AccessCount++
	return m, nil
}

func loadMerges(ctx context.Context, q queryer, survivor int64) ([]MergedMemory, error) {
	rows, err := q.QueryContext(ctx, `SELECT merged_id, record, similarity, overlap, merged_at FROM memory_merges WHERE survivor_id = ? ORDER BY merged_id`, survivor)
	if err != nil {
		return nil, fmt.Errorf("load merges: %w", err)
	}
	defer rows.Close()
	var out []MergedMemory
	for rows.Next() {
		var id int64
		var rec string
		var sim, overlap float64
		var at int64
		if err := rows.Scan(&id, &rec, &sim, &overlap, &at); err != nil {
			return nil, fmt.Errorf("load merges: %w", err)
		}
		out = append(out, MergedOf(id, rec, sim, overlap, fromMS(at)))
	}
	return out, rows.Err()
}

// MergedOf reads back a memory_merges row as Get shows it in MergedFrom.
func MergedOf(id int64, record string, similarity, overlap float64, at time.Time) MergedMemory {
	mm := MergedMemory{ID: id, Similarity: similarity, Overlap: overlap, MergedAt: at}
	var r ExportedMemory
	if json.Unmarshal([]byte(record), &r) == nil {
		r.Memory.Session = r.Session
		mm.Content = r.Content
		mm.Record = &r.Memory
	}
	return mm
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
	// Provenance, set by the server (see WithProvenance), replaces the
	// stored one; nil takes the context's, and without either the stored
	// one stays.
	Provenance json.RawMessage `json:"-"`
}

// Update applies in to the caller's memory and returns the result. A new
// content or new tags are re-embedded.
func (s *Store) Update(ctx context.Context, in UpdateInput) (Memory, error) {
	principal := tools.CallerFrom(ctx).Principal
	if in.ID <= 0 {
		return Memory{}, Invalid("id must be a positive memory id")
	}
	prov, err := Provenance(ctx, in.Provenance, "", s.lim)
	if err != nil {
		return Memory{}, err
	}
	s.vmu.RLock()
	defer s.vmu.RUnlock()
	if err := s.vectorsReady(); err != nil {
		return Memory{}, err
	}
	// Embedding may be slow (a network call): do it outside the write
	// transaction, and apply only if the memory did not change meanwhile.
	for attempt := 0; ; attempt++ {
		var cur Memory
		if err := s.read(ctx, func(tx *sql.Tx) error {
			ms, err := loadMemories(ctx, tx, principal, []int64{in.ID})
			if err != nil {
				return err
			}
			if len(ms) == 0 {
				return NotFound("memory %d not found", in.ID)
			}
			cur = ms[0]
			return nil
		}); err != nil {
			return Memory{}, err
		}
		next, err := ApplyUpdate(cur, in, s.lim)
		if err != nil {
			return Memory{}, err
		}
		var vec []float32
		reembed := next.Content != cur.Content || !slices.Equal(next.Tags, cur.Tags)
		if reembed {
			vs, err := Embed(ctx, s.emb, []string{EmbedText(next.Content, next.Tags)})
			if err != nil {
				return Memory{}, err
			}
			vec = vs[0]
		}
		var entities []string
		if in.Entities != nil {
			if entities, err = NormalizeEntities(*in.Entities); err != nil {
				return Memory{}, err
			}
		}
		addEntities, err := NormalizeEntities(in.AddEntities)
		if err != nil {
			return Memory{}, err
		}
		now := s.now().UTC().Truncate(time.Millisecond)
		stale := false
		err = s.write(ctx, func(tx *sql.Tx) error {
			var updated int64
			if err := tx.QueryRowContext(ctx, `SELECT updated_at FROM memories WHERE id = ? AND principal = ?`, in.ID, principal).Scan(&updated); err != nil {
				if errors.Is(err, sql.ErrNoRows) {
					return NotFound("memory %d not found", in.ID)
				}
				return fmt.Errorf("update memory: %w", err)
			}
			if updated != ms(cur.UpdatedAt) {
				stale = true
				return nil
			}
			var status any
			if next.Layer == Prospective {
				status = string(next.Status)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE memories SET layer = ?, content = ?, tags = ?, metadata = ?, importance = ?, source = ?,
				occurred_at = ?, due_at = ?, status = ?, updated_at = ? WHERE id = ?`,
				string(next.Layer), next.Content, EncodeTags(next.Tags), string(next.Metadata), next.Importance, next.Source,
				nullMS(next.OccurredAt), nullMS(next.DueAt), status, max(ms(now), updated+1), in.ID); err != nil {
				return fmt.Errorf("update memory: %w", err)
			}
			if prov != nil {
				if _, err := tx.ExecContext(ctx, `UPDATE memories SET provenance = ? WHERE id = ?`, string(prov), in.ID); err != nil {
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
			return Memory{}, err
		}
		if stale {
			if attempt < 5 {
				continue
			}
			return Memory{}, &tools.Error{Code: CodeConflict, Message: fmt.Sprintf("memory %d keeps changing under concurrent updates; try again", in.ID), Err: ErrInvalid}
		}
		var out Memory
		err = s.read(ctx, func(tx *sql.Tx) error {
			ms, err := loadMemories(ctx, tx, principal, []int64{in.ID})
			if err != nil {
				return err
			}
			if len(ms) == 0 {
				return NotFound("memory %d not found", in.ID)
			}
			out = ms[0]
			return nil
		})
		return out, err
	}
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
	return next, nil
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

// onlyLayers reports whether the filter selects by layer alone.
func onlyLayers(f Filter) bool {
	return len(f.Tags) == 0 && f.Session == "" && f.Since == nil && f.Until == nil && f.Entity == ""
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

// filterWhere renders the filter as SQL over the memories table aliased m.
func filterWhere(f Filter, principal string) (string, []any) {
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

// Forget deletes the caller's memories chosen by in, with their vectors,
// tags and links, and reports how many.
func (s *Store) Forget(ctx context.Context, in ForgetInput) (ForgetResult, error) {
	principal := tools.CallerFrom(ctx).Principal
	if _, err := CheckForget(&in); err != nil {
		return ForgetResult{}, err
	}
	res := ForgetResult{IDs: []int64{}, DryRun: in.DryRun}
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
		return ForgetResult{}, err
	}
	return res, nil
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
