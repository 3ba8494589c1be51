package memory

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
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

// Export writes everything agents stored — memories (with their sessions,
// stable identities and the provenance of merges), entities, relations,
// skills (own copies and published snapshots) and workspace files, of
// every principal, with their stored timestamps — to w as JSON Lines,
// after a header line. It reads one snapshot. Server records (audit log,
// results) are not exported.
func (s *Store) Export(ctx context.Context, w io.Writer) (ExportReport, error) {
	s.vmu.RLock()
	name := s.emb.Name()
	s.vmu.RUnlock()
	ew := NewExportWriter(w)
	emit := ew.Emit
	err := s.read(ctx, func(tx *sql.Tx) error {
		if err := ew.Header(name, s.now()); err != nil {
			return err
		}
		// Entities first: memories and relations refer to them by name.
		rows, err := tx.QueryContext(ctx, `SELECT principal, `+entityColumns+` FROM entities ORDER BY id`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var p string
			e, err := scanEntity(prefixScanner{rows, []any{&p}})
			if err == nil {
				err = emit(Record{Kind: "entity", Principal: p, Entity: &e})
			}
			if err != nil {
				rows.Close()
				return err
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = tx.QueryContext(ctx, `SELECT r.principal, r.id, f.name, t.name, r.type, r.weight, r.properties, r.created_at, r.updated_at
			FROM relations r JOIN entities f ON f.id = r.from_id JOIN entities t ON t.id = r.to_id ORDER BY r.id`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var p string
			var r Relation
			var props string
			var c, u int64
			err := rows.Scan(&p, &r.ID, &r.From, &r.To, &r.Type, &r.Weight, &props, &c, &u)
			if err == nil {
				r.Properties = json.RawMessage(props)
				r.CreatedAt, r.UpdatedAt = fromMS(c), fromMS(u)
				err = emit(Record{Kind: "relation", Principal: p, Relation: &r})
			}
			if err != nil {
				rows.Close()
				return err
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if err := s.exportMemories(ctx, tx, emit); err != nil {
			return err
		}
		for _, q := range []struct{ kind, query string }{
			{"skill", ownSkillSelect + ` ORDER BY s.principal, s.name`},
			{"published_skill", publishedSkillSelect + ` ORDER BY owner, name`},
		} {
			rows, err = tx.QueryContext(ctx, q.query)
			if err != nil {
				return err
			}
			for rows.Next() {
				sk, err := scanSkill(rows)
				if err == nil {
					err = emit(Record{Kind: q.kind, Principal: sk.Owner, Skill: &sk})
				}
				if err != nil {
					rows.Close()
					return err
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		rows, err = tx.QueryContext(ctx, `SELECT principal, path, data, created_at, updated_at, provenance FROM workspace_files ORDER BY principal, path`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p string
			var f ExportedFile
			var blob []byte
			var c, u int64
			var prov sql.NullString
			if err := rows.Scan(&p, &f.Path, &blob, &c, &u, &prov); err != nil {
				return err
			}
			if f.Data, err = s.dec.DecodeAll(blob, nil); err != nil {
				return fmt.Errorf("file %s: decompress: %w", f.Path, err)
			}
			f.CreatedAt, f.UpdatedAt, f.Provenance = fromMS(c), fromMS(u), provenanceOf(prov)
			if err := emit(Record{Kind: "file", Principal: p, File: &f}); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return ew.Report(), fmt.Errorf("export: %w", err)
	}
	return ew.Flush()
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

// exportMemories emits the memories in id order, a page at a time.
func (s *Store) exportMemories(ctx context.Context, tx *sql.Tx, emit func(Record) error) error {
	var after int64
	for {
		rows, err := tx.QueryContext(ctx, `SELECT m.principal, m.uid, `+memoryColumns+` FROM memories m WHERE m.id > ? ORDER BY m.id LIMIT 500`, after)
		if err != nil {
			return err
		}
		type row struct {
			p   string
			uid sql.NullString
			m   Memory
		}
		var page []row
		for rows.Next() {
			var r row
			var err error
			if r.m, err = scanMemory(prefixScanner{rows, []any{&r.p, &r.uid}}); err != nil {
				rows.Close()
				return err
			}
			page = append(page, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		for _, r := range page {
			full, err := loadMemories(ctx, tx, r.p, []int64{r.m.ID})
			if err != nil {
				return err
			}
			if len(full) == 1 {
				r.m.Entities = full[0].Entities
			}
			merges, err := loadMerges(ctx, tx, r.m.ID)
			if err != nil {
				return err
			}
			em := ExportedMemory{Memory: r.m, Session: r.m.Session, UID: r.uid.String}
			if err := emit(Record{Kind: "memory", Principal: r.p, Memory: &em, Merges: merges}); err != nil {
				return err
			}
		}
		after = page[len(page)-1].m.ID
	}
}

// importMemory is a memory record of an import, validated.
type importMemory struct {
	rec    int // index of the record
	p      PreparedMemory
	m      *ExportedMemory
	owner  string
	merges []MergedMemory
	vec    []float32
}

// Import reads an export and adds its records to the store, each under its
// principal, in one transaction: on any error nothing is imported.
//
// Importing is idempotent: a record the store already holds is skipped,
// so importing an export into the store it came from, or twice into
// another, changes nothing. Memories are matched by their stable identity
// (uid), or, in exports of version 1, which have none, by principal,
// layer, content and creation time; entities by name, relations by their
// ends and type, skills by owner and name, published skills by name and
// files by path. A matched record that is newer (updated_at; for a
// published skill published_at) replaces the stored one; otherwise the
// stored one stays. New memories keep their identity, get new ids (links
// and provenance follow them) and are embedded with this store's embedder;
// every record keeps its timestamps. Skills of the former shared scope
// (principal "skills", version 1) are imported as the local user's,
// published, as migration 4 does.
func (s *Store) Import(ctx context.Context, r io.Reader) (ImportReport, error) {
	var rep ImportReport
	recs, err := ReadExport(r)
	if err != nil {
		return rep, err
	}
	version := recs[0].Version

	// Validate the memories, find those the store lacks, and embed those
	// only, before writing anything.
	var mems []*importMemory
	for i, rec := range recs {
		if rec.Kind != "memory" {
			continue
		}
		if rec.Memory == nil {
			return rep, fmt.Errorf("import: record %d: %w: memory record without memory", i+1, ErrInvalid)
		}
		m := rec.Memory
		p, err := PrepareImport(ctx, rec, s.lim, s.now())
		if err != nil {
			return rep, fmt.Errorf("import: record %d (memory %d): %w", i+1, m.ID, err)
		}
		mems = append(mems, &importMemory{rec: i, p: p, m: m, owner: rec.Principal, merges: rec.Merges})
	}
	s.vmu.RLock()
	defer s.vmu.RUnlock()
	if err := s.vectorsReady(); err != nil {
		return rep, err
	}
	var missing []*importMemory
	err = s.read(ctx, func(tx *sql.Tx) error {
		for _, m := range mems {
			present, err := memoryPresent(ctx, tx, m)
			if err != nil {
				return err
			}
			if !present {
				missing = append(missing, m)
			}
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("import: %w", err)
	}
	err = EmbedEach(ctx, s.emb, missing, func(m *importMemory) string { return m.p.Text }, func(m *importMemory, v []float32) { m.vec = v })
	if err != nil {
		return rep, fmt.Errorf("import: %w", err)
	}

	var changes []SkillChange
	err = s.write(ctx, func(tx *sql.Tx) error {
		memByRec := map[int]*importMemory{}
		for _, m := range mems {
			memByRec[m.rec] = m
		}
		changes, err = ApplyImport(recs, ImportSteps{
			Memory:   func(i int) (ImportOutcome, error) { return s.importMemory(ctx, tx, memByRec[i]) },
			Entity:   func(rec Record) (ImportOutcome, error) { return importEntity(ctx, tx, rec) },
			Relation: func(rec Record) (ImportOutcome, error) { return importRelation(ctx, tx, rec) },
			Skill: func(rec Record) (ImportOutcome, []SkillChange, error) {
				return s.importSkill(ctx, tx, rec, version, &rep)
			},
			File: func(rec Record) (ImportOutcome, error) { return s.importFile(ctx, tx, rec) },
		}, &rep)
		return err
	})
	if err != nil {
		var te *tools.Error
		if errors.As(err, &te) {
			return ImportReport{}, fmt.Errorf("import: %w", te)
		}
		return ImportReport{}, fmt.Errorf("import: %w", err)
	}
	for _, ch := range changes {
		s.notifySkills(ch)
	}
	s.log.Info("imported", "report", rep.String())
	return rep, nil
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

// memoryPresent reports whether the store holds the memory m: one with
// its uid, or, for a record without one, one of the same principal,
// layer, content and creation time.
func memoryPresent(ctx context.Context, q queryer, m *importMemory) (bool, error) {
	var n int
	var err error
	if m.m.UID != "" {
		err = q.QueryRowContext(ctx, `SELECT count(*) FROM memories WHERE uid = ?`, m.m.UID).Scan(&n)
	} else {
		err = q.QueryRowContext(ctx, `SELECT count(*) FROM memories WHERE principal = ? AND layer = ? AND content = ? AND created_at = ?`,
			m.owner, string(m.p.Input.Layer), m.p.Input.Content, ms(m.m.CreatedAt)).Scan(&n)
	}
	if err != nil {
		return false, fmt.Errorf("find memory: %w", err)
	}
	return n > 0, nil
}

func (s *Store) importMemory(ctx context.Context, tx *sql.Tx, m *importMemory) (ImportOutcome, error) {
	// Look again: another import may have added it since the read.
	present, err := memoryPresent(ctx, tx, m)
	if err != nil {
		return 0, err
	}
	if present {
		return Skipped, nil
	}
	if m.vec == nil {
		// Added and then removed between the read and this write: a
		// rare race; import it with a vector computed now.
		vs, err := Embed(ctx, s.emb, []string{m.p.Text})
		if err != nil {
			return 0, err
		}
		m.vec = vs[0]
	}
	fts, err := ensureFTSTable(ctx, tx, m.owner)
	if err != nil {
		return 0, err
	}
	id, err := s.insertMemory(ctx, tx, m.owner, fts, m.p, m.vec, m.m.CreatedAt, m.m.UpdatedAt)
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE memories SET access_count = ?, accessed_at = ? WHERE id = ?`, m.m.AccessCount, nullMS(m.m.AccessedAt), id); err != nil {
		return 0, err
	}
	for _, mg := range m.merges {
		rec := "{}"
		if mg.Record != nil {
			rec = MergeRecord(*mg.Record, "")
		}
		// Merged ids of the source store may collide here: keep
		// provenance under a fresh negative id when they do.
		mid := mg.ID
		var exists int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM memory_merges WHERE merged_id = ?`, mid).Scan(&exists); err != nil {
			return 0, err
		}
		if exists > 0 {
			if err := tx.QueryRowContext(ctx, `SELECT min(0, coalesce(min(merged_id), 0)) - 1 FROM memory_merges`).Scan(&mid); err != nil {
				return 0, err
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO memory_merges (merged_id, survivor_id, principal, record, similarity, overlap, merged_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, mid, id, m.owner, rec, mg.Similarity, mg.Overlap, ms(mg.MergedAt)); err != nil {
			return 0, fmt.Errorf("provenance of memory %d: %w", m.m.ID, err)
		}
	}
	return Imported, nil
}

// storedAge returns the updated_at of the row the query selects, or false
// when there is none.
func storedAge(ctx context.Context, tx *sql.Tx, query string, args ...any) (int64, bool, error) {
	var u int64
	err := tx.QueryRowContext(ctx, query, args...).Scan(&u)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return u, true, nil
}

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

func importEntity(ctx context.Context, tx *sql.Tx, rec Record) (ImportOutcome, error) {
	if rec.Entity == nil {
		return 0, fmt.Errorf("%w: entity record without entity", ErrInvalid)
	}
	e := rec.Entity
	if err := ValidateEntityName("entity name", e.Name); err != nil {
		return 0, err
	}
	stored, present, err := storedAge(ctx, tx, `SELECT updated_at FROM entities WHERE principal = ? AND name = ? COLLATE NOCASE`, rec.Principal, e.Name)
	if err != nil {
		return 0, err
	}
	outcome := OutcomeOf(present, stored, e.UpdatedAt)
	if outcome == Skipped {
		return Skipped, nil
	}
	props := string(e.Properties)
	if props == "" {
		props = "{}"
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO entities (principal, name, type, description, properties, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (principal, name COLLATE NOCASE) DO UPDATE SET type = excluded.type,
		description = excluded.description, properties = excluded.properties, updated_at = excluded.updated_at`,
		rec.Principal, e.Name, e.Type, e.Description, props, ms(e.CreatedAt), ms(e.UpdatedAt)); err != nil {
		return 0, fmt.Errorf("entity %q: %w", e.Name, err)
	}
	return outcome, nil
}

func importRelation(ctx context.Context, tx *sql.Tx, rec Record) (ImportOutcome, error) {
	if rec.Relation == nil {
		return 0, fmt.Errorf("%w: relation record without relation", ErrInvalid)
	}
	rl := rec.Relation
	from, _, err := ensureEntity(ctx, tx, rec.Principal, rl.From, rl.CreatedAt)
	if err != nil {
		return 0, err
	}
	to, _, err := ensureEntity(ctx, tx, rec.Principal, rl.To, rl.CreatedAt)
	if err != nil {
		return 0, err
	}
	stored, present, err := storedAge(ctx, tx, `SELECT updated_at FROM relations WHERE from_id = ? AND to_id = ? AND type = ?`, from, to, rl.Type)
	if err != nil {
		return 0, err
	}
	outcome := OutcomeOf(present, stored, rl.UpdatedAt)
	if outcome == Skipped {
		return Skipped, nil
	}
	props := string(rl.Properties)
	if props == "" {
		props = "{}"
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO relations (principal, from_id, to_id, type, weight, properties, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (from_id, to_id, type) DO UPDATE SET weight = excluded.weight,
		properties = excluded.properties, updated_at = excluded.updated_at`,
		rec.Principal, from, to, rl.Type, rl.Weight, props, ms(rl.CreatedAt), ms(rl.UpdatedAt)); err != nil {
		return 0, fmt.Errorf("relation %s-%s->%s: %w", rl.From, rl.Type, rl.To, err)
	}
	return outcome, nil
}

// importSkill imports an owner's own copy or a published snapshot, and
// returns the skill changes to announce once the import is committed.
func (s *Store) importSkill(ctx context.Context, tx *sql.Tx, rec Record, version int, rep *ImportReport) (ImportOutcome, []SkillChange, error) {
	if rec.Skill == nil {
		return 0, nil, fmt.Errorf("%w: skill record without skill", ErrInvalid)
	}
	sk, owner, publish, err := ImportedSkill(rec, version)
	if err != nil {
		return 0, nil, err
	}
	var schema any
	if len(sk.InputSchema) > 0 {
		schema = string(sk.InputSchema)
	}
	var changes []SkillChange
	outcome := Skipped
	// The owner's own copy (a version-1 shared skill is both).
	if !publish || version == 1 {
		stored, present, err := storedAge(ctx, tx, `SELECT updated_at FROM skills WHERE principal = ? AND name = ?`, owner, sk.Name)
		if err != nil {
			return 0, nil, err
		}
		if outcome = OutcomeOf(present, stored, sk.UpdatedAt); outcome != Skipped {
			if _, err := tx.ExecContext(ctx, `INSERT INTO skills (principal, name, description, code, language, input_schema, version, created_at, updated_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (principal, name) DO UPDATE SET description = excluded.description,
				code = excluded.code, language = excluded.language, input_schema = excluded.input_schema,
				version = max(excluded.version, skills.version + 1), updated_at = excluded.updated_at`,
				owner, sk.Name, sk.Description, sk.Code, sk.Language, schema, max(sk.Version, 1), ms(sk.CreatedAt), ms(sk.UpdatedAt)); err != nil {
				return 0, nil, fmt.Errorf("skill %s: %w", sk.Name, err)
			}
			ch := SkillChange{Principal: owner, Name: sk.Name, Kind: SkillSaved}
			if err := s.skillChanged(ctx, tx, &ch); err != nil {
				return 0, nil, err
			}
			changes = append(changes, ch)
		}
	}
	if !publish {
		return outcome, changes, nil
	}
	publishedAt := sk.UpdatedAt
	if sk.PublishedAt != nil {
		publishedAt = *sk.PublishedAt
	}
	var other string
	var at int64
	err = tx.QueryRowContext(ctx, `SELECT owner, published_at FROM published_skills WHERE name = ?`, sk.Name).Scan(&other, &at)
	pubOutcome := Imported
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return 0, nil, err
	case other != owner:
		rep.Conflicts = append(rep.Conflicts, fmt.Sprintf("skill %s of %s (%s has published that name)", sk.Name, owner, other))
		if version == 1 {
			return outcome, changes, nil
		}
		return Refused, changes, nil
	case ms(publishedAt) > at:
		pubOutcome = Updated
	default:
		pubOutcome = Skipped
	}
	if pubOutcome != Skipped {
		if _, err := tx.ExecContext(ctx, `INSERT INTO published_skills (name, owner, description, code, code_sha256, language, input_schema,
			version, created_at, updated_at, published_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET description = excluded.description, code = excluded.code, code_sha256 = excluded.code_sha256,
			language = excluded.language, input_schema = excluded.input_schema, version = excluded.version,
			created_at = excluded.created_at, updated_at = excluded.updated_at, published_at = excluded.published_at`,
			sk.Name, owner, sk.Description, sk.Code, Hash([]byte(sk.Code)), sk.Language, schema, max(sk.Version, 1),
			ms(sk.CreatedAt), ms(sk.UpdatedAt), ms(publishedAt)); err != nil {
			return 0, nil, fmt.Errorf("published skill %s: %w", sk.Name, err)
		}
		ch := SkillChange{Principal: owner, Name: sk.Name, Kind: SkillPublished}
		if err := s.skillChanged(ctx, tx, &ch); err != nil {
			return 0, nil, err
		}
		changes = append(changes, ch)
	}
	if version == 1 {
		// One record stood for both: count it once, by its copy.
		return outcome, changes, nil
	}
	return pubOutcome, changes, nil
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

func (s *Store) importFile(ctx context.Context, tx *sql.Tx, rec Record) (ImportOutcome, error) {
	if rec.File == nil {
		return 0, fmt.Errorf("%w: file record without file", ErrInvalid)
	}
	f := rec.File
	if err := ValidatePath(f.Path); err != nil {
		return 0, err
	}
	if int64(len(f.Data)) > s.lim.MaxFileBytes {
		return 0, fmt.Errorf("%w: file %s is %d bytes, over the limit of %d", ErrTooLarge, f.Path, len(f.Data), s.lim.MaxFileBytes)
	}
	stored, present, err := storedAge(ctx, tx, `SELECT updated_at FROM workspace_files WHERE principal = ? AND path = ?`, rec.Principal, f.Path)
	if err != nil {
		return 0, err
	}
	outcome := OutcomeOf(present, stored, f.UpdatedAt)
	if outcome == Skipped {
		return Skipped, nil
	}
	prov, err := Provenance(ctx, f.Provenance, "file "+f.Path+": ", s.lim)
	if err != nil {
		return 0, err
	}
	blob := s.enc.EncodeAll(f.Data, nil)
	if _, err := tx.ExecContext(ctx, `INSERT INTO workspace_files (principal, path, size, stored_size, sha256, data, created_at, updated_at, provenance)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (principal, path) DO UPDATE SET size = excluded.size, stored_size = excluded.stored_size,
		sha256 = excluded.sha256, data = excluded.data, updated_at = excluded.updated_at, provenance = excluded.provenance`,
		rec.Principal, f.Path, len(f.Data), len(blob), Hash(f.Data), blob, ms(f.CreatedAt), ms(f.UpdatedAt), provenanceArg(prov)); err != nil {
		return 0, fmt.Errorf("file %s: %w", f.Path, err)
	}
	return outcome, nil
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
