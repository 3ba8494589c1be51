package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/codecell/codecell/memory/postgres"
	"github.com/codecell/codecell/memory/postgres/pgtest"
	"github.com/codecell/codecell/memory/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func open(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(t.Context(), postgres.Config{DSN: dsn, MaxConns: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (storetest.Backend, func() storetest.Backend) {
		dsn := pgtest.Database(t)
		return open(t, dsn), func() storetest.Backend { return open(t, dsn) }
	})
}

// TestMigrateConcurrently: four instances starting together on a fresh
// database migrate it once, and none fails.
func TestMigrateConcurrently(t *testing.T) {
	dsn := pgtest.Database(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, MaxConns: 2}, nil)
			if err != nil {
				errs[i] = err
				return
			}
			st.Close()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("opener %d: %v", i, err)
		}
	}
	st := open(t, dsn)
	var n, applied int
	if err := st.Pool().QueryRow(t.Context(), `SELECT count(*), count(DISTINCT version) FROM schema_migrations`).Scan(&n, &applied); err != nil {
		t.Fatal(err)
	}
	ms, err := postgres.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if n != len(ms) || applied != len(ms) {
		t.Fatalf("schema_migrations has %d rows (%d versions), want one per migration (%d)", n, applied, len(ms))
	}
}
