package sqlite

import (
	"context"
	"database/sql"

	"github.com/codecell/codecell/memory"
)

// writeWithin runs fn in a write transaction that fails, rolled back,
// when it takes principal past one of its quotas of memories and graph
// (memory.Limits.CheckUsage), read from principal_usage (migration 21),
// which triggers keep.
func (s *Store) writeWithin(ctx context.Context, principal string, fn func(tx *sql.Tx) error) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		before, err := usage(ctx, tx, principal)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			return err
		}
		after, err := usage(ctx, tx, principal)
		if err != nil {
			return err
		}
		return s.lim.CheckUsage(before, after)
	})
}

// usage reads what principal holds of memories and graph.
func usage(ctx context.Context, tx *sql.Tx, principal string) (memory.Usage, error) {
	rows, err := tx.QueryContext(ctx, `SELECT kind, entries, bytes FROM principal_usage WHERE principal = ?`, principal)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	u := memory.Usage{}
	for rows.Next() {
		var kind string
		var of memory.UsageOf
		if err := rows.Scan(&kind, &of.Entries, &of.Bytes); err != nil {
			return nil, err
		}
		u[kind] = of
	}
	return u, rows.Err()
}
