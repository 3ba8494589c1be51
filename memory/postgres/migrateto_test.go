package postgres

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// MigrateTo migrates up to version target, for the contract's upgrade
// test (contract_test.go).
func MigrateTo(ctx context.Context, pool *pgxpool.Pool, target int) ([]int, error) {
	return migrateTo(ctx, pool, target)
}
