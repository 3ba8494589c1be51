package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/codecell/codecell/tools"
)

const metaSkillsVersion = "skills_version"

// SaveSkill creates or replaces the caller's own skill sk.Name and returns
// it as stored. Language is javascript (default) or typescript;
// InputSchema, if given, must be a JSON Schema object. A published
// snapshot of the skill is not changed: publish again to replace it.
func (s *Store) SaveSkill(ctx context.Context, sk memory.Skill) (memory.Skill, error) {
	owner := tools.CallerFrom(ctx).Principal
	sk, err := memory.PrepareSkill(owner, sk, s.lim)
	if err != nil {
		return memory.Skill{}, err
	}
	if sk.Provenance, err = memory.Provenance(ctx, sk.Provenance, "", s.lim); err != nil {
		return memory.Skill{}, err
	}
	var schema any
	if sk.InputSchema != nil {
		schema = string(sk.InputSchema)
	}
	ch := memory.SkillChange{Principal: owner, Name: sk.Name, Kind: memory.SkillSaved}
	err = s.write(ctx, func(tx *sql.Tx) error {
		now := s.now().UTC().Truncate(time.Millisecond)
		var created int64
		var v int64
		err := tx.QueryRowContext(ctx, `SELECT created_at, version FROM skills WHERE principal = ? AND name = ?`, owner, sk.Name).Scan(&created, &v)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM skills WHERE principal = ?`, owner).Scan(&n); err != nil {
				return fmt.Errorf("save skill: %w", err)
			}
			if n >= s.lim.MaxSkills {
				return memory.Quota("you have %d skills, the limit; delete one first", n)
			}
			created = ms(now)
		case err != nil:
			return fmt.Errorf("save skill: %w", err)
		}
		sk.Version = v + 1
		sk.CreatedAt, sk.UpdatedAt = fromMS(created), now
		if _, err := tx.ExecContext(ctx, `INSERT INTO skills (principal, name, description, code, language, input_schema, version, created_at, updated_at, provenance)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (principal, name) DO UPDATE SET description = excluded.description, code = excluded.code,
			language = excluded.language, input_schema = excluded.input_schema, version = excluded.version, updated_at = excluded.updated_at,
			provenance = excluded.provenance`,
			owner, sk.Name, sk.Description, sk.Code, sk.Language, schema, sk.Version, created, ms(now), provenanceArg(sk.Provenance)); err != nil {
			return fmt.Errorf("save skill: %w", err)
		}
		if err := publishedState(ctx, tx, &sk); err != nil {
			return err
		}
		return s.skillChanged(ctx, tx, &ch)
	})
	if err != nil {
		return memory.Skill{}, err
	}
	s.notifySkills(ch)
	return sk, nil
}

// publishedState fills in whether the owner has published sk.Name.
func publishedState(ctx context.Context, q queryer, sk *memory.Skill) error {
	var v, at int64
	err := q.QueryRowContext(ctx, `SELECT version, published_at FROM published_skills WHERE name = ? AND owner = ?`, sk.Name, sk.Owner).Scan(&v, &at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		sk.Published, sk.PublishedVersion, sk.PublishedAt = false, 0, nil
		return nil
	case err != nil:
		return fmt.Errorf("skill %s: %w", sk.Name, err)
	}
	t := fromMS(at)
	sk.Published, sk.PublishedVersion, sk.PublishedAt = true, v, &t
	return nil
}

// skillChanged records a change of a skill in the write transaction tx:
// it bumps the store-wide skills version, sets ch.Version and logs the
// change for the other processes (skillwatch.go).
func (s *Store) skillChanged(ctx context.Context, tx *sql.Tx, ch *memory.SkillChange) error {
	v, err := bumpSkillsVersion(ctx, tx)
	if err != nil {
		return err
	}
	*ch = memory.SkillChangeOf(ch.Principal, ch.Name, ch.Kind, v)
	return s.logSkillChange(ctx, tx, *ch)
}

func bumpSkillsVersion(ctx context.Context, tx *sql.Tx) (int64, error) {
	var v int64
	if err := tx.QueryRowContext(ctx, `INSERT INTO meta (key, value) VALUES (?, '1')
		ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 RETURNING CAST(value AS INTEGER)`, metaSkillsVersion).Scan(&v); err != nil {
		return 0, fmt.Errorf("skills version: %w", err)
	}
	return v, nil
}

// SkillsVersion returns a number that grows with every change of any
// skill (save, delete, publish, unpublish), in this process or another one
// sharing the database.
func (s *Store) SkillsVersion(ctx context.Context) (int64, error) {
	var v int64
	err := s.read(ctx, func(tx *sql.Tx) error {
		str, _, err := getMeta(ctx, tx, metaSkillsVersion)
		if err != nil || str == "" {
			return err
		}
		_, err = fmt.Sscan(str, &v)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("skills version: %w", err)
	}
	return v, nil
}

// The columns of a skill, own copy or snapshot, in the order scanSkill
// reads them.
const (
	ownSkillSelect = `SELECT s.principal, s.name, s.description, s.code, s.language, s.input_schema, s.version, s.created_at, s.updated_at,
		NULL, 0, p.version, p.published_at, s.provenance
		FROM skills s LEFT JOIN published_skills p ON p.name = s.name AND p.owner = s.principal`
	publishedSkillSelect = `SELECT owner, name, description, code, language, input_schema, version, created_at, updated_at,
		code_sha256, 1, version, published_at, provenance FROM published_skills`
)

// The columns of a skill in a listing, own copy or snapshot, in the
// order scanSkillInfo reads them: no code.
const (
	ownSkillInfoSelect = `SELECT s.principal, s.name, s.description, s.language, s.version, s.updated_at,
		NULL, 0, p.version, p.published_at, s.provenance
		FROM skills s LEFT JOIN published_skills p ON p.name = s.name AND p.owner = s.principal`
	publishedSkillInfoSelect = `SELECT owner, name, description, language, version, updated_at,
		code_sha256, 1, version, published_at, provenance FROM published_skills`
)

// listCallableSkillsQuery reads a page of ListCallableSkills: the
// caller's own skills after a name, and the published ones after it of
// names the caller has none of. Its indexes cover it (migrations 25, 26).
const listCallableSkillsQuery = ownSkillInfoSelect + ` WHERE s.principal = ? AND s.name > ?
	UNION ALL ` + publishedSkillInfoSelect + ` WHERE name > ? AND name NOT IN (SELECT name FROM skills WHERE principal = ?)
	ORDER BY 2 LIMIT ?`

func scanSkillInfo(sc interface{ Scan(...any) error }) (memory.SkillInfo, error) {
	var in memory.SkillInfo
	var sha sql.NullString
	var u int64
	var pubVersion, pubAt sql.NullInt64
	var prov sql.NullString
	if err := sc.Scan(&in.Owner, &in.Name, &in.Description, &in.Language, &in.Version, &u,
		&sha, &in.Snapshot, &pubVersion, &pubAt, &prov); err != nil {
		return in, err
	}
	in.CodeSHA256, in.Provenance = sha.String, provenanceOf(prov)
	if pubVersion.Valid {
		in.Published, in.PublishedVersion, in.PublishedAt = true, pubVersion.Int64, timePtr(pubAt)
	}
	in.UpdatedAt = fromMS(u)
	return in, nil
}

func scanSkill(sc interface{ Scan(...any) error }) (memory.Skill, error) {
	var sk memory.Skill
	var schema, sha sql.NullString
	var c, u int64
	var pubVersion, pubAt sql.NullInt64
	var prov sql.NullString
	if err := sc.Scan(&sk.Owner, &sk.Name, &sk.Description, &sk.Code, &sk.Language, &schema, &sk.Version, &c, &u,
		&sha, &sk.Snapshot, &pubVersion, &pubAt, &prov); err != nil {
		return sk, err
	}
	sk.Provenance = provenanceOf(prov)
	if schema.Valid {
		sk.InputSchema = json.RawMessage(schema.String)
	}
	sk.CodeSHA256 = sha.String
	if !sha.Valid {
		sk.CodeSHA256 = memory.Hash([]byte(sk.Code))
	}
	if pubVersion.Valid {
		sk.Published, sk.PublishedVersion, sk.PublishedAt = true, pubVersion.Int64, timePtr(pubAt)
	}
	sk.CreatedAt, sk.UpdatedAt = fromMS(c), fromMS(u)
	return sk, nil
}

// GetSkill returns the caller's own skill name.
func (s *Store) GetSkill(ctx context.Context, name string) (memory.Skill, error) {
	owner := tools.CallerFrom(ctx).Principal
	var sk memory.Skill
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		sk, err = scanSkill(tx.QueryRowContext(ctx, ownSkillSelect+` WHERE s.principal = ? AND s.name = ?`, owner, name))
		if errors.Is(err, sql.ErrNoRows) {
			return memory.NotFound("you have no skill %q", memory.Clip(name, 70))
		}
		return err
	})
	return sk, err
}

// ResolveSkill returns the skill that the caller gets when it calls name:
// its own skill of that name, else the published one.
func (s *Store) ResolveSkill(ctx context.Context, name string) (memory.Skill, error) {
	owner := tools.CallerFrom(ctx).Principal
	var sk memory.Skill
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		sk, err = scanSkill(tx.QueryRowContext(ctx, ownSkillSelect+` WHERE s.principal = ? AND s.name = ?`, owner, name))
		if errors.Is(err, sql.ErrNoRows) {
			sk, err = scanSkill(tx.QueryRowContext(ctx, publishedSkillSelect+` WHERE name = ?`, name))
		}
		if errors.Is(err, sql.ErrNoRows) {
			return memory.NotFound("no skill %q: neither yours nor published", memory.Clip(name, 70))
		}
		return err
	})
	return sk, err
}

// ListSkills returns the caller's own skills sorted by name.
func (s *Store) ListSkills(ctx context.Context) ([]memory.Skill, error) {
	return s.listSkills(ctx, ownSkillSelect+` WHERE s.principal = ? ORDER BY s.name`, tools.CallerFrom(ctx).Principal)
}

// ListCallableSkills returns a page of what the caller can call, sorted
// by name: its own skills, and the published skills whose names it has no
// skill of its own for — names, descriptions and versions, not code (see
// memory.SkillInfo). Owner and Snapshot say whose each is and which copy.
func (s *Store) ListCallableSkills(ctx context.Context, q memory.SkillQuery) (memory.SkillPage, error) {
	p := tools.CallerFrom(ctx).Principal
	page := memory.SkillPage{Skills: []memory.SkillInfo{}}
	err := s.read(ctx, func(tx *sql.Tx) error {
		page = memory.SkillPage{Skills: []memory.SkillInfo{}}
		rows, err := tx.QueryContext(ctx, listCallableSkillsQuery, p, q.After, q.After, p, q.PageLimit()+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		bytes := 0
		for rows.Next() {
			if n := len(page.Skills); q.Full(n, bytes) {
				page.Next = page.Skills[n-1].Name
				break
			}
			in, err := scanSkillInfo(rows)
			if err != nil {
				return err
			}
			bytes += len(in.Description)
			page.Skills = append(page.Skills, in)
		}
		return rows.Err()
	})
	if err != nil {
		return memory.SkillPage{}, fmt.Errorf("list skills: %w", err)
	}
	return page, nil
}

// PublishedSkill returns the published snapshot name, whoever owns it.
func (s *Store) PublishedSkill(ctx context.Context, name string) (memory.Skill, error) {
	var sk memory.Skill
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		sk, err = scanSkill(tx.QueryRowContext(ctx, publishedSkillSelect+` WHERE name = ?`, name))
		if errors.Is(err, sql.ErrNoRows) {
			return memory.NotFound("no skill %q is published", memory.Clip(name, 70))
		}
		return err
	})
	return sk, err
}

// PublishedSkills returns every published snapshot, code included, sorted
// by name, for a server that registers them at start-up (or reloads them
// after missing changes): a listing reads ListCallableSkills, and one
// change PublishedSkill.
func (s *Store) PublishedSkills(ctx context.Context) ([]memory.Skill, error) {
	return s.listSkills(ctx, publishedSkillSelect+` ORDER BY name`)
}

// AllSkills returns every principal's own skills, code included, sorted
// by owner and name, for a server that registers them at start-up.
func (s *Store) AllSkills(ctx context.Context) ([]memory.Skill, error) {
	return s.listSkills(ctx, ownSkillSelect+` ORDER BY s.principal, s.name`)
}

func (s *Store) listSkills(ctx context.Context, query string, args ...any) ([]memory.Skill, error) {
	out := []memory.Skill{}
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			sk, err := scanSkill(rows)
			if err != nil {
				return err
			}
			out = append(out, sk)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list skills: %w", err)
	}
	return out, nil
}

// DeleteSkill deletes the caller's own skill name. A published snapshot
// of it stays published: UnpublishSkill withdraws it.
func (s *Store) DeleteSkill(ctx context.Context, name string) error {
	owner := tools.CallerFrom(ctx).Principal
	ch := memory.SkillChange{Principal: owner, Name: name, Kind: memory.SkillDeleted}
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM skills WHERE principal = ? AND name = ?`, owner, name)
		if err != nil {
			return fmt.Errorf("delete skill: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return memory.NotFound("you have no skill %q", memory.Clip(name, 70))
		}
		return s.skillChanged(ctx, tx, &ch)
	})
	if err != nil {
		return err
	}
	s.notifySkills(ch)
	return nil
}

// PublishSkill publishes the caller's own skill name for every principal
// to call: it stores a snapshot of the skill as it is now, replacing the
// caller's earlier snapshot of it, and returns the snapshot. A name that
// another principal has published cannot be published again.
func (s *Store) PublishSkill(ctx context.Context, name string) (memory.Skill, error) {
	owner := tools.CallerFrom(ctx).Principal
	ch := memory.SkillChange{Principal: owner, Name: name, Kind: memory.SkillPublished}
	var snap memory.Skill
	err := s.write(ctx, func(tx *sql.Tx) error {
		sk, err := scanSkill(tx.QueryRowContext(ctx, ownSkillSelect+` WHERE s.principal = ? AND s.name = ?`, owner, name))
		if errors.Is(err, sql.ErrNoRows) {
			return memory.NotFound("you have no skill %q to publish; save it first", memory.Clip(name, 70))
		}
		if err != nil {
			return fmt.Errorf("publish skill: %w", err)
		}
		var other string
		err = tx.QueryRowContext(ctx, `SELECT owner FROM published_skills WHERE name = ?`, name).Scan(&other)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM published_skills WHERE owner = ?`, owner).Scan(&n); err != nil {
				return fmt.Errorf("publish skill: %w", err)
			}
			if n >= s.lim.MaxSkills {
				return memory.Quota("you have published %d skills, the limit; unpublish one first", n)
			}
		case err != nil:
			return fmt.Errorf("publish skill: %w", err)
		case other != owner:
			return memory.Conflict("skill %q is published by %s, and only its owner can replace it; publish yours under another name", name, memory.Clip(other, 70))
		}
		now := s.now().UTC().Truncate(time.Millisecond)
		var schema any
		if sk.InputSchema != nil {
			schema = string(sk.InputSchema)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO published_skills (name, owner, description, code, code_sha256, language, input_schema,
			version, created_at, updated_at, published_at, provenance) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET description = excluded.description, code = excluded.code, code_sha256 = excluded.code_sha256,
			language = excluded.language, input_schema = excluded.input_schema, version = excluded.version,
			created_at = excluded.created_at, updated_at = excluded.updated_at, published_at = excluded.published_at,
			provenance = excluded.provenance`,
			name, owner, sk.Description, sk.Code, sk.CodeSHA256, sk.Language, schema, sk.Version, ms(sk.CreatedAt), ms(sk.UpdatedAt), ms(now),
			provenanceArg(sk.Provenance)); err != nil {
			return fmt.Errorf("publish skill: %w", err)
		}
		snap = sk
		snap.Snapshot, snap.Published, snap.PublishedVersion, snap.PublishedAt = true, true, sk.Version, &now
		return s.skillChanged(ctx, tx, &ch)
	})
	if err != nil {
		return memory.Skill{}, err
	}
	s.notifySkills(ch)
	return snap, nil
}

// UnpublishSkill withdraws the caller's published skill name. The
// caller's own copy, if any, stays.
func (s *Store) UnpublishSkill(ctx context.Context, name string) error {
	owner := tools.CallerFrom(ctx).Principal
	ch := memory.SkillChange{Principal: owner, Name: name, Kind: memory.SkillUnpublished}
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM published_skills WHERE name = ? AND owner = ?`, name, owner)
		if err != nil {
			return fmt.Errorf("unpublish skill: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var other string
			if tx.QueryRowContext(ctx, `SELECT owner FROM published_skills WHERE name = ?`, name).Scan(&other) == nil {
				return memory.Conflict("skill %q is published by %s; only its owner can unpublish it", name, memory.Clip(other, 70))
			}
			return memory.NotFound("you have not published a skill %q", memory.Clip(name, 70))
		}
		return s.skillChanged(ctx, tx, &ch)
	})
	if err != nil {
		return err
	}
	s.notifySkills(ch)
	return nil
}

// OnSkillChange calls fn after every change of a skill: one made through
// this Store, on the goroutine that made it, and one made by another
// connection to the database (another process, another Store), within
// Config.WatchInterval, on the Store's watcher goroutine. fn may be
// called from several goroutines at once; it must return quickly and must
// not close the Store. The returned function ends the subscription.
func (s *Store) OnSkillChange(fn func(memory.SkillChange)) (cancel func()) {
	return s.skillSubs.Subscribe(fn)
}

func (s *Store) notifySkills(ch memory.SkillChange) { s.skillSubs.Notify(ch) }

// migrateSharedSkills is the Go step of migration 4: the skills of the
// former shared scope become the local user's own skills, published. A
// skill of that name that the local user already had keeps its own copy;
// the shared one is still published, so every principal, the local user
// included when it has no copy of its own, calls what it called before.
func migrateSharedSkills(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT name, description, code, language, input_schema, version, created_at, updated_at
		FROM skills WHERE principal = ?`, memory.LegacySkillScope)
	if err != nil {
		return fmt.Errorf("shared skills: %w", err)
	}
	type row struct {
		name, desc, code, lang string
		schema                 sql.NullString
		version, c, u          int64
	}
	var all []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.name, &r.desc, &r.code, &r.lang, &r.schema, &r.version, &r.c, &r.u); err != nil {
			rows.Close()
			return fmt.Errorf("shared skills: %w", err)
		}
		all = append(all, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("shared skills: %w", err)
	}
	for _, r := range all {
		if _, err := tx.ExecContext(ctx, `INSERT INTO published_skills (name, owner, description, code, code_sha256, language, input_schema,
			version, created_at, updated_at, published_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.name, memory.LegacySkillOwner, r.desc, r.code, memory.Hash([]byte(r.code)), r.lang, r.schema, r.version, r.c, r.u, r.u); err != nil {
			return fmt.Errorf("publish shared skill %s: %w", r.name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE OR IGNORE skills SET principal = ? WHERE principal = ?`, memory.LegacySkillOwner, memory.LegacySkillScope); err != nil {
		return fmt.Errorf("shared skills: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM skills WHERE principal = ?`, memory.LegacySkillScope); err != nil {
		return fmt.Errorf("shared skills: %w", err)
	}
	return nil
}
