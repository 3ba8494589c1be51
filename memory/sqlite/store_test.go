package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	sqlite_vec "github.com/asg017/sqlite-vec-go-bindings/cgo"
	_ "github.com/mattn/go-sqlite3"
)

func TestOpenPragmas(t *testing.T) {
	s := openTest(t, Config{})
	ctx := t.Context()
	var mode string
	if err := s.w.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	var fk int
	if err := s.r.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Fatalf("reader foreign_keys = %d, %v; want 1", fk, err)
	}
	var v int
	if err := s.r.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil || v != SchemaVersion() {
		t.Fatalf("user_version = %d, %v; want %d", v, err, SchemaVersion())
	}
	// Readers cannot write.
	if _, err := s.r.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('x', 'y')`); err == nil {
		t.Fatal("a reader connection wrote")
	}
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestInMemory(t *testing.T) {
	s := openTest(t, Config{Path: InMemory})
	ctx := t.Context()
	m := mustRemember(t, s, ctx, memory.RememberInput{Content: "the build server is called hephaestus"})
	r, err := s.Recall(ctx, memory.RecallInput{Query: "build server name"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Results) != 1 || r.Results[0].ID != m.ID {
		t.Fatalf("recall in memory: %+v", r.Results)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/data/x")
	p, err := DefaultPath()
	if err != nil || p != "/data/x/codecell/codecell.db" {
		t.Fatalf("DefaultPath = %q, %v", p, err)
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", "/home/u")
	p, err = DefaultPath()
	if err != nil || p != "/home/u/.local/share/codecell/codecell.db" {
		t.Fatalf("DefaultPath without XDG_DATA_HOME = %q, %v", p, err)
	}
}

func TestClosed(t *testing.T) {
	s := openTest(t, Config{})
	s.Close()
	if _, err := s.Remember(t.Context(), memory.RememberInput{Content: "x"}); !errors.Is(err, memory.ErrClosed) {
		t.Fatalf("remember after close: %v, want ErrClosed", err)
	}
}

// TestMigrateFromV1 builds a database with the first migration only, as an
// early release left it, fills it, and opens it with the current schema.
func TestMigrateFromV1(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	vecOnce.Do(sqlite_vec.Auto)
	if err := migrateTo(ctx, old, 1, nil); err != nil {
		t.Fatalf("build v1: %v", err)
	}
	var v int
	old.QueryRow(`PRAGMA user_version`).Scan(&v)
	if v != 1 {
		t.Fatalf("v1 database has user_version %d", v)
	}
	// Server tables do not exist yet.
	if _, err := old.Exec(`SELECT count(*) FROM executions`); err == nil {
		t.Fatal("v1 database has the executions table")
	}
	old.Close()

	// A v1 store with memories, written by the v1-era code path.
	s := openTestAt(t, path)
	m := mustRemember(t, s, ctx, memory.RememberInput{Content: "postgres runs on port 5433 in staging", Tags: []string{"db"}})
	s.Close()

	s = openTestAt(t, path)
	if err := s.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, m.ID)
	if err != nil || got.Content != m.Content {
		t.Fatalf("memory after migration: %+v, %v", got, err)
	}
	if err := s.RecordExecution(ctx, memory.Execution{ID: "e1", Code: "1+1", Status: "ok"}); err != nil {
		t.Fatalf("v2 table after migration: %v", err)
	}
	var applied int
	s.r.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&applied)
	if applied != SchemaVersion() {
		t.Fatalf("user_version %d after migration, want %d", applied, SchemaVersion())
	}
}

func openTestAt(tb testing.TB, path string) *Store {
	tb.Helper()
	s, err := Open(context.Background(), Config{Path: path}, nil)
	if err != nil {
		tb.Fatalf("open %s: %v", path, err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func TestMigrateRefusesNewer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	db.Exec(`PRAGMA user_version = 99`)
	db.Close()
	_, err = Open(t.Context(), Config{Path: path}, nil)
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("open of a newer schema: %v", err)
	}
}

func TestMigrationFailureRollsBack(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "bad.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	vecOnce.Do(sqlite_vec.Auto)
	if err := migrateTo(ctx, db, 1, nil); err != nil {
		t.Fatal(err)
	}
	// Make migration 2 fail halfway: its third table already exists.
	if _, err := db.Exec(`CREATE TABLE results (x)`); err != nil {
		t.Fatal(err)
	}
	if err := migrateTo(ctx, db, -1, nil); err == nil {
		t.Fatal("migration over a conflicting table succeeded")
	}
	var v int
	db.QueryRow(`PRAGMA user_version`).Scan(&v)
	if v != 1 {
		t.Fatalf("user_version %d after a failed migration, want 1", v)
	}
	if _, err := db.Exec(`SELECT count(*) FROM executions`); err == nil {
		t.Fatal("a failed migration left its first table behind")
	}
}
