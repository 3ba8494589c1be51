package sqlite

import (
	"github.com/codecell/codecell/memory"

	"errors"
	"fmt"
)

// Errors of the SQLite store alone.
var (
	ErrReadOnly = errors.New("store opened read-only")
	// ErrNoFTS5: this binary's SQLite has no full-text search.
	ErrNoFTS5 = errors.New("this build's SQLite lacks FTS5, which the store needs: build codecell with `make build`, or with `go build -tags sqlite_fts5` (also for go test and go run)")
)

// NoStoreError is a read-only Open of a path where there is no database.
type NoStoreError struct {
	Path string
}

func (e *NoStoreError) Error() string {
	return fmt.Sprintf("no store at %s", e.Path)
}

func (e *NoStoreError) Unwrap() error { return memory.ErrNoStore }
