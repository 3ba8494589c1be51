package sqlite

import (
	"github.com/codecell/codecell/memory"

	"database/sql"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	sqlite_vec "github.com/asg017/sqlite-vec-go-bindings/cgo"
)

// TestMigrateFTSPerPrincipal builds a database of schema 5, whose
// memories of every principal share one full-text index, and opens it:
// each principal's memories move to an index of their own, which ranks
// them exactly as an index built by Remember does.
func TestMigrateFTSPerPrincipal(t *testing.T) {
	ctx := t.Context()
	mems := []struct {
		principal, content string
		tags               []string
	}{
		{"alice", "the payroll export runs on fridays", []string{"payroll", "finance"}},
		{"alice", "deploy the billing service with make deploy", []string{"deploy"}},
		{"alice", "payroll questions go to finance", nil},
		{"bob", "payroll payroll payroll", []string{"noise"}},
		{"bob", "fridays are for deploys", []string{"deploy"}},
	}
	path := filepath.Join(t.TempDir(), "v5.db")
	old, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	vecOnce.Do(sqlite_vec.Auto)
	if err := migrateTo(ctx, old, 5, nil); err != nil {
		t.Fatal(err)
	}
	emb := memory.NewHashEmbedder(memory.DefaultDimensions)
	for k, v := range map[string]string{metaEmbedder: emb.Name(), metaDims: strconv.Itoa(emb.Dimensions()), metaQuantizer: memory.NewQuantizer(emb.Dimensions()).Name()} {
		if _, err := old.Exec(`INSERT INTO meta (key, value) VALUES (?, ?)`, k, v); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range mems {
		id := int64(i + 1)
		if _, err := old.Exec(`INSERT INTO memories (id, principal, layer, content, tags, created_at, updated_at) VALUES (?, ?, 'semantic', ?, ?, 1, 1)`,
			id, m.principal, m.content, memory.EncodeTags(m.tags)); err != nil {
			t.Fatal(err)
		}
		if _, err := old.Exec(`INSERT INTO memory_fts (rowid, content, tags) VALUES (?, ?, ?)`, id, m.content, strings.Join(m.tags, " ")); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	migrated := openTestAt(t, path)
	fresh := openTest(t, Config{})
	for _, m := range mems {
		mustRemember(t, fresh, as(ctx, m.principal), memory.RememberInput{Content: m.content, Tags: m.tags})
	}
	if _, err := migrated.r.ExecContext(ctx, `SELECT count(*) FROM memory_fts`); err == nil {
		t.Fatal("the shared index is still there")
	}
	found := 0
	for _, principal := range []string{"alice", "bob"} {
		for _, q := range []string{"payroll", "deploy fridays", "finance export"} {
			scores := func(s *Store) []float64 {
				r, err := s.Recall(as(ctx, principal), memory.RecallInput{Query: q, Mode: memory.ModeKeyword})
				if err != nil {
					t.Fatal(err)
				}
				var out []float64
				for _, h := range r.Results {
					out = append(out, float64(h.ID), h.Score)
				}
				return out
			}
			got, want := scores(migrated), scores(fresh)
			found += len(want)
			if !slices.Equal(got, want) {
				t.Errorf("%s, %q: migrated index ranks %v, a fresh one %v", principal, q, got, want)
			}
		}
	}
	if found < 10 {
		t.Fatalf("the queries found %d memories in all; the test needs more", found/2)
	}
	if err := migrated.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}
