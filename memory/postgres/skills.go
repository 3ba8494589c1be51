package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Skills as memory/skills.go keeps them: each principal's own, and the
// snapshots owners published. Every change bumps the skills version and
// is announced with NOTIFY in its transaction, so that other instances
// hear of it once it commits (within the network's latency); the
// instance that made it tells its own subscribers at once.

const (
	ownSkillSelect = `SELECT s.principal, s.name, s.description, s.code, s.language, s.input_schema, s.version, s.created_at, s.updated_at,
		NULL::text, false, p.version, p.published_at, s.provenance
		FROM skills s LEFT JOIN published_skills p ON p.name = s.name AND p.owner = s.principal`
	publishedSkillSelect = `SELECT owner, name, description, code, language, input_schema, version, created_at, updated_at,
		code_sha256, true, version, published_at, provenance FROM published_skills`
)

// The columns of a skill in a listing, in the order scanSkillInfo reads
// them: no code.
const (
	ownSkillInfoSelect = `SELECT s.principal AS owner, s.name, s.description, s.language, s.version, s.updated_at,
		NULL::text AS code_sha256, false AS snapshot, p.version AS published_version, p.published_at, s.provenance
		FROM skills s LEFT JOIN published_skills p ON p.name = s.name AND p.owner = s.principal`
	publishedSkillInfoSelect = `SELECT owner, name, description, language, version, updated_at,
		code_sha256, true, version, published_at, provenance FROM published_skills`
)

func scanSkillInfo(sc interface{ Scan(...any) error }) (memory.SkillInfo, error) {
	var in memory.SkillInfo
	var sha *string
	var u int64
	var pubVersion, pubAt *int64
	var prov *string
	if err := sc.Scan(&in.Owner, &in.Name, &in.Description, &in.Language, &in.Version, &u,
		&sha, &in.Snapshot, &pubVersion, &pubAt, &prov); err != nil {
		return in, err
	}
	in.Provenance = provOf(prov)
	if sha != nil {
		in.CodeSHA256 = *sha
	}
	if pubVersion != nil {
		in.Published, in.PublishedVersion, in.PublishedAt = true, *pubVersion, timePtr(pubAt)
	}
	in.UpdatedAt = fromMS(u)
	return in, nil
}

func scanSkill(sc interface{ Scan(...any) error }) (memory.Skill, error) {
	var sk memory.Skill
	var schema, sha *string
	var c, u int64
	var pubVersion, pubAt *int64
	var prov *string
	if err := sc.Scan(&sk.Owner, &sk.Name, &sk.Description, &sk.Code, &sk.Language, &schema, &sk.Version, &c, &u,
		&sha, &sk.Snapshot, &pubVersion, &pubAt, &prov); err != nil {
		return sk, err
	}
	sk.Provenance = provOf(prov)
	if schema != nil {
		sk.InputSchema = json.RawMessage(*schema)
	}
	if sha != nil {
		sk.CodeSHA256 = *sha
	} else {
		sk.CodeSHA256 = memory.Hash([]byte(sk.Code))
	}
	if pubVersion != nil {
		sk.Published, sk.PublishedVersion, sk.PublishedAt = true, *pubVersion, timePtr(pubAt)
	}
	sk.CreatedAt, sk.UpdatedAt = fromMS(c), fromMS(u)
	return sk, nil
}

// notice is the payload of a skills NOTIFY.
type notice struct {
	Origin    string                 `json:"o"`
	Principal string                 `json:"p"`
	Name      string                 `json:"n"`
	Kind      memory.SkillChangeKind `json:"k"`
	Version   int64                  `json:"v"`
}

// skillChanged bumps the skills version and announces the change to the
// other instances when tx commits.
func (s *Store) skillChanged(ctx context.Context, tx pgx.Tx, principal, name string, kind memory.SkillChangeKind) (memory.SkillChange, error) {
	var v int64
	if err := tx.QueryRow(ctx, `INSERT INTO meta (key, value) VALUES ('skills_version', '1')
		ON CONFLICT (key) DO UPDATE SET value = (meta.value::bigint + 1)::text RETURNING value::bigint`).Scan(&v); err != nil {
		return memory.SkillChange{}, fmt.Errorf("skills version: %w", err)
	}
	ch := memory.SkillChangeOf(principal, name, kind, v)
	payload, _ := json.Marshal(notice{Origin: s.origin, Principal: principal, Name: name, Kind: kind, Version: v})
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, skillsChannel, string(payload)); err != nil {
		return memory.SkillChange{}, fmt.Errorf("skills notify: %w", err)
	}
	return ch, nil
}

// skillNotification handles a change another instance made.
func (s *Store) skillNotification(payload string) {
	var n notice
	if err := json.Unmarshal([]byte(payload), &n); err != nil {
		s.log.Warn("unreadable skills notification", "bytes", len(payload))
		return
	}
	if n.Origin == s.origin {
		return
	}
	s.notifySkills(memory.SkillChangeOf(n.Principal, n.Name, n.Kind, n.Version))
}

func (s *Store) notifySkills(ch memory.SkillChange) { s.skillSubs.Notify(ch) }

// OnSkillChange calls fn after every change of a skill, made by this
// Store or by another instance on the database; cancel stops it. A change
// with an empty Name means that any skill may have changed (the
// notification connection was lost and is back).
func (s *Store) OnSkillChange(fn func(memory.SkillChange)) (cancel func()) {
	return s.skillSubs.Subscribe(fn)
}

// SaveSkill creates or replaces the caller's skill sk.Name.
func (s *Store) SaveSkill(ctx context.Context, sk memory.Skill) (memory.Skill, error) {
	owner := tools.CallerFrom(ctx).Principal
	sk, err := memory.PrepareSkill(owner, sk, s.lim)
	if err != nil {
		return memory.Skill{}, err
	}
	if sk.Provenance, err = memory.Provenance(ctx, sk.Provenance, "", s.lim); err != nil {
		return memory.Skill{}, err
	}
	var schema *string
	if sk.InputSchema != nil {
		v := string(sk.InputSchema)
		schema = &v
	}
	var ch memory.SkillChange
	err = s.tx(ctx, func(tx pgx.Tx) error {
		// One saver per owner at a time: the count below must hold.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('skills:' || $1, 0))`, owner); err != nil {
			return err
		}
		now := s.now().UTC().Truncate(time.Millisecond)
		var created, v int64
		err := tx.QueryRow(ctx, `SELECT created_at, version FROM skills WHERE principal = $1 AND name = $2`, owner, sk.Name).Scan(&created, &v)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM skills WHERE principal = $1`, owner).Scan(&n); err != nil {
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
		if _, err := tx.Exec(ctx, `INSERT INTO skills (principal, name, description, code, language, input_schema, version, created_at, updated_at, provenance)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (principal, name) DO UPDATE SET description = excluded.description, code = excluded.code,
			language = excluded.language, input_schema = excluded.input_schema, version = excluded.version, updated_at = excluded.updated_at,
			provenance = excluded.provenance`,
			owner, sk.Name, sk.Description, sk.Code, sk.Language, schema, sk.Version, created, ms(now), provArg(sk.Provenance)); err != nil {
			return fmt.Errorf("save skill: %w", err)
		}
		var pv, pat *int64
		err = tx.QueryRow(ctx, `SELECT version, published_at FROM published_skills WHERE name = $1 AND owner = $2`, sk.Name, owner).Scan(&pv, &pat)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			sk.Published, sk.PublishedVersion, sk.PublishedAt = false, 0, nil
		case err != nil:
			return fmt.Errorf("save skill: %w", err)
		default:
			sk.Published, sk.PublishedVersion, sk.PublishedAt = true, *pv, timePtr(pat)
		}
		ch, err = s.skillChanged(ctx, tx, owner, sk.Name, memory.SkillSaved)
		return err
	})
	if err != nil {
		return memory.Skill{}, err
	}
	s.notifySkills(ch)
	return sk, nil
}

// SkillsVersion counts the changes of skills.
func (s *Store) SkillsVersion(ctx context.Context) (int64, error) {
	var v int64
	err := s.db.QueryRow(ctx, `SELECT coalesce((SELECT value::bigint FROM meta WHERE key = 'skills_version'), 0)`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("skills version: %w", err)
	}
	return v, nil
}

// GetSkill returns the caller's own skill name.
func (s *Store) GetSkill(ctx context.Context, name string) (memory.Skill, error) {
	owner := tools.CallerFrom(ctx).Principal
	sk, err := scanSkill(s.db.QueryRow(ctx, ownSkillSelect+` WHERE s.principal = $1 AND s.name = $2`, owner, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.Skill{}, memory.NotFound("you have no skill %q", memory.Clip(name, 70))
	}
	if err != nil {
		return memory.Skill{}, fmt.Errorf("get skill: %w", err)
	}
	return sk, nil
}

// ResolveSkill returns the skill name that the caller calls: its own, or
// else the published one.
func (s *Store) ResolveSkill(ctx context.Context, name string) (memory.Skill, error) {
	sk, err := s.GetSkill(ctx, name)
	if !errors.Is(err, memory.ErrNotFound) {
		return sk, err
	}
	sk, err = scanSkill(s.db.QueryRow(ctx, publishedSkillSelect+` WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.Skill{}, memory.NotFound("no skill %q: neither yours nor published", memory.Clip(name, 70))
	}
	if err != nil {
		return memory.Skill{}, fmt.Errorf("resolve skill: %w", err)
	}
	return sk, nil
}

// ListSkills returns the caller's own skills by name.
func (s *Store) ListSkills(ctx context.Context) ([]memory.Skill, error) {
	return s.listSkills(ctx, ownSkillSelect+` WHERE s.principal = $1 ORDER BY s.name COLLATE "C"`, tools.CallerFrom(ctx).Principal)
}

// ListCallableSkills returns a page of what the caller can call, by
// name: its own skills, and the published ones of names it has none of —
// names, descriptions and versions, not code (see memory.SkillInfo).
func (s *Store) ListCallableSkills(ctx context.Context, q memory.SkillQuery) (memory.SkillPage, error) {
	p := tools.CallerFrom(ctx).Principal
	rows, err := s.db.Query(ctx, `SELECT * FROM (`+ownSkillInfoSelect+` WHERE s.principal = $1 AND s.name COLLATE "C" > $2
		UNION ALL `+publishedSkillInfoSelect+` WHERE name COLLATE "C" > $2 AND name NOT IN (SELECT name FROM skills WHERE principal = $1)) c
		ORDER BY c.name COLLATE "C" LIMIT $3`, p, q.After, q.PageLimit()+1)
	if err != nil {
		return memory.SkillPage{}, fmt.Errorf("list skills: %w", err)
	}
	defer rows.Close()
	page := memory.SkillPage{Skills: []memory.SkillInfo{}}
	bytes := 0
	for rows.Next() {
		if n := len(page.Skills); q.Full(n, bytes) {
			page.Next = page.Skills[n-1].Name
			break
		}
		in, err := scanSkillInfo(rows)
		if err != nil {
			return memory.SkillPage{}, fmt.Errorf("list skills: %w", err)
		}
		bytes += len(in.Description)
		page.Skills = append(page.Skills, in)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return memory.SkillPage{}, fmt.Errorf("list skills: %w", err)
	}
	return page, nil
}

// PublishedSkill returns the published snapshot name, whoever owns it.
func (s *Store) PublishedSkill(ctx context.Context, name string) (memory.Skill, error) {
	sk, err := scanSkill(s.db.QueryRow(ctx, publishedSkillSelect+` WHERE name = $1`, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.Skill{}, memory.NotFound("no skill %q is published", memory.Clip(name, 70))
	}
	if err != nil {
		return memory.Skill{}, fmt.Errorf("published skill: %w", err)
	}
	return sk, nil
}

// PublishedSkills returns every published snapshot by name, code
// included, for a server that registers them at start-up: a listing
// reads ListCallableSkills, and one change PublishedSkill.
func (s *Store) PublishedSkills(ctx context.Context) ([]memory.Skill, error) {
	return s.listSkills(ctx, publishedSkillSelect+` ORDER BY name COLLATE "C"`)
}

// AllSkills returns every principal's own skills, code included, for a
// server that registers them at start-up.
func (s *Store) AllSkills(ctx context.Context) ([]memory.Skill, error) {
	return s.listSkills(ctx, ownSkillSelect+` ORDER BY s.principal COLLATE "C", s.name COLLATE "C"`)
}

func (s *Store) listSkills(ctx context.Context, query string, args ...any) ([]memory.Skill, error) {
	rows, err := s.db.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list skills: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.Skill, error) { return scanSkill(r) })
	if err != nil {
		return nil, fmt.Errorf("list skills: %w", err)
	}
	if out == nil {
		out = []memory.Skill{}
	}
	return out, nil
}

// DeleteSkill deletes the caller's own skill name; a published snapshot
// stays.
func (s *Store) DeleteSkill(ctx context.Context, name string) error {
	owner := tools.CallerFrom(ctx).Principal
	var ch memory.SkillChange
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM skills WHERE principal = $1 AND name = $2`, owner, name)
		if err != nil {
			return fmt.Errorf("delete skill: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return memory.NotFound("you have no skill %q", memory.Clip(name, 70))
		}
		ch, err = s.skillChanged(ctx, tx, owner, name, memory.SkillDeleted)
		return err
	})
	if err != nil {
		return err
	}
	s.notifySkills(ch)
	return nil
}

// PublishSkill publishes a snapshot of the caller's skill name for every
// principal to call.
func (s *Store) PublishSkill(ctx context.Context, name string) (memory.Skill, error) {
	owner := tools.CallerFrom(ctx).Principal
	var snap memory.Skill
	var ch memory.SkillChange
	err := s.tx(ctx, func(tx pgx.Tx) error {
		// Published names are unique across owners: one publisher of a
		// name at a time.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('publish:' || $1, 0))`, name); err != nil {
			return err
		}
		sk, err := scanSkill(tx.QueryRow(ctx, ownSkillSelect+` WHERE s.principal = $1 AND s.name = $2`, owner, name))
		if errors.Is(err, pgx.ErrNoRows) {
			return memory.NotFound("you have no skill %q to publish; save it first", memory.Clip(name, 70))
		}
		if err != nil {
			return fmt.Errorf("publish skill: %w", err)
		}
		var other string
		err = tx.QueryRow(ctx, `SELECT owner FROM published_skills WHERE name = $1`, name).Scan(&other)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM published_skills WHERE owner = $1`, owner).Scan(&n); err != nil {
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
		var schema *string
		if sk.InputSchema != nil {
			v := string(sk.InputSchema)
			schema = &v
		}
		if _, err := tx.Exec(ctx, `INSERT INTO published_skills (name, owner, description, code, code_sha256, language, input_schema,
			version, created_at, updated_at, published_at, provenance) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			ON CONFLICT (name) DO UPDATE SET description = excluded.description, code = excluded.code, code_sha256 = excluded.code_sha256,
			language = excluded.language, input_schema = excluded.input_schema, version = excluded.version,
			created_at = excluded.created_at, updated_at = excluded.updated_at, published_at = excluded.published_at,
			provenance = excluded.provenance`,
			name, owner, sk.Description, sk.Code, sk.CodeSHA256, sk.Language, schema, sk.Version, ms(sk.CreatedAt), ms(sk.UpdatedAt), ms(now),
			provArg(sk.Provenance)); err != nil {
			return fmt.Errorf("publish skill: %w", err)
		}
		snap = sk
		snap.Snapshot, snap.Published, snap.PublishedVersion, snap.PublishedAt = true, true, sk.Version, &now
		ch, err = s.skillChanged(ctx, tx, owner, name, memory.SkillPublished)
		return err
	})
	if err != nil {
		return memory.Skill{}, err
	}
	s.notifySkills(ch)
	return snap, nil
}

// UnpublishSkill withdraws the caller's published snapshot name.
func (s *Store) UnpublishSkill(ctx context.Context, name string) error {
	owner := tools.CallerFrom(ctx).Principal
	var ch memory.SkillChange
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM published_skills WHERE name = $1 AND owner = $2`, name, owner)
		if err != nil {
			return fmt.Errorf("unpublish skill: %w", err)
		}
		if tag.RowsAffected() == 0 {
			var other string
			if tx.QueryRow(ctx, `SELECT owner FROM published_skills WHERE name = $1`, name).Scan(&other) == nil {
				return memory.Conflict("skill %q is published by %s; only its owner can unpublish it", name, memory.Clip(other, 70))
			}
			return memory.NotFound("you have not published a skill %q", memory.Clip(name, 70))
		}
		ch, err = s.skillChanged(ctx, tx, owner, name, memory.SkillUnpublished)
		return err
	})
	if err != nil {
		return err
	}
	s.notifySkills(ch)
	return nil
}
