package storetest_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/storetest"
)

func TestSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (storetest.Backend, func() storetest.Backend) {
		path := filepath.Join(t.TempDir(), "codecell.db")
		open := func() storetest.Backend {
			st, err := memory.Open(t.Context(), memory.Config{Path: path, WatchInterval: 50 * time.Millisecond}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
		return open(), open
	})
}
