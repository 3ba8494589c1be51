package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// pinsOverLimit is memory.SkillPinsOverLimit with SQLite's placeholders.
var pinsOverLimit = strings.NewReplacer("{1}", "?", "{2}", "?", "{3}", "?").Replace(memory.SkillPinsOverLimit)

// SkillPin returns the caller's pin of skill name, or ErrNotFound.
func (s *Store) SkillPin(ctx context.Context, name string) (memory.SkillPin, error) {
	principal := tools.CallerFrom(ctx).Principal
	p := memory.SkillPin{Name: name}
	var at int64
	err := s.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT owner, version, code_sha256, pinned_at FROM skill_pins WHERE principal = ? AND name = ?`,
			principal, name).Scan(&p.Owner, &p.Version, &p.CodeSHA256, &at)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return memory.SkillPin{}, memory.NotFound("no pin of skill %q", memory.Clip(name, 70))
	}
	if err != nil {
		return memory.SkillPin{}, fmt.Errorf("skill pin: %w", err)
	}
	p.PinnedAt = fromMS(at)
	return p, nil
}

// PinSkill makes p the caller's pin of skill p.Name, replacing any, and
// returns it as stored.
func (s *Store) PinSkill(ctx context.Context, p memory.SkillPin) (memory.SkillPin, error) {
	principal := tools.CallerFrom(ctx).Principal
	if err := memory.CheckSkillPin(p); err != nil {
		return memory.SkillPin{}, err
	}
	p.PinnedAt = s.now().UTC().Truncate(time.Millisecond)
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO skill_pins (principal, name, owner, version, code_sha256, pinned_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (principal, name) DO UPDATE SET owner = excluded.owner, version = excluded.version, code_sha256 = excluded.code_sha256,
			pinned_at = excluded.pinned_at`, principal, p.Name, p.Owner, p.Version, p.CodeSHA256, ms(p.PinnedAt))
		if err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM skill_pins WHERE principal = ?`, principal).Scan(&n); err != nil || n <= s.lim.MaxSkillPins {
			return err
		}
		_, err = tx.ExecContext(ctx, pinsOverLimit, principal, p.Name, principal, p.Name, s.lim.MaxSkillPins-1)
		return err
	})
	if err != nil {
		return memory.SkillPin{}, fmt.Errorf("pin skill: %w", err)
	}
	return p, nil
}
