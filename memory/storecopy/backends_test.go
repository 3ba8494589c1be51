package storecopy_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/postgres/pgtest"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/memory/storetest"
	"github.com/codecell/codecell/tools"
)

// TestExportAcrossBackends: an export of SQLite imports into PostgreSQL
// and one of PostgreSQL into SQLite, every record of it.
func TestExportAcrossBackends(t *testing.T) {
	lite := func() *sqlite.Store {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "codecell.db")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	for _, tt := range []struct {
		name     string
		src, dst storetest.Backend
	}{
		{"sqlite to postgres", lite(), open(t, pgtest.Database(t))},
		{"postgres to sqlite", open(t, pgtest.Database(t)), lite()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			storetest.Fill(t, tt.src)
			var buf bytes.Buffer
			exp, err := tt.src.Export(t.Context(), &buf)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := tt.dst.Import(t.Context(), &buf)
			if err != nil || rep.Imported != exp {
				t.Fatalf("imported %+v %v, exported %+v", rep, err, exp)
			}
			alice := tools.WithCaller(t.Context(), tools.Caller{Principal: "alice"})
			res, err := tt.dst.Recall(alice, memory.RecallInput{Query: "quarterly planning", Limit: 1})
			if err != nil || len(res.Results) != 1 || res.Results[0].Content != "Quarterly planning starts in March" {
				t.Fatalf("recall after import: %+v %v", res.Results, err)
			}
		})
	}
}
