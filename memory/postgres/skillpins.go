package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Skill pins, as memory/skillpins.go keeps them: the published snapshot
// of another's skill that each principal runs.

// pinsOverLimit is memory.SkillPinsOverLimit with PostgreSQL's
// placeholders.
var pinsOverLimit = strings.NewReplacer("{1}", "$1", "{2}", "$2", "{3}", "$3").Replace(memory.SkillPinsOverLimit)

// SkillPin returns the caller's pin of skill name, or memory.ErrNotFound.
func (s *Store) SkillPin(ctx context.Context, name string) (memory.SkillPin, error) {
	if s.closed.Load() {
		return memory.SkillPin{}, memory.ErrClosed
	}
	principal := tools.CallerFrom(ctx).Principal
	p := memory.SkillPin{Name: name}
	var at int64
	err := s.db.QueryRow(ctx, `SELECT owner, version, code_sha256, pinned_at FROM skill_pins WHERE principal = $1 AND name = $2`,
		principal, name).Scan(&p.Owner, &p.Version, &p.CodeSHA256, &at)
	if errors.Is(err, pgx.ErrNoRows) {
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
	err := s.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO skill_pins (principal, name, owner, version, code_sha256, pinned_at) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (principal, name) DO UPDATE SET owner = excluded.owner, version = excluded.version, code_sha256 = excluded.code_sha256,
			pinned_at = excluded.pinned_at`, principal, p.Name, p.Owner, p.Version, p.CodeSHA256, ms(p.PinnedAt))
		if err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM skill_pins WHERE principal = $1`, principal).Scan(&n); err != nil || n <= s.lim.MaxSkillPins {
			return err
		}
		_, err = tx.Exec(ctx, pinsOverLimit, principal, p.Name, s.lim.MaxSkillPins-1)
		return err
	})
	if err != nil {
		return memory.SkillPin{}, fmt.Errorf("pin skill: %w", err)
	}
	return p, nil
}
