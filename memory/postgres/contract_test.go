package postgres_test

import (
	"testing"

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
