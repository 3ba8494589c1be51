package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/memory/storetest"
)

// TestContract runs the contract suite on a database file, with a second
// instance on the same file for what instances share.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (storetest.Backend, func() storetest.Backend) {
		path := filepath.Join(t.TempDir(), "codecell.db")
		open := func() storetest.Backend {
			st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, WatchInterval: 50 * time.Millisecond}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
		return open(), open
	}, storetest.WithAlterPlan(alterPlan))
}

// alterPlan changes a stored plan's first step in the database file, as
// someone with access to it could.
func alterPlan(t *testing.T, st storetest.Backend, idHash string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+st.(*sqlite.Store).DBPath()+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), `UPDATE plan_steps SET args = CAST('{"path":"evil","data":"1"}' AS BLOB) WHERE plan_hash = ? AND seq = 1`, idHash); err != nil {
		t.Fatal(err)
	}
}

// TestCacheBound runs the contract of the cache's bound as a whole.
func TestCacheBound(t *testing.T) {
	storetest.CacheBound(t, func(t *testing.T, max int64) storetest.Backend {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "codecell.db"), Limits: memory.Limits{MaxCacheBytes: max}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// TestResultsBound runs the contract of stored results' bounds.
func TestResultsBound(t *testing.T) {
	storetest.ResultsBound(t, func(t *testing.T, perPrincipal, total int64) storetest.Backend {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "codecell.db"),
			Limits: memory.Limits{MaxPrincipalResultsBytes: perPrincipal, MaxResultsBytes: total}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}
