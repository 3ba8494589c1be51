package sqlite

import (
	"github.com/codecell/codecell/memory"

	"bytes"
	"crypto/sha256"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	sqlite_vec "github.com/asg017/sqlite-vec-go-bindings/cgo"
)

// TestReadOnly opens a store for reading only: there must be one, its
// schema must be this build's, and nothing is written to it, not even
// the access counts of what is read.
func TestReadOnly(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()

	t.Run("no store", func(t *testing.T) {
		path := filepath.Join(dir, "missing", "codecell.db")
		_, err := Open(ctx, Config{Path: path, ReadOnly: true}, nil)
		var nse *NoStoreError
		if !errors.As(err, &nse) || !errors.Is(err, memory.ErrNoStore) || nse.Path != path {
			t.Fatalf("open of a missing store: %v", err)
		}
		if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a read-only open created %s: %v", filepath.Dir(path), err)
		}
	})

	t.Run("reads without writing", func(t *testing.T) {
		path := filepath.Join(dir, "codecell.db")
		w := openTestAt(t, path)
		alice := as(ctx, "alice")
		m := mustRemember(t, w, alice, memory.RememberInput{Content: "the staging database moved to Frankfurt"})
		w.RecordExecution(ctx, memory.Execution{ID: "e1", Principal: "carol", Status: "ok"})
		w.Close()
		sum := func() [32]byte {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			return sha256.Sum256(b)
		}
		before := sum()

		s, err := Open(ctx, Config{Path: path, ReadOnly: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		st, err := s.Stats(ctx)
		if err != nil || st.Memories != 1 || st.Principals != 2 || st.Executions != 1 {
			t.Fatalf("stats: %+v %v", st, err)
		}
		r, err := s.Recall(alice, memory.RecallInput{Query: "where is staging"})
		if err != nil || len(r.Results) != 1 {
			t.Fatalf("recall: %+v %v", r, err)
		}
		if got, err := s.Get(alice, m.ID); err != nil || got.AccessCount != 0 {
			t.Fatalf("get: %+v %v", got, err)
		}
		var buf bytes.Buffer
		if rep, err := s.Export(ctx, &buf); err != nil || rep.Memories != 1 {
			t.Fatalf("export: %+v %v", rep, err)
		}
		if _, err := s.Remember(alice, memory.RememberInput{Content: "x"}); !errors.Is(err, ErrReadOnly) {
			t.Fatalf("remember on a read-only store: %v", err)
		}
		if _, err := s.SaveSkill(alice, memory.Skill{Name: "x", Description: "d", Code: "c"}); !errors.Is(err, ErrReadOnly) {
			t.Fatalf("save skill on a read-only store: %v", err)
		}
		if err := s.IntegrityCheck(ctx); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if sum() != before {
			t.Fatal("the read-only store changed the database file")
		}
	})

	t.Run("older schema", func(t *testing.T) {
		path := filepath.Join(dir, "old.db")
		db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL")
		if err != nil {
			t.Fatal(err)
		}
		vecOnce.Do(sqlite_vec.Auto)
		if err := migrateTo(ctx, db, 2, nil); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if _, err := Open(ctx, Config{Path: path, ReadOnly: true}, nil); !errors.Is(err, memory.ErrSchema) {
			t.Fatalf("read-only open of an older schema: %v", err)
		}
	})
}

// TestStatsPrincipals is issue 9's "principals 0 beside 118 executions":
// every table that records principals counts.
func TestStatsPrincipals(t *testing.T) {
	s := openTest(t, Config{})
	ctx := t.Context()
	s.RecordExecution(ctx, memory.Execution{ID: "e1", Principal: "local", Status: "ok"})
	s.RecordExecution(ctx, memory.Execution{ID: "e2", Principal: "local", Status: "ok"})
	s.PutResult(as(ctx, "bob"), memory.PutResultInput{Data: []byte("1")})
	s.UpsertEntity(as(ctx, "carol"), memory.EntityInput{Name: "x"})
	s.SaveSkill(as(ctx, "dave"), memory.Skill{Name: "x", Description: "d", Code: "c"})
	s.PublishSkill(as(ctx, "dave"), "x")
	st, err := s.Stats(ctx)
	if err != nil || st.Principals != 4 || st.PublishedSkills != 1 {
		t.Fatalf("stats: %+v %v", st, err)
	}
}
