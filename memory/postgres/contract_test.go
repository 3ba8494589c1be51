package postgres_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/postgres"
	"github.com/codecell/codecell/memory/postgres/pgtest"
	"github.com/codecell/codecell/memory/storetest"
)

// TestContract runs the contract suite in both vector modes. With
// pgvector, ExactSearchLimit 1 sends every vector recall of more than
// one memory through the HNSW index, so that the contract covers it and
// not only the plain scan.
func TestContract(t *testing.T) {
	for _, tt := range []struct {
		mode       string
		exactLimit int
	}{
		{postgres.VectorsCodes, 0},
		{postgres.VectorsPgvector, 1},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			if tt.mode == postgres.VectorsPgvector {
				needPgvector(t)
			}
			storetest.Run(t, func(t *testing.T) (storetest.Backend, func() storetest.Backend) {
				cfg := postgres.Config{DSN: pgtest.Database(t), MaxConns: 4, Vectors: tt.mode, ExactSearchLimit: tt.exactLimit}
				st := openConfig(t, cfg)
				if got := st.VectorMode(); got != tt.mode {
					t.Fatalf("vector mode %s, want %s", got, tt.mode)
				}
				return st, func() storetest.Backend { return openConfig(t, cfg) }
			}, storetest.WithAlterPlan(alterPlan))
		})
	}
}

// alterPlan changes a stored plan's first step in the database, as
// someone with access to it could.
func alterPlan(t *testing.T, st storetest.Backend, idHash string) {
	t.Helper()
	if _, err := st.(*postgres.Store).Pool().Exec(t.Context(), `UPDATE plan_steps SET args = '{"path":"evil","data":"1"}'::bytea WHERE plan_hash = $1 AND seq = 1`, idHash); err != nil {
		t.Fatal(err)
	}
}

// TestCacheBound runs the contract of the cache's bound as a whole.
func TestCacheBound(t *testing.T) {
	storetest.CacheBound(t, func(t *testing.T, max int64) storetest.Backend {
		return openConfig(t, postgres.Config{DSN: pgtest.Database(t), MaxConns: 4, Limits: memory.Limits{MaxCacheBytes: max}})
	})
}

// TestResultsBound runs the contract of stored results' bounds.
func TestResultsBound(t *testing.T) {
	storetest.ResultsBound(t, func(t *testing.T, perPrincipal, total int64) storetest.Backend {
		return openConfig(t, postgres.Config{DSN: pgtest.Database(t), MaxConns: 4,
			Limits: memory.Limits{MaxPrincipalResultsBytes: perPrincipal, MaxResultsBytes: total}})
	})
}

// TestCacheJournals runs the contract of the journals' own bound.
func TestCacheJournals(t *testing.T) {
	storetest.CacheJournals(t, func(t *testing.T, lim memory.Limits) storetest.Backend {
		return openConfig(t, postgres.Config{DSN: pgtest.Database(t), MaxConns: 4, Limits: lim})
	})
}

// TestCacheTotals runs the contract of the cache's running total.
func TestCacheTotals(t *testing.T) {
	storetest.CacheTotals(t, func(t *testing.T, max int64) storetest.Backend {
		return openConfig(t, postgres.Config{DSN: pgtest.Database(t), MaxConns: 4, Limits: memory.Limits{MaxCacheBytes: max}})
	})
}

// TestUpgrade runs the contract of issue 19's third-round migrations on
// a database written at schema version 9.
func TestUpgrade(t *testing.T) {
	storetest.Upgrade(t, func(t *testing.T, old storetest.Legacy, lim memory.Limits) storetest.Backend {
		dsn := pgtest.Database(t)
		pool, err := pgxpool.New(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		if _, err := postgres.MigrateTo(t.Context(), pool, legacyVersion); err != nil {
			t.Fatal(err)
		}
		for _, e := range old.Executions {
			if _, err := pool.Exec(t.Context(), `INSERT INTO executions (id, principal, session, language, code, code_hash, status, started_at, updated_at)
				VALUES ($1, $2, $3, 'javascript', '1', '', 'ok', $4, $4)`, e.ID, e.Principal, e.Session, e.StartedAt.UnixMilli()); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range old.Cache {
			if _, err := pool.Exec(t.Context(), `INSERT INTO cache_entries (principal, kind, key, value, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
				c.Principal, c.Kind, c.Key, c.Value, c.CreatedAt.UnixMilli(), c.ExpiresAt.UnixMilli()); err != nil {
				t.Fatal(err)
			}
		}
		for _, e := range old.Entities {
			if _, err := pool.Exec(t.Context(), `INSERT INTO entities (principal, name, created_at, updated_at) VALUES ($1, $2, 0, 0)`, e.Principal, e.Name); err != nil {
				t.Fatal(err)
			}
		}
		return openConfig(t, postgres.Config{DSN: dsn, MaxConns: 4, Limits: lim})
	})
}

// legacyVersion is the schema version before issue 19's third-round
// migrations (the audit log's session hashes, the cache's totals).
const legacyVersion = 9

// TestQuotas runs the contract of the memories' and graph's quotas.
func TestQuotas(t *testing.T) {
	storetest.Quotas(t, func(t *testing.T, lim memory.Limits) storetest.Backend {
		return openConfig(t, postgres.Config{DSN: pgtest.Database(t), MaxConns: 4, Limits: lim})
	})
}

// TestMergeQuota runs the contract that consolidation's records of
// merged memories count toward the memory bytes (attack10's E4).
func TestMergeQuota(t *testing.T) {
	storetest.MergeQuota(t, func(t *testing.T, lim memory.Limits) storetest.Backend {
		return openConfig(t, postgres.Config{DSN: pgtest.Database(t), MaxConns: 4, Limits: lim})
	})
}

// TestPlanQuota runs the contract of the bound on a principal's plans.
func TestPlanQuota(t *testing.T) {
	storetest.PlanQuota(t, func(t *testing.T, lim memory.Limits) storetest.Backend {
		return openConfig(t, postgres.Config{DSN: pgtest.Database(t), MaxConns: 4, Limits: lim})
	})
}

// TestConsolidateReaders runs the contract that a consolidate holds no
// connection while it compares, with one connection beside the
// listener's.
func TestConsolidateReaders(t *testing.T) {
	storetest.ConsolidateReaders(t, func(t *testing.T) storetest.Backend {
		return openConfig(t, postgres.Config{DSN: pgtest.Database(t), MaxConns: 2})
	})
}

// TestMergeUsageUpgrade: migration 15 adds the records of merged
// memories a store already holds to their principal's memory bytes, and
// its trigger takes them back when their survivor goes (attack10's E4).
func TestMergeUsageUpgrade(t *testing.T) {
	ctx := t.Context()
	pool, err := pgxpool.New(ctx, pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := postgres.MigrateTo(ctx, pool, 14); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO memories (id, principal, layer, content, created_at, updated_at, tsv) VALUES (1, 'gina', 'semantic', 'kept', 0, 0, to_tsvector('kept'))`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO memory_merges (merged_id, survivor_id, principal, record, similarity, overlap, merged_at) VALUES (2, 1, 'gina', $1, 1, 1, 0)`, strings.Repeat("r", 5000)); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.MigrateTo(ctx, pool, 15); err != nil {
		t.Fatal(err)
	}
	bytes := func() (n int64) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT bytes FROM principal_usage WHERE principal = 'gina' AND kind = 'memories'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := bytes(); n != 4+2+2+5000 {
		t.Fatalf("gina's memory bytes after the migration: %d, want %d (her memory and the record of 5,000 bytes)", n, 4+2+2+5000)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO memory_merges (merged_id, survivor_id, principal, record, similarity, overlap, merged_at) VALUES (3, 1, 'gina', 'abc', 1, 1, 0)`); err != nil {
		t.Fatal(err)
	}
	if n := bytes(); n != 4+2+2+5003 {
		t.Fatalf("after a new record of 3 bytes: %d, want %d", n, 4+2+2+5003)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM memories WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if n := bytes(); n != 0 {
		t.Fatalf("after the survivor went (and its records, by cascade): %d bytes, want 0", n)
	}
}

// TestSurvivorProvenanceUpgrade: migration 16 gives a survivor that
// consolidation made before this release the provenance of the memories
// merged into it (their records keep it), with its own (issue 19,
// attack18 K2); a record that is not JSON, or has none, changes nothing.
func TestSurvivorProvenanceUpgrade(t *testing.T) {
	ctx := t.Context()
	pool, err := pgxpool.New(ctx, pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := postgres.MigrateTo(ctx, pool, 15); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO memories (id, principal, layer, content, created_at, updated_at, tsv, provenance) VALUES
			(1, 'gina', 'semantic', 'kept', 0, 0, to_tsvector('kept'), '["mail"]'), (5, 'gina', 'semantic', 'alone', 0, 0, to_tsvector('alone'), '["x"]'),
			(6, 'gina', 'semantic', 'plain', 0, 0, to_tsvector('plain'), NULL)`,
		`INSERT INTO memory_merges (merged_id, survivor_id, principal, record, similarity, overlap, merged_at) VALUES
			(2, 1, 'gina', '{"id":2,"content":"c","provenance":["crm.get_contact"]}', 1, 1, 0),
			(3, 1, 'gina', 'not json "provenance"', 1, 1, 0),
			(4, 1, 'gina', '{"id":4,"content":"c"}', 1, 1, 0),
			(7, 6, 'gina', '{"id":7,"content":"c","provenance":["crm.get_contact","mail"]}', 1, 1, 0),
			(8, 6, 'gina', '{"id":8,"content":"c","provenance":["jira.get_ticket"]}', 1, 1, 0)`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := postgres.MigrateTo(ctx, pool, 16); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int]string{1: `["crm.get_contact","mail"]`, 5: `["x"]`, 6: `["crm.get_contact","jira.get_ticket","mail"]`} {
		var got *string
		if err := pool.QueryRow(ctx, `SELECT provenance FROM memories WHERE id = $1`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got == nil || *got != want {
			t.Errorf("memory %d's provenance after the migration: %v, want %q", id, got, want)
		}
	}
}

// TestSkillPinsBound runs the contract that a principal's skill pins are
// bounded (issue 19, sec19).
func TestSkillPinsBound(t *testing.T) {
	storetest.SkillPinsBound(t, func(t *testing.T, lim memory.Limits) storetest.Backend {
		return openConfig(t, postgres.Config{DSN: pgtest.Database(t), MaxConns: 4, Limits: lim})
	})
}
