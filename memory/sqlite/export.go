package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/codecell/codecell/tools"
)

// Export writes everything agents stored — memories (with their sessions,
// stable identities and the provenance of merges), entities, relations,
// skills (own copies and published snapshots) and workspace files, of
// every principal, with their stored timestamps — to w as JSON Lines,
// after a header line. It reads one snapshot. Server records (audit log,
// results) are not exported.
func (s *Store) Export(ctx context.Context, w io.Writer) (memory.ExportReport, error) {
	s.vmu.RLock()
	name := s.emb.Name()
	s.vmu.RUnlock()
	ew := memory.NewExportWriter(w)
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
				err = emit(memory.Record{Kind: "entity", Principal: p, Entity: &e})
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
		rows, err = tx.QueryContext(ctx, `SELECT r.principal, r.id, f.name, t.name, r.type, r.weight, r.properties, r.created_at, r.updated_at, r.provenance
			FROM relations r JOIN entities f ON f.id = r.from_id JOIN entities t ON t.id = r.to_id ORDER BY r.id`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var p string
			var r memory.Relation
			var props string
			var c, u int64
			var prov sql.NullString
			err := rows.Scan(&p, &r.ID, &r.From, &r.To, &r.Type, &r.Weight, &props, &c, &u, &prov)
			r.Provenance = provenanceOf(prov)
			if err == nil {
				r.Properties = json.RawMessage(props)
				r.CreatedAt, r.UpdatedAt = fromMS(c), fromMS(u)
				err = emit(memory.Record{Kind: "relation", Principal: p, Relation: &r})
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
					err = emit(memory.Record{Kind: q.kind, Principal: sk.Owner, Skill: &sk})
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
			var f memory.ExportedFile
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
			if err := emit(memory.Record{Kind: "file", Principal: p, File: &f}); err != nil {
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

// exportMemories emits the memories in id order, a page at a time.
func (s *Store) exportMemories(ctx context.Context, tx *sql.Tx, emit func(memory.Record) error) error {
	var after int64
	for {
		rows, err := tx.QueryContext(ctx, `SELECT m.principal, m.uid, `+memoryColumns+` FROM memories m WHERE m.id > ? ORDER BY m.id LIMIT 500`, after)
		if err != nil {
			return err
		}
		type row struct {
			p   string
			uid sql.NullString
			m   memory.Memory
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
			em := memory.ExportedMemory{Memory: r.m, Session: r.m.Session, UID: r.uid.String}
			if err := emit(memory.Record{Kind: "memory", Principal: r.p, Memory: &em, Merges: merges}); err != nil {
				return err
			}
		}
		after = page[len(page)-1].m.ID
	}
}

// importMemory is a memory record of an import, validated.
type importMemory struct {
	rec    int // index of the record
	p      memory.PreparedMemory
	m      *memory.ExportedMemory
	owner  string
	merges []memory.MergedMemory
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
func (s *Store) Import(ctx context.Context, r io.Reader) (memory.ImportReport, error) {
	var rep memory.ImportReport
	recs, err := memory.ReadExport(r)
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
			return rep, fmt.Errorf("import: record %d: %w: memory record without memory", i+1, memory.ErrInvalid)
		}
		m := rec.Memory
		p, err := memory.PrepareImport(ctx, rec, s.lim, s.now())
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
	err = memory.EmbedEach(ctx, s.emb, missing, func(m *importMemory) string { return m.p.Text }, func(m *importMemory, v []float32) { m.vec = v })
	if err != nil {
		return rep, fmt.Errorf("import: %w", err)
	}

	var changes []memory.SkillChange
	err = s.write(ctx, func(tx *sql.Tx) error {
		memByRec := map[int]*importMemory{}
		for _, m := range mems {
			memByRec[m.rec] = m
		}
		changes, err = memory.ApplyImport(recs, memory.ImportSteps{
			Memory:   func(i int) (memory.ImportOutcome, error) { return s.importMemory(ctx, tx, memByRec[i]) },
			Entity:   func(rec memory.Record) (memory.ImportOutcome, error) { return importEntity(ctx, tx, rec) },
			Relation: func(rec memory.Record) (memory.ImportOutcome, error) { return importRelation(ctx, tx, rec) },
			Skill: func(rec memory.Record) (memory.ImportOutcome, []memory.SkillChange, error) {
				return s.importSkill(ctx, tx, rec, version, &rep)
			},
			File: func(rec memory.Record) (memory.ImportOutcome, error) { return s.importFile(ctx, tx, rec) },
		}, &rep)
		return err
	})
	if err != nil {
		var te *tools.Error
		if errors.As(err, &te) {
			return memory.ImportReport{}, fmt.Errorf("import: %w", te)
		}
		return memory.ImportReport{}, fmt.Errorf("import: %w", err)
	}
	for _, ch := range changes {
		s.notifySkills(ch)
	}
	s.log.Info("imported", "report", rep.String())
	return rep, nil
}

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

func (s *Store) importMemory(ctx context.Context, tx *sql.Tx, m *importMemory) (memory.ImportOutcome, error) {
	// Look again: another import may have added it since the read.
	present, err := memoryPresent(ctx, tx, m)
	if err != nil {
		return 0, err
	}
	if present {
		return memory.Skipped, nil
	}
	if m.vec == nil {
		// Added and then removed between the read and this write: a
		// rare race; import it with a vector computed now.
		vs, err := memory.Embed(ctx, s.emb, []string{m.p.Text})
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
		rec := memory.ImportedMergeRecord(mg)
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
	return memory.Imported, nil
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

func importEntity(ctx context.Context, tx *sql.Tx, rec memory.Record) (memory.ImportOutcome, error) {
	if rec.Entity == nil {
		return 0, fmt.Errorf("%w: entity record without entity", memory.ErrInvalid)
	}
	e := rec.Entity
	if err := memory.ValidateEntityName("entity name", e.Name); err != nil {
		return 0, err
	}
	stored, present, err := storedAge(ctx, tx, `SELECT updated_at FROM entities WHERE principal = ? AND name = ? COLLATE NOCASE`, rec.Principal, e.Name)
	if err != nil {
		return 0, err
	}
	outcome := memory.OutcomeOf(present, stored, e.UpdatedAt)
	if outcome == memory.Skipped {
		return memory.Skipped, nil
	}
	props := string(e.Properties)
	if props == "" {
		props = "{}"
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO entities (principal, name, type, description, properties, created_at, updated_at, provenance)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (principal, name COLLATE NOCASE) DO UPDATE SET type = excluded.type,
		description = excluded.description, properties = excluded.properties, updated_at = excluded.updated_at, provenance = excluded.provenance`,
		rec.Principal, e.Name, e.Type, e.Description, props, ms(e.CreatedAt), ms(e.UpdatedAt), provenanceArg(e.Provenance)); err != nil {
		return 0, fmt.Errorf("entity %q: %w", e.Name, err)
	}
	return outcome, nil
}

func importRelation(ctx context.Context, tx *sql.Tx, rec memory.Record) (memory.ImportOutcome, error) {
	if rec.Relation == nil {
		return 0, fmt.Errorf("%w: relation record without relation", memory.ErrInvalid)
	}
	rl := rec.Relation
	from, _, err := ensureEntity(ctx, tx, rec.Principal, rl.From, rl.CreatedAt, rl.Provenance)
	if err != nil {
		return 0, err
	}
	to, _, err := ensureEntity(ctx, tx, rec.Principal, rl.To, rl.CreatedAt, rl.Provenance)
	if err != nil {
		return 0, err
	}
	stored, present, err := storedAge(ctx, tx, `SELECT updated_at FROM relations WHERE from_id = ? AND to_id = ? AND type = ?`, from, to, rl.Type)
	if err != nil {
		return 0, err
	}
	outcome := memory.OutcomeOf(present, stored, rl.UpdatedAt)
	if outcome == memory.Skipped {
		return memory.Skipped, nil
	}
	props := string(rl.Properties)
	if props == "" {
		props = "{}"
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO relations (principal, from_id, to_id, type, weight, properties, created_at, updated_at, provenance)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (from_id, to_id, type) DO UPDATE SET weight = excluded.weight,
		properties = excluded.properties, updated_at = excluded.updated_at, provenance = excluded.provenance`,
		rec.Principal, from, to, rl.Type, rl.Weight, props, ms(rl.CreatedAt), ms(rl.UpdatedAt), provenanceArg(rl.Provenance)); err != nil {
		return 0, fmt.Errorf("relation %s-%s->%s: %w", rl.From, rl.Type, rl.To, err)
	}
	return outcome, nil
}

// importSkill imports an owner's own copy or a published snapshot, and
// returns the skill changes to announce once the import is committed.
func (s *Store) importSkill(ctx context.Context, tx *sql.Tx, rec memory.Record, version int, rep *memory.ImportReport) (memory.ImportOutcome, []memory.SkillChange, error) {
	if rec.Skill == nil {
		return 0, nil, fmt.Errorf("%w: skill record without skill", memory.ErrInvalid)
	}
	sk, owner, publish, err := memory.ImportedSkill(rec, version)
	if err != nil {
		return 0, nil, err
	}
	var schema any
	if len(sk.InputSchema) > 0 {
		schema = string(sk.InputSchema)
	}
	var changes []memory.SkillChange
	outcome := memory.Skipped
	// The owner's own copy (a version-1 shared skill is both).
	if !publish || version == 1 {
		stored, present, err := storedAge(ctx, tx, `SELECT updated_at FROM skills WHERE principal = ? AND name = ?`, owner, sk.Name)
		if err != nil {
			return 0, nil, err
		}
		if outcome = memory.OutcomeOf(present, stored, sk.UpdatedAt); outcome != memory.Skipped {
			if _, err := tx.ExecContext(ctx, `INSERT INTO skills (principal, name, description, code, language, input_schema, version, created_at, updated_at, provenance)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (principal, name) DO UPDATE SET description = excluded.description,
				code = excluded.code, language = excluded.language, input_schema = excluded.input_schema,
				version = max(excluded.version, skills.version + 1), updated_at = excluded.updated_at, provenance = excluded.provenance`,
				owner, sk.Name, sk.Description, sk.Code, sk.Language, schema, max(sk.Version, 1), ms(sk.CreatedAt), ms(sk.UpdatedAt), provenanceArg(sk.Provenance)); err != nil {
				return 0, nil, fmt.Errorf("skill %s: %w", sk.Name, err)
			}
			ch := memory.SkillChange{Principal: owner, Name: sk.Name, Kind: memory.SkillSaved}
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
	pubOutcome := memory.Imported
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return 0, nil, err
	case other != owner:
		rep.Conflicts = append(rep.Conflicts, fmt.Sprintf("skill %s of %s (%s has published that name)", sk.Name, owner, other))
		if version == 1 {
			return outcome, changes, nil
		}
		return memory.Refused, changes, nil
	case ms(publishedAt) > at:
		pubOutcome = memory.Updated
	default:
		pubOutcome = memory.Skipped
	}
	if pubOutcome != memory.Skipped {
		if _, err := tx.ExecContext(ctx, `INSERT INTO published_skills (name, owner, description, code, code_sha256, language, input_schema,
			version, created_at, updated_at, published_at, provenance) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET description = excluded.description, code = excluded.code, code_sha256 = excluded.code_sha256,
			language = excluded.language, input_schema = excluded.input_schema, version = excluded.version,
			created_at = excluded.created_at, updated_at = excluded.updated_at, published_at = excluded.published_at,
			provenance = excluded.provenance`,
			sk.Name, owner, sk.Description, sk.Code, memory.Hash([]byte(sk.Code)), sk.Language, schema, max(sk.Version, 1),
			ms(sk.CreatedAt), ms(sk.UpdatedAt), ms(publishedAt), provenanceArg(sk.Provenance)); err != nil {
			return 0, nil, fmt.Errorf("published skill %s: %w", sk.Name, err)
		}
		ch := memory.SkillChange{Principal: owner, Name: sk.Name, Kind: memory.SkillPublished}
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

func (s *Store) importFile(ctx context.Context, tx *sql.Tx, rec memory.Record) (memory.ImportOutcome, error) {
	if rec.File == nil {
		return 0, fmt.Errorf("%w: file record without file", memory.ErrInvalid)
	}
	f := rec.File
	if err := memory.ValidatePath(f.Path); err != nil {
		return 0, err
	}
	if int64(len(f.Data)) > s.lim.MaxFileBytes {
		return 0, fmt.Errorf("%w: file %s is %d bytes, over the limit of %d", memory.ErrTooLarge, f.Path, len(f.Data), s.lim.MaxFileBytes)
	}
	stored, present, err := storedAge(ctx, tx, `SELECT updated_at FROM workspace_files WHERE principal = ? AND path = ?`, rec.Principal, f.Path)
	if err != nil {
		return 0, err
	}
	outcome := memory.OutcomeOf(present, stored, f.UpdatedAt)
	if outcome == memory.Skipped {
		return memory.Skipped, nil
	}
	prov, err := memory.Provenance(ctx, f.Provenance, "file "+f.Path+": ", s.lim)
	if err != nil {
		return 0, err
	}
	blob := s.enc.EncodeAll(f.Data, nil)
	if _, err := tx.ExecContext(ctx, `INSERT INTO workspace_files (principal, path, size, stored_size, sha256, data, created_at, updated_at, provenance)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (principal, path) DO UPDATE SET size = excluded.size, stored_size = excluded.stored_size,
		sha256 = excluded.sha256, data = excluded.data, updated_at = excluded.updated_at, provenance = excluded.provenance`,
		rec.Principal, f.Path, len(f.Data), len(blob), memory.Hash(f.Data), blob, ms(f.CreatedAt), ms(f.UpdatedAt), provenanceArg(prov)); err != nil {
		return 0, fmt.Errorf("file %s: %w", f.Path, err)
	}
	return outcome, nil
}
