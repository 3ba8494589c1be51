package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/codecell/codecell/tools"
)

// Skill pins: a principal that calls a skill another principal published
// runs the snapshot it called first, and not a later one unless it
// accepts it. The store keeps, per principal and skill name, which
// snapshot (owner, version, code hash) the principal pinned; the server
// compares it with the snapshot published now before it runs one.

// SkillPin is the published snapshot of a skill a principal runs.
type SkillPin struct {
	Name       string    `json:"name"`
	Owner      string    `json:"owner"`
	Version    int64     `json:"version"`
	CodeSHA256 string    `json:"code_sha256"`
	PinnedAt   time.Time `json:"pinned_at"`
}

// CheckSkillPin checks a pin to store as PinSkill does.
func CheckSkillPin(p SkillPin) error {
	if p.Name == "" || p.Owner == "" || p.CodeSHA256 == "" {
		return invalidf("pin skill: a pin needs the skill's name, owner and code hash")
	}
	return nil
}

// SkillPin returns the caller's pin of skill name, or ErrNotFound.
func (s *Store) SkillPin(ctx context.Context, name string) (SkillPin, error) {
	principal := tools.CallerFrom(ctx).Principal
	p := SkillPin{Name: name}
	var at int64
	err := s.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT owner, version, code_sha256, pinned_at FROM skill_pins WHERE principal = ? AND name = ?`,
			principal, name).Scan(&p.Owner, &p.Version, &p.CodeSHA256, &at)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return SkillPin{}, notFoundf("no pin of skill %q", clip(name, 70))
	}
	if err != nil {
		return SkillPin{}, fmt.Errorf("skill pin: %w", err)
	}
	p.PinnedAt = fromMS(at)
	return p, nil
}

// PinSkill makes p the caller's pin of skill p.Name, replacing any, and
// returns it as stored.
func (s *Store) PinSkill(ctx context.Context, p SkillPin) (SkillPin, error) {
	principal := tools.CallerFrom(ctx).Principal
	if err := CheckSkillPin(p); err != nil {
		return SkillPin{}, err
	}
	p.PinnedAt = s.now().UTC().Truncate(time.Millisecond)
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO skill_pins (principal, name, owner, version, code_sha256, pinned_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (principal, name) DO UPDATE SET owner = excluded.owner, version = excluded.version, code_sha256 = excluded.code_sha256,
			pinned_at = excluded.pinned_at`, principal, p.Name, p.Owner, p.Version, p.CodeSHA256, ms(p.PinnedAt))
		return err
	})
	if err != nil {
		return SkillPin{}, fmt.Errorf("pin skill: %w", err)
	}
	return p, nil
}
