package storecopy_test

import (
	"testing"

	"github.com/codecell/codecell/memory/postgres"
	"github.com/codecell/codecell/memory/postgres/pgtest"
)

// The tests of this package hold what needs both backends side by side:
// the copy from SQLite into PostgreSQL, an export of one imported into the
// other, and the benchmarks that measure the two on the same data.

func TestMain(m *testing.M) { pgtest.Main(m) }

func open(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	return openConfig(t, postgres.Config{DSN: dsn, MaxConns: 4})
}

func openConfig(t *testing.T, cfg postgres.Config) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// needPgvector skips t when the PostgreSQL test server has no pgvector
// (its vector.control is not installed; .ci/pgvector installs it).
func needPgvector(t *testing.T) {
	t.Helper()
	if !pgtest.HasExtension(t, "vector") {
		t.Skip("pgvector is not installed on this machine's PostgreSQL (no extension/vector.control; run .ci/pgvector)")
	}
}
