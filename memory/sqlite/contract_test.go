package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"strings"
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

// TestCacheJournals runs the contract of the journals' own bound.
func TestCacheJournals(t *testing.T) {
	storetest.CacheJournals(t, func(t *testing.T, lim memory.Limits) storetest.Backend {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "codecell.db"), Limits: lim}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// TestCacheTotals runs the contract of the cache's running total.
func TestCacheTotals(t *testing.T) {
	storetest.CacheTotals(t, func(t *testing.T, max int64) storetest.Backend {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "codecell.db"), Limits: memory.Limits{MaxCacheBytes: max}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// TestUpgrade runs the contract of issue 19's third-round migrations on
// a database file written at schema version 18.
func TestUpgrade(t *testing.T) {
	storetest.Upgrade(t, func(t *testing.T, old storetest.Legacy, lim memory.Limits) storetest.Backend {
		path := filepath.Join(t.TempDir(), "codecell.db")
		db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_foreign_keys=on")
		if err != nil {
			t.Fatal(err)
		}
		if err := sqlite.MigrateTo(t.Context(), db, legacyVersion); err != nil {
			t.Fatal(err)
		}
		for _, e := range old.Executions {
			if _, err := db.Exec(`INSERT INTO executions (id, principal, session, language, code, code_hash, status, started_at, updated_at)
				VALUES (?, ?, ?, 'javascript', '1', '', 'ok', ?, ?)`, e.ID, e.Principal, e.Session, e.StartedAt.UnixMilli(), e.StartedAt.UnixMilli()); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range old.Cache {
			if _, err := db.Exec(`INSERT INTO cache_entries (principal, kind, key, value, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
				c.Principal, c.Kind, c.Key, c.Value, c.CreatedAt.UnixMilli(), c.ExpiresAt.UnixMilli()); err != nil {
				t.Fatal(err)
			}
		}
		for _, e := range old.Entities {
			if _, err := db.Exec(`INSERT INTO entities (principal, name, created_at, updated_at) VALUES (?, ?, 0, 0)`, e.Principal, e.Name); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Limits: lim}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// legacyVersion is the schema version before issue 19's third-round
// migrations (the audit log's session hashes, the cache's totals).
const legacyVersion = 18

// TestQuotas runs the contract of the memories' and graph's quotas.
func TestQuotas(t *testing.T) {
	storetest.Quotas(t, func(t *testing.T, lim memory.Limits) storetest.Backend {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "codecell.db"), Limits: lim}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// TestMergeQuota runs the contract that consolidation's records of
// merged memories count toward the memory bytes (attack10's E4).
func TestMergeQuota(t *testing.T) {
	storetest.MergeQuota(t, func(t *testing.T, lim memory.Limits) storetest.Backend {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "codecell.db"), Limits: lim}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// TestPlanQuota runs the contract of the bound on a principal's plans.
func TestPlanQuota(t *testing.T) {
	storetest.PlanQuota(t, func(t *testing.T, lim memory.Limits) storetest.Backend {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "codecell.db"), Limits: lim}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// TestConsolidateReaders runs the contract that a consolidate holds no
// read connection while it compares, with one read connection.
func TestConsolidateReaders(t *testing.T) {
	storetest.ConsolidateReaders(t, func(t *testing.T) storetest.Backend {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "codecell.db"), Readers: 1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}

// TestMergeUsageUpgrade: migration 24 adds the records of merged
// memories a store already holds to their principal's memory bytes, and
// its triggers take them back when their survivor goes (attack10's E4).
func TestMergeUsageUpgrade(t *testing.T) {
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "codecell.db")+"?_journal_mode=WAL&_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	if err := sqlite.MigrateTo(ctx, db, 23); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO memories (id, principal, layer, content, created_at, updated_at) VALUES (1, 'gina', 'semantic', 'kept', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO memory_merges (merged_id, survivor_id, principal, record, similarity, overlap, merged_at) VALUES (2, 1, 'gina', ?, 1, 1, 0)`, strings.Repeat("r", 5000)); err != nil {
		t.Fatal(err)
	}
	if err := sqlite.MigrateTo(ctx, db, 24); err != nil {
		t.Fatal(err)
	}
	bytes := func() (n int64) {
		t.Helper()
		if err := db.QueryRow(`SELECT bytes FROM principal_usage WHERE principal = 'gina' AND kind = 'memories'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := bytes(); n != 4+2+2+5000 {
		t.Fatalf("gina's memory bytes after the migration: %d, want %d (her memory and the record of 5,000 bytes)", n, 4+2+2+5000)
	}
	if _, err := db.Exec(`INSERT INTO memory_merges (merged_id, survivor_id, principal, record, similarity, overlap, merged_at) VALUES (3, 1, 'gina', 'abc', 1, 1, 0)`); err != nil {
		t.Fatal(err)
	}
	if n := bytes(); n != 4+2+2+5003 {
		t.Fatalf("after a new record of 3 bytes: %d, want %d", n, 4+2+2+5003)
	}
	if _, err := db.Exec(`DELETE FROM memories WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if n := bytes(); n != 0 {
		t.Fatalf("after the survivor went (and its records, by cascade): %d bytes, want 0", n)
	}
}

// TestSurvivorProvenanceUpgrade: migration 26 gives a survivor that
// consolidation made before this release the provenance of the memories
// merged into it (their records keep it), with its own (issue 19,
// attack18 K2); a record that is not JSON, or has none, changes nothing.
func TestSurvivorProvenanceUpgrade(t *testing.T) {
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "codecell.db")+"?_journal_mode=WAL&_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	if err := sqlite.MigrateTo(ctx, db, 25); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO memories (id, principal, layer, content, created_at, updated_at, provenance) VALUES
			(1, 'gina', 'semantic', 'kept', 0, 0, '["mail"]'), (5, 'gina', 'semantic', 'alone', 0, 0, '["x"]'), (6, 'gina', 'semantic', 'plain', 0, 0, NULL)`,
		`INSERT INTO memory_merges (merged_id, survivor_id, principal, record, similarity, overlap, merged_at) VALUES
			(2, 1, 'gina', '{"id":2,"content":"c","provenance":["crm.get_contact"]}', 1, 1, 0),
			(3, 1, 'gina', 'not json', 1, 1, 0),
			(4, 1, 'gina', '{"id":4,"content":"c"}', 1, 1, 0),
			(7, 6, 'gina', '{"id":7,"content":"c","provenance":["crm.get_contact","mail"]}', 1, 1, 0),
			(8, 6, 'gina', '{"id":8,"content":"c","provenance":["jira.get_ticket"]}', 1, 1, 0)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := sqlite.MigrateTo(ctx, db, 26); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int]string{1: `["crm.get_contact","mail"]`, 5: `["x"]`, 6: `["crm.get_contact","jira.get_ticket","mail"]`} {
		var got sql.NullString
		if err := db.QueryRow(`SELECT provenance FROM memories WHERE id = ?`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got.String != want {
			t.Errorf("memory %d's provenance after the migration: %q, want %q", id, got.String, want)
		}
	}
}

// TestSkillPinsBound runs the contract that a principal's skill pins are
// bounded (issue 19, sec19).
func TestSkillPinsBound(t *testing.T) {
	storetest.SkillPinsBound(t, func(t *testing.T, lim memory.Limits) storetest.Backend {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "codecell.db"), Limits: lim}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}
