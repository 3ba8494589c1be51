package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
)

// Export and Import in the format of memory/export.go (JSON Lines, one
// record per memory, entity, relation, skill, published skill and
// workspace file), so that an export of either backend imports into the
// other. The rules (validation, which record wins, the report) are
// package memory's; the SQL is here.

// Export writes everything agents stored, of every principal, to w as
// sqlite.Store.Export does, from one snapshot. Server records (audit log,
// results) are not exported.
func (s *Store) Export(ctx context.Context, w io.Writer) (memory.ExportReport, error) {
	s.vmu.RLock()
	name := s.emb.Name()
	s.vmu.RUnlock()
	ew := memory.NewExportWriter(w)
	err := s.readTx(ctx, func(tx pgx.Tx) error {
		if err := ew.Header(name, s.now()); err != nil {
			return err
		}
		// Entities first: memories and relations refer to them by name.
		rows, err := tx.Query(ctx, `SELECT principal, `+entityColumns+` FROM entities ORDER BY id`)
		if err != nil {
			return err
		}
		if err := emitRows(rows, func(r pgx.CollectableRow) error {
			var p string
			e, err := scanEntity(prefixRow{r, &p})
			if err != nil {
				return err
			}
			return ew.Emit(memory.Record{Kind: "entity", Principal: p, Entity: &e})
		}); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT r.principal, r.id FROM relations r ORDER BY r.id`)
		if err != nil {
			return err
		}
		type ref struct {
			p  string
			id int64
		}
		rels, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ref, error) {
			var x ref
			return x, r.Scan(&x.p, &x.id)
		})
		if err != nil {
			return err
		}
		for _, x := range rels {
			rl, err := relationByID(ctx, tx, x.id)
			if err != nil {
				return err
			}
			if err := ew.Emit(memory.Record{Kind: "relation", Principal: x.p, Relation: &rl}); err != nil {
				return err
			}
		}
		if err := s.exportMemories(ctx, tx, ew); err != nil {
			return err
		}
		for _, q := range []struct{ kind, query string }{
			{"skill", ownSkillSelect + ` ORDER BY s.principal COLLATE "C", s.name COLLATE "C"`},
			{"published_skill", publishedSkillSelect + ` ORDER BY owner COLLATE "C", name COLLATE "C"`},
		} {
			rows, err := tx.Query(ctx, q.query)
			if err != nil {
				return err
			}
			if err := emitRows(rows, func(r pgx.CollectableRow) error {
				sk, err := scanSkill(r)
				if err != nil {
					return err
				}
				return ew.Emit(memory.Record{Kind: q.kind, Principal: sk.Owner, Skill: &sk})
			}); err != nil {
				return err
			}
		}
		rows, err = tx.Query(ctx, `SELECT principal, path, data, created_at, updated_at, provenance FROM workspace_files
			ORDER BY principal COLLATE "C", path COLLATE "C"`)
		if err != nil {
			return err
		}
		return emitRows(rows, func(r pgx.CollectableRow) error {
			var p string
			var f memory.ExportedFile
			var blob []byte
			var c, u int64
			var prov *string
			if err := r.Scan(&p, &f.Path, &blob, &c, &u, &prov); err != nil {
				return err
			}
			var err error
			if f.Data, err = s.dec.DecodeAll(blob, nil); err != nil {
				return fmt.Errorf("file %s: decompress: %w", f.Path, err)
			}
			f.CreatedAt, f.UpdatedAt, f.Provenance = fromMS(c), fromMS(u), provOf(prov)
			return ew.Emit(memory.Record{Kind: "file", Principal: p, File: &f})
		})
	})
	if err != nil {
		return ew.Report(), fmt.Errorf("export: %w", err)
	}
	return ew.Flush()
}

// emitRows calls fn for each row and closes the rows.
func emitRows(rows pgx.Rows, fn func(pgx.CollectableRow) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// prefixRow scans one column before those of the row's scanner.
type prefixRow struct {
	r     pgx.CollectableRow
	first any
}

func (p prefixRow) Scan(dest ...any) error { return p.r.Scan(append([]any{p.first}, dest...)...) }

// exportMemories emits the memories in id order, a page at a time, with
// their entities and what consolidation merged into them.
func (s *Store) exportMemories(ctx context.Context, tx pgx.Tx, ew *memory.ExportWriter) error {
	var after int64
	for {
		type row struct {
			p, uid string
		}
		var page []row
		var ids []int64
		var r row
		var uid *string
		var id int64
		rows, err := tx.Query(ctx, `SELECT m.principal, m.uid, m.id FROM memories m WHERE m.id > $1 ORDER BY m.id LIMIT 500`, after)
		if err != nil {
			return err
		}
		if _, err := pgx.ForEachRow(rows, []any{&r.p, &uid, &id}, func() error {
			r.uid = ""
			if uid != nil {
				r.uid = *uid
			}
			page = append(page, r)
			ids = append(ids, id)
			return nil
		}); err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		for i, x := range page {
			ms, err := s.loadMemories(ctx, tx, x.p, ids[i:i+1])
			if err != nil {
				return err
			}
			if len(ms) == 0 {
				continue
			}
			merges, err := loadMerges(ctx, tx, ids[i])
			if err != nil {
				return err
			}
			em := memory.ExportedMemory{Memory: ms[0], Session: ms[0].Session, UID: x.uid}
			if err := ew.Emit(memory.Record{Kind: "memory", Principal: x.p, Memory: &em, Merges: merges}); err != nil {
				return err
			}
		}
		after = ids[len(ids)-1]
	}
}

// importMemory is a memory record of an import, checked.
type importMemory struct {
	rec   memory.Record
	p     memory.PreparedMemory
	vec   []float32
	owner string
}

// Import reads an export (of either backend) and adds its records to the
// database, each under its principal, in one transaction: on any error
// nothing is imported. It is idempotent and keeps the newer of two
// versions, as sqlite.Store.Import does (see there for how records are
// matched).
func (s *Store) Import(ctx context.Context, r io.Reader) (memory.ImportReport, error) {
	var rep memory.ImportReport
	recs, err := memory.ReadExport(r)
	if err != nil {
		return rep, err
	}
	version := recs[0].Version
	mems := map[int]*importMemory{}
	for i, rec := range recs {
		if rec.Kind != "memory" {
			continue
		}
		p, err := memory.PrepareImport(ctx, rec, s.lim, s.now())
		if err != nil {
			id := int64(0)
			if rec.Memory != nil {
				id = rec.Memory.ID
			}
			return rep, fmt.Errorf("import: record %d (memory %d): %w", i+1, id, err)
		}
		mems[i] = &importMemory{rec: rec, p: p, owner: rec.Principal}
	}
	release, err := s.vectorsReady(ctx)
	if err != nil {
		return rep, err
	}
	defer release()
	// Embed only the memories the database lacks, before writing.
	var missing []*importMemory
	err = s.readTx(ctx, func(tx pgx.Tx) error {
		for i := range recs {
			m := mems[i]
			if m == nil {
				continue
			}
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
	err = s.tx(ctx, func(tx pgx.Tx) error {
		rep = memory.ImportReport{}
		if err := lockCodes(ctx, tx); err != nil {
			return err
		}
		changes, err = memory.ApplyImport(recs, memory.ImportSteps{
			Memory:   func(i int) (memory.ImportOutcome, error) { return s.importMemory(ctx, tx, mems[i]) },
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
		return memory.ImportReport{}, fmt.Errorf("import: %w", err)
	}
	for _, ch := range changes {
		s.notifySkills(ch)
	}
	s.log.Info("imported", "report", rep.String())
	return rep, nil
}

// memoryPresent reports whether the database holds the memory m: one with
// its uid, or, for a record without one, one of the same principal,
// layer, content and creation time.
func memoryPresent(ctx context.Context, q querier, m *importMemory) (bool, error) {
	var present bool
	var err error
	if uid := m.rec.Memory.UID; uid != "" {
		err = q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM memories WHERE uid = $1)`, uid).Scan(&present)
	} else {
		err = q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM memories WHERE principal = $1 AND layer = $2 AND content = $3 AND created_at = $4)`,
			m.owner, string(m.p.Input.Layer), m.p.Input.Content, ms(m.rec.Memory.CreatedAt)).Scan(&present)
	}
	if err != nil {
		return false, fmt.Errorf("find memory: %w", err)
	}
	return present, nil
}

func (s *Store) importMemory(ctx context.Context, tx pgx.Tx, m *importMemory) (memory.ImportOutcome, error) {
	// Look again: another import may have added it since the read.
	present, err := memoryPresent(ctx, tx, m)
	if err != nil || present {
		return memory.Skipped, err
	}
	if m.vec == nil {
		// Added and removed between the read and this write: embed now.
		vs, err := memory.Embed(ctx, s.emb, []string{m.p.Text})
		if err != nil {
			return 0, err
		}
		m.vec = vs[0]
	}
	rm := m.rec.Memory
	id, err := s.insertMemory(ctx, tx, m.owner, m.p, m.vec, rm.CreatedAt, rm.UpdatedAt, rm.UID)
	if err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `UPDATE memories SET access_count = $1, accessed_at = $2 WHERE id = $3`, rm.AccessCount, nullMS(rm.AccessedAt), id); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO memory_counts (principal, n) VALUES ($1, 1) ON CONFLICT (principal) DO UPDATE SET n = memory_counts.n + 1`, m.owner); err != nil {
		return 0, err
	}
	for _, mg := range m.rec.Merges {
		rec := memory.ImportedMergeRecord(mg)
		// Merged ids of the source store may collide here: keep the
		// provenance under a fresh negative id when they do.
		mid := mg.ID
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM memory_merges WHERE merged_id = $1)`, mid).Scan(&exists); err != nil {
			return 0, err
		}
		if exists {
			if err := tx.QueryRow(ctx, `SELECT least(0, coalesce(min(merged_id), 0)) - 1 FROM memory_merges`).Scan(&mid); err != nil {
				return 0, err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO memory_merges (merged_id, survivor_id, principal, record, similarity, overlap, merged_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, mid, id, m.owner, rec, mg.Similarity, mg.Overlap, ms(mg.MergedAt)); err != nil {
			return 0, fmt.Errorf("provenance of memory %d: %w", rm.ID, err)
		}
	}
	return memory.Imported, nil
}

// storedAge returns the updated_at of the row the query selects, or false
// when there is none.
func storedAge(ctx context.Context, tx pgx.Tx, query string, args ...any) (int64, bool, error) {
	var u int64
	err := tx.QueryRow(ctx, query, args...).Scan(&u)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return u, err == nil, err
}

func orEmptyObject(b []byte) string {
	if len(b) == 0 {
		return "{}"
	}
	return string(b)
}

func importEntity(ctx context.Context, tx pgx.Tx, rec memory.Record) (memory.ImportOutcome, error) {
	e := rec.Entity
	if e == nil {
		return 0, fmt.Errorf("%w: entity record without entity", memory.ErrInvalid)
	}
	if err := memory.ValidateEntityName("entity name", e.Name); err != nil {
		return 0, err
	}
	stored, present, err := storedAge(ctx, tx, `SELECT updated_at FROM entities WHERE principal = $1 AND lower(name) = lower($2)`, rec.Principal, e.Name)
	if err != nil {
		return 0, err
	}
	outcome := memory.OutcomeOf(present, stored, e.UpdatedAt)
	if outcome == memory.Skipped {
		return outcome, nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO entities (principal, name, type, description, properties, created_at, updated_at, provenance)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (principal, lower(name)) DO UPDATE SET type = excluded.type,
		description = excluded.description, properties = excluded.properties, updated_at = excluded.updated_at, provenance = excluded.provenance`,
		rec.Principal, e.Name, e.Type, e.Description, orEmptyObject(e.Properties), ms(e.CreatedAt), ms(e.UpdatedAt), provArg(e.Provenance)); err != nil {
		return 0, fmt.Errorf("entity %q: %w", e.Name, err)
	}
	return outcome, nil
}

func importRelation(ctx context.Context, tx pgx.Tx, rec memory.Record) (memory.ImportOutcome, error) {
	rl := rec.Relation
	if rl == nil {
		return 0, fmt.Errorf("%w: relation record without relation", memory.ErrInvalid)
	}
	from, _, err := ensureEntity(ctx, tx, rec.Principal, rl.From, rl.CreatedAt, rl.Provenance)
	if err != nil {
		return 0, err
	}
	to, _, err := ensureEntity(ctx, tx, rec.Principal, rl.To, rl.CreatedAt, rl.Provenance)
	if err != nil {
		return 0, err
	}
	stored, present, err := storedAge(ctx, tx, `SELECT updated_at FROM relations WHERE from_id = $1 AND to_id = $2 AND type = $3`, from, to, rl.Type)
	if err != nil {
		return 0, err
	}
	outcome := memory.OutcomeOf(present, stored, rl.UpdatedAt)
	if outcome == memory.Skipped {
		return outcome, nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO relations (principal, from_id, to_id, type, weight, properties, created_at, updated_at, provenance)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (from_id, to_id, type) DO UPDATE SET weight = excluded.weight,
		properties = excluded.properties, updated_at = excluded.updated_at, provenance = excluded.provenance`,
		rec.Principal, from, to, rl.Type, rl.Weight, orEmptyObject(rl.Properties), ms(rl.CreatedAt), ms(rl.UpdatedAt), provArg(rl.Provenance)); err != nil {
		return 0, fmt.Errorf("relation %s-%s->%s: %w", rl.From, rl.Type, rl.To, err)
	}
	return outcome, nil
}

// importSkill imports an owner's own copy or a published snapshot, and
// returns the skill changes to announce once the import is committed.
func (s *Store) importSkill(ctx context.Context, tx pgx.Tx, rec memory.Record, version int, rep *memory.ImportReport) (memory.ImportOutcome, []memory.SkillChange, error) {
	sk, owner, publish, err := memory.ImportedSkill(rec, version)
	if err != nil {
		return 0, nil, err
	}
	var schema *string
	if len(sk.InputSchema) > 0 {
		v := string(sk.InputSchema)
		schema = &v
	}
	var changes []memory.SkillChange
	outcome := memory.Skipped
	// The owner's own copy (a version-1 shared skill is both).
	if !publish || version == 1 {
		stored, present, err := storedAge(ctx, tx, `SELECT updated_at FROM skills WHERE principal = $1 AND name = $2`, owner, sk.Name)
		if err != nil {
			return 0, nil, err
		}
		if outcome = memory.OutcomeOf(present, stored, sk.UpdatedAt); outcome != memory.Skipped {
			if _, err := tx.Exec(ctx, `INSERT INTO skills (principal, name, description, code, language, input_schema, version, created_at, updated_at, provenance)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (principal, name) DO UPDATE SET description = excluded.description,
				code = excluded.code, language = excluded.language, input_schema = excluded.input_schema,
				version = greatest(excluded.version, skills.version + 1), updated_at = excluded.updated_at, provenance = excluded.provenance`,
				owner, sk.Name, sk.Description, sk.Code, sk.Language, schema, max(sk.Version, 1), ms(sk.CreatedAt), ms(sk.UpdatedAt), provArg(sk.Provenance)); err != nil {
				return 0, nil, fmt.Errorf("skill %s: %w", sk.Name, err)
			}
			ch, err := s.skillChanged(ctx, tx, owner, sk.Name, memory.SkillSaved)
			if err != nil {
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
	err = tx.QueryRow(ctx, `SELECT owner, published_at FROM published_skills WHERE name = $1`, sk.Name).Scan(&other, &at)
	pubOutcome := memory.Imported
	switch {
	case errors.Is(err, pgx.ErrNoRows):
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
		if _, err := tx.Exec(ctx, `INSERT INTO published_skills (name, owner, description, code, code_sha256, language, input_schema,
			version, created_at, updated_at, published_at, provenance) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			ON CONFLICT (name) DO UPDATE SET description = excluded.description, code = excluded.code, code_sha256 = excluded.code_sha256,
			language = excluded.language, input_schema = excluded.input_schema, version = excluded.version,
			created_at = excluded.created_at, updated_at = excluded.updated_at, published_at = excluded.published_at,
			provenance = excluded.provenance`,
			sk.Name, owner, sk.Description, sk.Code, memory.Hash([]byte(sk.Code)), sk.Language, schema, max(sk.Version, 1),
			ms(sk.CreatedAt), ms(sk.UpdatedAt), ms(publishedAt), provArg(sk.Provenance)); err != nil {
			return 0, nil, fmt.Errorf("published skill %s: %w", sk.Name, err)
		}
		ch, err := s.skillChanged(ctx, tx, owner, sk.Name, memory.SkillPublished)
		if err != nil {
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

func (s *Store) importFile(ctx context.Context, tx pgx.Tx, rec memory.Record) (memory.ImportOutcome, error) {
	f := rec.File
	if f == nil {
		return 0, fmt.Errorf("%w: file record without file", memory.ErrInvalid)
	}
	if err := memory.ValidatePath(f.Path); err != nil {
		return 0, err
	}
	if int64(len(f.Data)) > s.lim.MaxFileBytes {
		return 0, fmt.Errorf("%w: file %s is %d bytes, over the limit of %d", memory.ErrTooLarge, f.Path, len(f.Data), s.lim.MaxFileBytes)
	}
	stored, present, err := storedAge(ctx, tx, `SELECT updated_at FROM workspace_files WHERE principal = $1 AND path = $2`, rec.Principal, f.Path)
	if err != nil {
		return 0, err
	}
	outcome := memory.OutcomeOf(present, stored, f.UpdatedAt)
	if outcome == memory.Skipped {
		return outcome, nil
	}
	prov, err := memory.Provenance(ctx, f.Provenance, "file "+f.Path+": ", s.lim)
	if err != nil {
		return 0, err
	}
	blob := s.enc.EncodeAll(f.Data, nil)
	if _, err := tx.Exec(ctx, `INSERT INTO workspace_files (principal, path, size, stored_size, sha256, data, created_at, updated_at, provenance)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (principal, path) DO UPDATE SET size = excluded.size, stored_size = excluded.stored_size,
		sha256 = excluded.sha256, data = excluded.data, updated_at = excluded.updated_at, provenance = excluded.provenance`,
		rec.Principal, f.Path, len(f.Data), len(blob), memory.Hash(f.Data), blob, ms(f.CreatedAt), ms(f.UpdatedAt), provArg(prov)); err != nil {
		return 0, fmt.Errorf("file %s: %w", f.Path, err)
	}
	return outcome, nil
}
