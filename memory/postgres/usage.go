package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
)

// txWithin runs fn in a transaction that fails, rolled back, when it
// takes principal past one of its quotas of memories and graph
// (memory.Limits.CheckUsage), read from principal_usage (migration 12),
// which triggers keep. A write's trigger holds the principal's row until
// the transaction ends, so two instances writing for one principal take
// turns and the second sees the first's: neither takes the last of a
// quota twice.
func (s *Store) txWithin(ctx context.Context, principal string, fn func(tx pgx.Tx) error) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
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
func usage(ctx context.Context, tx pgx.Tx, principal string) (memory.Usage, error) {
	rows, err := tx.Query(ctx, `SELECT kind, entries, bytes FROM principal_usage WHERE principal = $1`, principal)
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
