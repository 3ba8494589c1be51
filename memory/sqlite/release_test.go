package sqlite

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/codecell/codecell/memory"
)

// releaseStore writes testdata/store-0616e41.db.gz, a store made by the
// codecell binary of commit 0616e41 (the release before memory's backends
// moved below it) running testdata/store-0616e41.js once, into a file of
// the test's own, and returns its path.
func releaseStore(t *testing.T) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "store-0616e41.db.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "codecell.db")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpensStoreOfEarlierRelease: what an earlier release stored reads
// back whole once a writable open migrated the file (a read-only open of
// an older schema is refused), the store takes writes, and a read-only
// open reads it all again.
func TestOpensStoreOfEarlierRelease(t *testing.T) {
	path := releaseStore(t)
	for _, readOnly := range []bool{false, true} {
		s := openTest(t, Config{Path: path, ReadOnly: readOnly})
		ctx := as(t.Context(), "local") // codecell exec's principal
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.SchemaVersion != SchemaVersion() || st.Memories < 4 || st.Entities != 2 || st.Relations != 1 ||
			st.Skills != 1 || st.Files != 1 || st.Executions != 1 || st.ToolCalls != 7 {
			t.Fatalf("read-only %v: stats %+v", readOnly, st)
		}
		res, err := s.Recall(ctx, memory.RecallInput{Query: "why did the deploy fail", Limit: 1})
		if err != nil || len(res.Results) != 1 || res.Results[0].Content != "Deploy failed because the certificate expired" {
			t.Fatalf("read-only %v: recall %+v %v", readOnly, res.Results, err)
		}
		_, data, err := s.ReadFile(ctx, "notes/plan.md")
		if err != nil || string(data) != "# plan\nship it" {
			t.Fatalf("read-only %v: workspace file %q %v", readOnly, data, err)
		}
		sk, err := s.GetSkill(ctx, "greet")
		if err != nil || sk.Description != "Says hello" {
			t.Fatalf("read-only %v: skill %+v %v", readOnly, sk, err)
		}
		if err := s.IntegrityCheck(ctx); err != nil {
			t.Fatal(err)
		}
		if readOnly {
			if st.Memories != 5 {
				t.Fatalf("read-only: %d memories after the write, want 5", st.Memories)
			}
			continue
		}
		m := mustRemember(t, s, ctx, memory.RememberInput{Content: "The invoice archive moved to cold storage", Entities: []string{"billing-service"}})
		res, err = s.Recall(ctx, memory.RecallInput{Query: "invoice archive in cold storage", Limit: 1})
		if err != nil || len(res.Results) != 1 || res.Results[0].ID != m.ID {
			t.Fatalf("recall after a write: %+v %v", res.Results, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
