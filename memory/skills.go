package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/codecell/codecell/tools"
)

// Skill is a stored reusable program. The store keeps it; the server
// registers it as a tool and runs it in the sandbox.
type Skill struct {
	Principal   string          `json:"principal,omitempty"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Code        string          `json:"code"`
	Language    string          `json:"language"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// Version counts the saves of this skill, from 1.
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SkillChange tells subscribers that a principal's skill was saved or
// deleted. It is delivered after the change is committed.
type SkillChange struct {
	Principal string
	Name      string
	// Deleted is false for a save.
	Deleted bool
	// Version is the store-wide skills version after the change.
	Version int64
}

// skillNameRE: skill names become tool names (skills.<name>), so they are
// lower-case identifiers.
var skillNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

const metaSkillsVersion = "skills_version"

// SaveSkill creates or replaces the caller's skill sk.Name and returns it
// as stored. Language is javascript (default) or typescript; InputSchema,
// if given, must be a JSON Schema object.
func (s *Store) SaveSkill(ctx context.Context, sk Skill) (Skill, error) {
	principal := tools.CallerFrom(ctx).Principal
	if !skillNameRE.MatchString(sk.Name) {
		return Skill{}, invalidf("name %q: skill names are lower-case identifiers ([a-z][a-z0-9_]*, at most 64 characters), because they become tool names", clip(sk.Name, 70))
	}
	if err := validateText("description", sk.Description, s.lim.MaxContentBytes, true); err != nil {
		return Skill{}, err
	}
	if strings.ContainsAny(strings.SplitN(sk.Description, "\n", 2)[0], "\r") {
		return Skill{}, invalidf("description: the first line may not contain carriage returns")
	}
	if err := validateText("code", sk.Code, s.lim.MaxSkillCodeBytes, true); err != nil {
		return Skill{}, err
	}
	switch sk.Language {
	case "":
		sk.Language = "javascript"
	case "javascript", "typescript":
	default:
		return Skill{}, invalidf("language %q: use javascript or typescript", clip(sk.Language, 20))
	}
	var schema any
	if len(sk.InputSchema) > 0 && string(sk.InputSchema) != "null" {
		obj, err := normalizeObject("input_schema", sk.InputSchema, s.lim.MaxMetadataBytes)
		if err != nil {
			return Skill{}, err
		}
		if _, err := tools.CompileSchema(obj); err != nil {
			return Skill{}, invalidf("input_schema is not a valid JSON Schema: %v", err)
		}
		sk.InputSchema = obj
		schema = string(obj)
	} else {
		sk.InputSchema = nil
	}
	sk.Principal = principal
	var version int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		now := s.now().UTC().Truncate(time.Millisecond)
		var created int64
		var v int64
		err := tx.QueryRowContext(ctx, `SELECT created_at, version FROM skills WHERE principal = ? AND name = ?`, principal, sk.Name).Scan(&created, &v)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM skills WHERE principal = ?`, principal).Scan(&n); err != nil {
				return fmt.Errorf("save skill: %w", err)
			}
			if n >= s.lim.MaxSkills {
				return toolErr(CodeQuotaExceeded, ErrQuota, "you have %d skills, the limit; delete one first", n)
			}
			created = ms(now)
		case err != nil:
			return fmt.Errorf("save skill: %w", err)
		}
		sk.Version = v + 1
		sk.CreatedAt, sk.UpdatedAt = fromMS(created), now
		if _, err := tx.ExecContext(ctx, `INSERT INTO skills (principal, name, description, code, language, input_schema, version, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (principal, name) DO UPDATE SET description = excluded.description, code = excluded.code,
			language = excluded.language, input_schema = excluded.input_schema, version = excluded.version, updated_at = excluded.updated_at`,
			principal, sk.Name, sk.Description, sk.Code, sk.Language, schema, sk.Version, created, ms(now)); err != nil {
			return fmt.Errorf("save skill: %w", err)
		}
		version, err = bumpSkillsVersion(ctx, tx)
		return err
	})
	if err != nil {
		return Skill{}, err
	}
	s.notifySkills(SkillChange{Principal: principal, Name: sk.Name, Version: version})
	return sk, nil
}

func bumpSkillsVersion(ctx context.Context, tx *sql.Tx) (int64, error) {
	var v int64
	if err := tx.QueryRowContext(ctx, `INSERT INTO meta (key, value) VALUES (?, '1')
		ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 RETURNING CAST(value AS INTEGER)`, metaSkillsVersion).Scan(&v); err != nil {
		return 0, fmt.Errorf("skills version: %w", err)
	}
	return v, nil
}

// SkillsVersion returns a number that grows with every save or delete of
// any skill, in this process or another one sharing the database: a server
// can poll it to know when to re-register skill tools.
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

const skillColumns = `principal, name, description, code, language, input_schema, version, created_at, updated_at`

func scanSkill(sc interface{ Scan(...any) error }) (Skill, error) {
	var sk Skill
	var schema sql.NullString
	var c, u int64
	if err := sc.Scan(&sk.Principal, &sk.Name, &sk.Description, &sk.Code, &sk.Language, &schema, &sk.Version, &c, &u); err != nil {
		return sk, err
	}
	if schema.Valid {
		sk.InputSchema = json.RawMessage(schema.String)
	}
	sk.CreatedAt, sk.UpdatedAt = fromMS(c), fromMS(u)
	return sk, nil
}

// GetSkill returns the caller's skill name.
func (s *Store) GetSkill(ctx context.Context, name string) (Skill, error) {
	principal := tools.CallerFrom(ctx).Principal
	var sk Skill
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		sk, err = scanSkill(tx.QueryRowContext(ctx, `SELECT `+skillColumns+` FROM skills WHERE principal = ? AND name = ?`, principal, name))
		if errors.Is(err, sql.ErrNoRows) {
			return notFoundf("skill %q not found", clip(name, 70))
		}
		return err
	})
	return sk, err
}

// ListSkills returns the caller's skills sorted by name.
func (s *Store) ListSkills(ctx context.Context) ([]Skill, error) {
	return s.listSkills(ctx, `WHERE principal = ?`, tools.CallerFrom(ctx).Principal)
}

// AllSkills returns every principal's skills, sorted by principal and
// name, for a server that registers them all at start-up.
func (s *Store) AllSkills(ctx context.Context) ([]Skill, error) {
	return s.listSkills(ctx, ``)
}

func (s *Store) listSkills(ctx context.Context, where string, args ...any) ([]Skill, error) {
	out := []Skill{}
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+skillColumns+` FROM skills `+where+` ORDER BY principal, name`, args...)
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

// DeleteSkill deletes the caller's skill name.
func (s *Store) DeleteSkill(ctx context.Context, name string) error {
	principal := tools.CallerFrom(ctx).Principal
	var version int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM skills WHERE principal = ? AND name = ?`, principal, name)
		if err != nil {
			return fmt.Errorf("delete skill: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFoundf("skill %q not found", clip(name, 70))
		}
		version, err = bumpSkillsVersion(ctx, tx)
		return err
	})
	if err != nil {
		return err
	}
	s.notifySkills(SkillChange{Principal: principal, Name: name, Deleted: true, Version: version})
	return nil
}

// OnSkillChange calls fn after every save or delete of a skill through
// this Store, on the goroutine that made it. fn must return quickly. The
// returned function ends the subscription. Changes made by other processes
// show only in SkillsVersion.
func (s *Store) OnSkillChange(fn func(SkillChange)) (cancel func()) {
	s.smu.Lock()
	id := s.nextSub
	s.nextSub++
	s.skillSubs[id] = fn
	s.smu.Unlock()
	return func() {
		s.smu.Lock()
		delete(s.skillSubs, id)
		s.smu.Unlock()
	}
}

func (s *Store) notifySkills(ch SkillChange) {
	s.smu.Lock()
	fns := make([]func(SkillChange), 0, len(s.skillSubs))
	for i := 0; i < s.nextSub; i++ {
		if fn, ok := s.skillSubs[i]; ok {
			fns = append(fns, fn)
		}
	}
	s.smu.Unlock()
	for _, fn := range fns {
		fn(ch)
	}
}
