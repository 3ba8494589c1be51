package sqlite

import (
	"context"
	"database/sql"

	sqlite_vec "github.com/asg017/sqlite-vec-go-bindings/cgo"
)

// MigrateTo migrates db up to version target, for the contract's
// upgrade test (contract_test.go).
func MigrateTo(ctx context.Context, db *sql.DB, target int) error {
	vecOnce.Do(sqlite_vec.Auto)
	return migrateTo(ctx, db, target, nil)
}
