//go:build !sqlite_fts5

package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenWithoutFTS5 runs only in a build without the sqlite_fts5 tag,
// where every other test of the package fails to open a store:
//
//	go test -run TestOpenWithoutFTS5 ./memory/sqlite/
//
// Open says how to build instead of failing later with "no such module:
// fts5", and creates no file.
func TestOpenWithoutFTS5(t *testing.T) {
	path := filepath.Join(t.TempDir(), "codecell.db")
	_, err := Open(t.Context(), Config{Path: path}, nil)
	if !errors.Is(err, ErrNoFTS5) || !strings.Contains(err.Error(), "-tags sqlite_fts5") || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("open without FTS5: %v", err)
	}
	t.Log(err)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed open left %s: %v", path, err)
	}
}
