package memory

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/codecell/codecell/tools"
)

// ExportVersion is the format version written in the header line. Version
// 2 added memories' stable identities (uid) and published skills; Import
// reads versions 1 and 2.
const ExportVersion = 2

// Record is one line of an export: Kind says which of the other fields is
// set. Every record carries its principal (for a skill, its owner).
// Vectors are not exported: Import re-embeds with the importing store's
// embedder. Timestamps are those stored.
type Record struct {
	Kind      string `json:"kind"` // header, memory, entity, relation, skill, published_skill, file
	Principal string `json:"principal,omitempty"`

	// header
	Version  int    `json:"version,omitempty"`
	Embedder string `json:"embedder,omitempty"`
	// Exported is when the export was written (header only).
	Exported *time.Time `json:"exported,omitempty"`

	Memory   *ExportedMemory `json:"memory,omitempty"`
	Entity   *Entity         `json:"entity,omitempty"`
	Relation *Relation       `json:"relation,omitempty"`
	// Skill is an owner's own copy (kind skill) or a published snapshot
	// (kind published_skill).
	Skill  *Skill         `json:"skill,omitempty"`
	File   *ExportedFile  `json:"file,omitempty"`
	Merges []MergedMemory `json:"merges,omitempty"`
}

// ExportedMemory is a memory as an export (and consolidation's record of a
// merged memory) keeps it: with what tools do not show, its session and
// its stable identity.
type ExportedMemory struct {
	Memory
	Session string `json:"session,omitempty"`
	// UID identifies the memory across stores: Import skips a memory whose
	// UID the store already holds.
	UID string `json:"uid,omitempty"`
}

func exported(m Memory, uid string) ExportedMemory {
	return ExportedMemory{Memory: m, Session: m.Session, UID: uid}
}

// ExportedFile is a workspace file in an export; Data is its content
// (encoding/json writes []byte as base64).
type ExportedFile struct {
	Path      string    `json:"path"`
	Data      []byte    `json:"data"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Provenance is the file's, as stored.
	Provenance json.RawMessage `json:"provenance,omitempty"`
}

// ExportReport counts records by kind: what was exported, or what an
// import added or replaced.
type ExportReport struct {
	Memories        int `json:"memories"`
	Entities        int `json:"entities"`
	Relations       int `json:"relations"`
	Skills          int `json:"skills"`
	PublishedSkills int `json:"published_skills"`
	Files           int `json:"files"`
}

// String counts in words, leaving out the kinds of which there are none:
// "12 memories, 3 entities, 1 file"; "nothing" when all are zero.
func (r ExportReport) String() string {
	var parts []string
	for _, c := range []struct {
		n           int
		one, plural string
	}{
		{r.Memories, "memory", "memories"},
		{r.Entities, "entity", "entities"},
		{r.Relations, "relation", "relations"},
		{r.Skills, "skill", "skills"},
		{r.PublishedSkills, "published skill", "published skills"},
		{r.Files, "file", "files"},
	} {
		switch {
		case c.n == 1:
			parts = append(parts, "1 "+c.one)
		case c.n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.plural))
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

func (r *ExportReport) add(kind string) {
	switch kind {
	case "memory":
		r.Memories++
	case "entity":
		r.Entities++
	case "relation":
		r.Relations++
	case "skill":
		r.Skills++
	case "published_skill":
		r.PublishedSkills++
	case "file":
		r.Files++
	}
}

// ImportReport says what an import did with each record.
type ImportReport struct {
	// Imported counts the records the store did not hold.
	Imported ExportReport `json:"imported"`
	// Updated counts the records that replaced an older version (by
	// updated_at; published skills by published_at).
	Updated ExportReport `json:"updated"`
	// Skipped counts the records the store already held, as they are or
	// newer.
	Skipped int `json:"skipped"`
	// Conflicts names the records that were not imported because they
	// clash with the store: a skill name another owner has published.
	Conflicts []string `json:"conflicts,omitempty"`
}

// String says what happened in words: "imported 12 memories, 3 entities;
// skipped 30 already present".
func (r ImportReport) String() string {
	out := "imported " + r.Imported.String()
	if u := r.Updated.String(); u != "nothing" {
		out += "; updated " + u
	}
	if r.Skipped > 0 {
		out += fmt.Sprintf("; skipped %d already present", r.Skipped)
	}
	if len(r.Conflicts) > 0 {
		out += "; not imported: " + strings.Join(r.Conflicts, "; ")
	}
	return out
}

// ExportWriter writes an export: a header line, then records, each
// counted. Every backend's Export writes through one.
type ExportWriter struct {
	bw  *bufio.Writer
	enc *json.Encoder
	rep ExportReport
}

// NewExportWriter returns a writer of an export to w.
func NewExportWriter(w io.Writer) *ExportWriter {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	return &ExportWriter{bw: bw, enc: enc}
}

// Header writes the header line: the format version, the embedder of the
// stored vectors and the time of the export.
func (ew *ExportWriter) Header(embedder string, now time.Time) error {
	now = now.UTC()
	return ew.enc.Encode(Record{Kind: "header", Version: ExportVersion, Embedder: embedder, Exported: &now})
}

// Emit writes one record.
func (ew *ExportWriter) Emit(rec Record) error {
	if err := ew.enc.Encode(rec); err != nil {
		return err
	}
	ew.rep.add(rec.Kind)
	return nil
}

// Report counts the records written so far.
func (ew *ExportWriter) Report() ExportReport { return ew.rep }

// Flush writes what is buffered and returns the count of records.
func (ew *ExportWriter) Flush() (ExportReport, error) {
	if err := ew.bw.Flush(); err != nil {
		return ew.rep, fmt.Errorf("export: %w", err)
	}
	return ew.rep, nil
}

// PrepareImport checks the memory of an import record as Import does and
// completes it as Remember would, keeping its session, provenance and
// stable identity (UID).
func PrepareImport(ctx context.Context, rec Record, lim Limits, now time.Time) (PreparedMemory, error) {
	m := rec.Memory
	if m == nil {
		return PreparedMemory{}, fmt.Errorf("%w: memory record without memory", ErrInvalid)
	}
	ctx = tools.WithCaller(ctx, tools.Caller{Principal: rec.Principal, Session: m.Session})
	imp := m.Importance
	p, err := PrepareMemory(ctx, RememberInput{Layer: m.Layer, Content: m.Content, Tags: m.Tags, Metadata: m.Metadata,
		Importance: &imp, Source: m.Source, Session: m.Session, OccurredAt: m.OccurredAt, DueAt: m.DueAt, Status: m.Status, Entities: m.Entities,
		Provenance: m.Provenance}, lim, now, "")
	p.UID = m.UID
	return p, err
}

// ReadExport reads and decodes every line of an export, checking the
// header (the first record; its Version is the format's).
func ReadExport(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	var recs []Record
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("import: line %d: %w: %v", line, ErrInvalid, err)
		}
		if len(recs) == 0 && (rec.Kind != "header" || rec.Version < 1 || rec.Version > ExportVersion) {
			return nil, fmt.Errorf("import: line %d: %w: not a codecell export of version 1 to %d", line, ErrInvalid, ExportVersion)
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("import: line %d: %w", line+1, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("import: %w: empty input", ErrInvalid)
	}
	return recs, nil
}

// ImportOutcome is what an import did with one record.
type ImportOutcome int

// Import outcomes.
const (
	Imported ImportOutcome = iota // added
	Updated                       // replaced an older version
	Skipped                       // already present, as it is or newer
	Refused                       // not imported: a conflict, reported
)

// OutcomeOf says what an import does with a record updated at rec when
// the store holds a version updated at stored (Unix milliseconds), if
// present: add it, replace the older one, or skip it.
func OutcomeOf(present bool, stored int64, rec time.Time) ImportOutcome {
	switch {
	case !present:
		return Imported
	case rec.UnixMilli() > stored:
		return Updated
	}
	return Skipped
}

// ImportedSkill checks the skill of an import record of an export of the
// given format version, and says whose it is and whether it is (also)
// published, as Import does: a version-1 skill of the former shared scope
// is the local user's, published.
func ImportedSkill(rec Record, version int) (sk Skill, owner string, publish bool, err error) {
	if rec.Skill == nil {
		return Skill{}, "", false, fmt.Errorf("%w: skill record without skill", ErrInvalid)
	}
	sk = *rec.Skill
	if !skillNameRE.MatchString(sk.Name) {
		return Skill{}, "", false, fmt.Errorf("%w: skill name %q", ErrInvalid, Clip(sk.Name, 70))
	}
	if sk.Language == "" {
		sk.Language = "javascript"
	}
	if sk.Language != "javascript" && sk.Language != "typescript" {
		return Skill{}, "", false, fmt.Errorf("%w: skill %s: language %q", ErrInvalid, sk.Name, Clip(sk.Language, 20))
	}
	owner = rec.Principal
	publish = rec.Kind == "published_skill"
	if version == 1 && owner == LegacySkillScope {
		owner, publish = LegacySkillOwner, true
	}
	return sk, owner, publish, nil
}

// ImportSteps are what a backend does with each kind of record of an
// export, within the transaction it imports in; ApplyImport calls them in
// the records' order. Memory gets the index of its record.
type ImportSteps struct {
	Memory                 func(i int) (ImportOutcome, error)
	Entity, Relation, File func(rec Record) (ImportOutcome, error)
	Skill                  func(rec Record) (ImportOutcome, []SkillChange, error)
}

// ApplyImport imports recs with the backend's steps, counts in rep what
// was done, and returns the skill changes to announce once the
// transaction commits. Every backend imports through it, so that they
// count and refuse alike.
func ApplyImport(recs []Record, steps ImportSteps, rep *ImportReport) ([]SkillChange, error) {
	var changes []SkillChange
	for i, rec := range recs {
		var outcome ImportOutcome
		var err error
		switch rec.Kind {
		case "header":
			continue
		case "memory":
			outcome, err = steps.Memory(i)
		case "entity":
			outcome, err = steps.Entity(rec)
		case "relation":
			outcome, err = steps.Relation(rec)
		case "skill", "published_skill":
			var chs []SkillChange
			outcome, chs, err = steps.Skill(rec)
			changes = append(changes, chs...)
		case "file":
			outcome, err = steps.File(rec)
		default:
			err = fmt.Errorf("%w: unknown record kind %q", ErrInvalid, rec.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("record %d (%s): %w", i+1, rec.Kind, err)
		}
		rep.Count(rec.Kind, outcome)
	}
	return changes, nil
}

// EmbedEach embeds the text of each item with e, 512 at a time, and hands
// each its vector.
func EmbedEach[T any](ctx context.Context, e Embedder, items []T, text func(T) string, set func(T, []float32)) error {
	for start := 0; start < len(items); start += 512 {
		batch := items[start:min(start+512, len(items))]
		texts := make([]string, len(batch))
		for i, it := range batch {
			texts[i] = text(it)
		}
		vs, err := Embed(ctx, e, texts)
		if err != nil {
			return err
		}
		for i, it := range batch {
			set(it, vs[i])
		}
	}
	return nil
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
