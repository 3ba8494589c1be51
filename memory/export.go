package memory

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/codecell/codecell/tools"
)

// ExportVersion is the format version written in the header line.
const ExportVersion = 1

// Record is one line of an export: Kind says which of the other fields is
// set. Every record carries its principal. Vectors are not exported: Import
// re-embeds with the importing store's embedder.
type Record struct {
	Kind      string `json:"kind"` // header, memory, entity, relation, skill, file
	Principal string `json:"principal,omitempty"`

	// header
	Version  int       `json:"version,omitempty"`
	Embedder string    `json:"embedder,omitempty"`
	Exported time.Time `json:"exported,omitempty"`

	Memory   *Memory        `json:"memory,omitempty"`
	Entity   *Entity        `json:"entity,omitempty"`
	Relation *Relation      `json:"relation,omitempty"`
	Skill    *Skill         `json:"skill,omitempty"`
	File     *ExportedFile  `json:"file,omitempty"`
	Merges   []MergedMemory `json:"merges,omitempty"`
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

// ExportReport counts what was exported or imported.
type ExportReport struct {
	Memories  int `json:"memories"`
	Entities  int `json:"entities"`
	Relations int `json:"relations"`
	Skills    int `json:"skills"`
	Files     int `json:"files"`
}

// Export writes everything agents stored — memories (with provenance of
// merges), entities, relations, skills and workspace files, of every
// principal — to w as JSON Lines, after a header line. It reads one
// snapshot. Server records (audit log, results) are not exported.
func (s *Store) Export(ctx context.Context, w io.Writer) (ExportReport, error) {
	var rep ExportReport
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	s.vmu.RLock()
	name := s.emb.Name()
	s.vmu.RUnlock()
	err := s.read(ctx, func(tx *sql.Tx) error {
		if err := enc.Encode(Record{Kind: "header", Version: ExportVersion, Embedder: name, Exported: s.now().UTC()}); err != nil {
			return err
		}
		// Entities first: memories and relations refer to them by name.
		rows, err := tx.QueryContext(ctx, `SELECT principal, `+entityColumns+` FROM entities ORDER BY id`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var p string
			var e Entity
			var props string
			var c, u int64
			if err := rows.Scan(&p, &e.ID, &e.Name, &e.Type, &e.Description, &props, &c, &u); err != nil {
				rows.Close()
				return err
			}
			e.Properties = json.RawMessage(props)
			e.CreatedAt, e.UpdatedAt = fromMS(c), fromMS(u)
			if err := enc.Encode(Record{Kind: "entity", Principal: p, Entity: &e}); err != nil {
				rows.Close()
				return err
			}
			rep.Entities++
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
			if err := rows.Scan(&p, &r.ID, &r.From, &r.To, &r.Type, &r.Weight, &props, &c, &u); err != nil {
				rows.Close()
				return err
			}
			r.Properties = json.RawMessage(props)
			r.CreatedAt, r.UpdatedAt = fromMS(c), fromMS(u)
			if err := enc.Encode(Record{Kind: "relation", Principal: p, Relation: &r}); err != nil {
				rows.Close()
				return err
			}
			rep.Relations++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		// Memories in id order, a page at a time.
		var after int64
		for {
			rows, err := tx.QueryContext(ctx, `SELECT m.principal, `+memoryColumns+` FROM memories m WHERE m.id > ? ORDER BY m.id LIMIT 500`, after)
			if err != nil {
				return err
			}
			type row struct {
				p string
				m Memory
			}
			var page []row
			for rows.Next() {
				var r row
				var err error
				if r.m, err = scanMemory(prefixScanner{rows, []any{&r.p}}); err != nil {
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
				break
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
				if err := enc.Encode(Record{Kind: "memory", Principal: r.p, Memory: &r.m, Merges: merges}); err != nil {
					return err
				}
				rep.Memories++
			}
			after = page[len(page)-1].m.ID
		}
		rows, err = tx.QueryContext(ctx, ownSkillSelect+` ORDER BY s.principal, s.name`)
		if err != nil {
			return err
		}
		for rows.Next() {
			sk, err := scanSkill(rows)
			if err != nil {
				rows.Close()
				return err
			}
			p := sk.Owner
			sk.Owner = ""
			if err := enc.Encode(Record{Kind: "skill", Principal: p, Skill: &sk}); err != nil {
				rows.Close()
				return err
			}
			rep.Skills++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
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
			f.Provenance = provenanceOf(prov)
			if f.Data, err = s.dec.DecodeAll(blob, nil); err != nil {
				return fmt.Errorf("file %s: decompress: %w", f.Path, err)
			}
			f.CreatedAt, f.UpdatedAt = fromMS(c), fromMS(u)
			if err := enc.Encode(Record{Kind: "file", Principal: p, File: &f}); err != nil {
				return err
			}
			rep.Files++
		}
		return rows.Err()
	})
	if err != nil {
		return rep, fmt.Errorf("export: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return rep, fmt.Errorf("export: %w", err)
	}
	return rep, nil
}

// Import reads an export and adds its records to the store, each under its
// principal, in one transaction: on any error nothing is imported.
// Memories get new ids (links and provenance follow them) and are embedded
// with this store's embedder; entities, relations, skills and files are
// upserted by name or path, keeping their timestamps.
func (s *Store) Import(ctx context.Context, r io.Reader) (ExportReport, error) {
	var rep ExportReport
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
			return rep, fmt.Errorf("import: line %d: %w: %v", line, ErrInvalid, err)
		}
		if line == 1 && (rec.Kind != "header" || rec.Version != ExportVersion) {
			return rep, fmt.Errorf("import: line 1: %w: not a codecell export of version %d", ErrInvalid, ExportVersion)
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return rep, fmt.Errorf("import: line %d: %w", line+1, err)
	}
	if line == 0 {
		return rep, fmt.Errorf("import: %w: empty input", ErrInvalid)
	}

	// Validate and embed the memories before writing anything.
	type pm struct {
		principal string
		p         prepared
		m         *Memory
		merges    []MergedMemory
	}
	var mems []pm
	var texts []string
	for i, rec := range recs {
		if rec.Kind != "memory" {
			continue
		}
		if rec.Memory == nil {
			return rep, fmt.Errorf("import: record %d: %w: memory record without memory", i+1, ErrInvalid)
		}
		m := rec.Memory
		ctxP := tools.WithCaller(ctx, tools.Caller{Principal: rec.Principal, Session: m.Session})
		imp := m.Importance
		p, err := s.prepareRemember(ctxP, RememberInput{Layer: m.Layer, Content: m.Content, Tags: m.Tags, Metadata: m.Metadata,
			Importance: &imp, Source: m.Source, Session: m.Session, OccurredAt: m.OccurredAt, DueAt: m.DueAt, Status: m.Status, Entities: m.Entities,
			Provenance: m.Provenance}, "")
		if err != nil {
			return rep, fmt.Errorf("import: record %d (memory %d): %w", i+1, m.ID, err)
		}
		mems = append(mems, pm{principal: rec.Principal, p: p, m: m, merges: rec.Merges})
		texts = append(texts, p.text)
	}
	s.vmu.RLock()
	defer s.vmu.RUnlock()
	if err := s.vectorsReady(); err != nil {
		return rep, err
	}
	var vecs [][]float32
	for start := 0; start < len(texts); start += 512 {
		vs, err := embedWith(ctx, s.emb, texts[start:min(start+512, len(texts))])
		if err != nil {
			return rep, fmt.Errorf("import: %w", err)
		}
		vecs = append(vecs, vs...)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, rec := range recs {
			switch rec.Kind {
			case "entity":
				if rec.Entity == nil {
					return fmt.Errorf("%w: entity record without entity", ErrInvalid)
				}
				e := rec.Entity
				if err := validateEntityName("entity name", e.Name); err != nil {
					return err
				}
				props := string(e.Properties)
				if props == "" {
					props = "{}"
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO entities (principal, name, type, description, properties, created_at, updated_at)
					VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (principal, name COLLATE NOCASE) DO UPDATE SET type = excluded.type,
					description = excluded.description, properties = excluded.properties, updated_at = excluded.updated_at`,
					rec.Principal, e.Name, e.Type, e.Description, props, ms(e.CreatedAt), ms(e.UpdatedAt)); err != nil {
					return fmt.Errorf("entity %q: %w", e.Name, err)
				}
				rep.Entities++
			case "relation":
				if rec.Relation == nil {
					return fmt.Errorf("%w: relation record without relation", ErrInvalid)
				}
				rl := rec.Relation
				from, _, err := ensureEntity(ctx, tx, rec.Principal, rl.From, rl.CreatedAt)
				if err != nil {
					return err
				}
				to, _, err := ensureEntity(ctx, tx, rec.Principal, rl.To, rl.CreatedAt)
				if err != nil {
					return err
				}
				props := string(rl.Properties)
				if props == "" {
					props = "{}"
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO relations (principal, from_id, to_id, type, weight, properties, created_at, updated_at)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (from_id, to_id, type) DO UPDATE SET weight = excluded.weight,
					properties = excluded.properties, updated_at = excluded.updated_at`,
					rec.Principal, from, to, rl.Type, rl.Weight, props, ms(rl.CreatedAt), ms(rl.UpdatedAt)); err != nil {
					return fmt.Errorf("relation %s-%s->%s: %w", rl.From, rl.Type, rl.To, err)
				}
				rep.Relations++
			case "skill":
				if rec.Skill == nil {
					return fmt.Errorf("%w: skill record without skill", ErrInvalid)
				}
				sk := rec.Skill
				if !skillNameRE.MatchString(sk.Name) {
					return fmt.Errorf("%w: skill name %q", ErrInvalid, sk.Name)
				}
				var schema any
				if len(sk.InputSchema) > 0 {
					schema = string(sk.InputSchema)
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO skills (principal, name, description, code, language, input_schema, version, created_at, updated_at)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (principal, name) DO UPDATE SET description = excluded.description,
					code = excluded.code, language = excluded.language, input_schema = excluded.input_schema, version = skills.version + 1,
					updated_at = excluded.updated_at`, rec.Principal, sk.Name, sk.Description, sk.Code, sk.Language, schema, max(sk.Version, 1),
					ms(sk.CreatedAt), ms(sk.UpdatedAt)); err != nil {
					return fmt.Errorf("skill %s: %w", sk.Name, err)
				}
				if _, err := bumpSkillsVersion(ctx, tx); err != nil {
					return err
				}
				rep.Skills++
			case "file":
				if rec.File == nil {
					return fmt.Errorf("%w: file record without file", ErrInvalid)
				}
				f := rec.File
				if err := ValidatePath(f.Path); err != nil {
					return err
				}
				if int64(len(f.Data)) > s.lim.MaxFileBytes {
					return fmt.Errorf("%w: file %s is %d bytes, over the limit of %d", ErrTooLarge, f.Path, len(f.Data), s.lim.MaxFileBytes)
				}
				blob := s.enc.EncodeAll(f.Data, nil)
				prov, err := s.provenance(ctx, f.Provenance, "file "+f.Path+": ")
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO workspace_files (principal, path, size, stored_size, sha256, data, created_at, updated_at, provenance)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (principal, path) DO UPDATE SET size = excluded.size, stored_size = excluded.stored_size,
					sha256 = excluded.sha256, data = excluded.data, updated_at = excluded.updated_at, provenance = excluded.provenance`,
					rec.Principal, f.Path, len(f.Data), len(blob), Hash(f.Data), blob, ms(f.CreatedAt), ms(f.UpdatedAt), provenanceArg(prov)); err != nil {
					return fmt.Errorf("file %s: %w", f.Path, err)
				}
				rep.Files++
			case "header", "memory":
			default:
				return fmt.Errorf("%w: unknown record kind %q", ErrInvalid, rec.Kind)
			}
		}
		for i, m := range mems {
			id, err := s.insertMemory(ctx, tx, m.principal, m.p, vecs[i], m.m.CreatedAt, m.m.UpdatedAt)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE memories SET access_count = ?, accessed_at = ? WHERE id = ?`, m.m.AccessCount, nullMS(m.m.AccessedAt), id); err != nil {
				return err
			}
			for _, mg := range m.merges {
				rec := "{}"
				if mg.Record != nil {
					b, _ := json.Marshal(mg.Record)
					rec = string(b)
				}
				// Merged ids of the source store may collide here: keep
				// provenance under a fresh negative id when they do.
				mid := mg.ID
				var exists int
				tx.QueryRowContext(ctx, `SELECT count(*) FROM memory_merges WHERE merged_id = ?`, mid).Scan(&exists)
				if exists > 0 {
					tx.QueryRowContext(ctx, `SELECT min(0, coalesce(min(merged_id), 0)) - 1 FROM memory_merges`).Scan(&mid)
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO memory_merges (merged_id, survivor_id, principal, record, similarity, overlap, merged_at)
					VALUES (?, ?, ?, ?, ?, ?, ?)`, mid, id, m.principal, rec, mg.Similarity, mg.Overlap, ms(mg.MergedAt)); err != nil {
					return fmt.Errorf("provenance of memory %d: %w", m.m.ID, err)
				}
			}
			rep.Memories++
		}
		return nil
	})
	if err != nil {
		var te *tools.Error
		if errors.As(err, &te) {
			return ExportReport{}, fmt.Errorf("import: %w", te)
		}
		return ExportReport{}, fmt.Errorf("import: %w", err)
	}
	s.log.Info("imported", "memories", rep.Memories, "entities", rep.Entities, "relations", rep.Relations, "skills", rep.Skills, "files", rep.Files)
	return rep, nil
}
