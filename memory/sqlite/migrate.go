package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one forward-only schema change, numbered from 1: its SQL,
// then, for the few changes that SQL alone cannot make, a step in Go run
// in the same transaction.
type migration struct {
	version int
	name    string
	sql     string
	step    func(ctx context.Context, tx *sql.Tx) error
}

// migrationStep returns the Go step of migration version, or nil.
func migrationStep(version int) func(ctx context.Context, tx *sql.Tx) error {
	switch version {
	case 4:
		return migrateSharedSkills
	case 6:
		return migrateFTSPerPrincipal
	case 19:
		return migrateSessionHashes
	}
	return nil
}

// migrations returns the embedded migrations in order. Their file names
// are NNNN_name.sql; the numbers must run 1, 2, 3… without gaps.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := make([]migration, 0, len(names))
	for i, n := range names {
		base := path.Base(n)
		num, rest, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v != i+1 {
			return nil, fmt.Errorf("migration %s: want a name NNNN_name.sql numbered %d", base, i+1)
		}
		b, err := migrationFS.ReadFile(n)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: strings.TrimSuffix(rest, ".sql"), sql: string(b), step: migrationStep(v)})
	}
	return out, nil
}

// SchemaVersion is the schema version this build creates and understands.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// migrate applies, each in its own transaction, the migrations the
// database lacks. The version is PRAGMA user_version, written in the same
// transaction as the change.
func (s *Store) migrate(ctx context.Context) error {
	return migrateTo(ctx, s.w, -1, s.log.Info)
}

// checkSchema reports, for a store opened read-only, whether the
// database's schema is this build's: a read-only open cannot migrate.
func (s *Store) checkSchema(ctx context.Context) error {
	var cur int
	if err := s.r.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&cur); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	switch want := SchemaVersion(); {
	case cur > want:
		return fmt.Errorf("%w: the database's schema version %d is newer than this build's %d; use a newer codecell", memory.ErrSchema, cur, want)
	case cur < want:
		return fmt.Errorf("%w: the database has schema version %d and this build reads %d; open it once for writing (codecell serve, or memory import) to migrate it", memory.ErrSchema, cur, want)
	}
	return nil
}

// migrateTo migrates db up to version target (-1: the latest).
func migrateTo(ctx context.Context, db *sql.DB, target int, logf func(string, ...any)) error {
	all, err := migrations()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if target < 0 {
		target = len(all)
	}
	var cur int
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&cur); err != nil {
		return fmt.Errorf("migrate: read schema version: %w", err)
	}
	if cur > len(all) {
		return fmt.Errorf("migrate: database schema version %d is newer than this build's %d; use a newer codecell", cur, len(all))
	}
	for _, m := range all {
		if m.version <= cur || m.version > target {
			continue
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migrate to %d (%s): %w", m.version, m.name, err)
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate to %d (%s): %w", m.version, m.name, err)
		}
		if m.step != nil {
			if err := m.step(ctx, tx); err != nil {
				tx.Rollback()
				return fmt.Errorf("migrate to %d (%s): %w", m.version, m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, m.version)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate to %d (%s): %w", m.version, m.name, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migrate to %d (%s): commit: %w", m.version, m.name, err)
		}
		if logf != nil {
			logf("schema migrated", "version", m.version, "name", m.name)
		}
	}
	return nil
}

// migrateSessionHashes replaces the session IDs of the audit log's
// records with their memory.SessionHash (migration 19).
func migrateSessionHashes(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT session FROM executions WHERE session <> ''`)
	if err != nil {
		return err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := tx.ExecContext(ctx, `UPDATE executions SET session = ? WHERE session = ?`, memory.SessionHash(id), id); err != nil {
			return err
		}
	}
	return nil
}
