package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/postgres"
	"github.com/codecell/codecell/memory/postgres/pgtest"
	"github.com/codecell/codecell/tools"
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

func openConfig(t *testing.T, cfg postgres.Config) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
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

// TestCommonWords: on a principal with more memories than
// KeywordCommonDocs, a query word most of them hold is left out of the
// keyword ranking and reported; an exact recall keeps it.
func TestCommonWords(t *testing.T) {
	dsn := pgtest.Database(t)
	st, err := postgres.Open(t.Context(), postgres.Config{DSN: dsn, MaxConns: 2, KeywordCommonDocs: 5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	alice := tools.WithCaller(t.Context(), tools.Caller{Principal: "alice"})
	for i := range 8 {
		content := fmt.Sprintf("deploy step %d of the web app", i)
		if i < 2 {
			content = fmt.Sprintf("deploy billing step %d", i)
		}
		if _, err := st.Remember(alice, memory.RememberInput{Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name   string
		exact  bool
		common string
		hits   int
	}{
		{"cut", false, "[deploy]", 2},
		{"exact", true, "[]", 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := st.Recall(alice, memory.RecallInput{Query: "Deploy billing deploy", Mode: memory.ModeKeyword, Limit: 20, Exact: tt.exact})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(res.CommonWords) != tt.common || len(res.Results) != tt.hits {
				t.Fatalf("common words %v, %d hits; want %s, %d", res.CommonWords, len(res.Results), tt.common, tt.hits)
			}
		})
	}
	// Nothing but common words: ranked on them all.
	res, err := st.Recall(alice, memory.RecallInput{Query: "deploy", Mode: memory.ModeKeyword, Limit: 20})
	if err != nil || len(res.CommonWords) != 0 || len(res.Results) != 8 {
		t.Fatalf("only common words: %v, %d hits, %v", res.CommonWords, len(res.Results), err)
	}
}

// TestReady: a migrated store is ready; one whose database another
// binary migrated further, or that is closed, is not.
func TestReady(t *testing.T) {
	st := open(t, pgtest.Database(t))
	if err := st.Ready(t.Context()); err != nil {
		t.Fatalf("fresh store: %v", err)
	}
	if _, err := st.Pool().Exec(t.Context(), `INSERT INTO schema_migrations (version, name) VALUES (9999, 'later')`); err != nil {
		t.Fatal(err)
	}
	if err := st.Ready(t.Context()); !errors.Is(err, memory.ErrSchema) {
		t.Fatalf("newer schema: %v, want ErrSchema", err)
	}
	st.Close()
	if err := st.Ready(t.Context()); !errors.Is(err, memory.ErrClosed) {
		t.Fatalf("closed: %v, want ErrClosed", err)
	}
}
