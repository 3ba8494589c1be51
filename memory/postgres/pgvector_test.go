package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/postgres"
	"github.com/codecell/codecell/memory/postgres/pgtest"
	"github.com/codecell/codecell/tools"
)

// needPgvector skips t when the PostgreSQL test server has no pgvector
// (its vector.control is not installed; .ci/pgvector installs it).
func needPgvector(t *testing.T) {
	t.Helper()
	if !pgtest.HasExtension(t, "vector") {
		t.Skip("pgvector is not installed on this machine's PostgreSQL (no extension/vector.control; run .ci/pgvector)")
	}
}

// TestVectorModes: auto takes pgvector where the database can create the
// extension (or has it already) and the binary codes where it cannot;
// pgvector refuses to open there; codes never takes pgvector.
func TestVectorModes(t *testing.T) {
	needPgvector(t)
	super := func(t *testing.T) string { return pgtest.Database(t) }
	// A role that owns its database but may not create the untrusted
	// extension vector.
	plain := func(t *testing.T) string { return pgtest.DatabaseAs(t, "codecell_plain") }
	created := func(t *testing.T) string { return pgtest.DatabaseAs(t, "codecell_plain", "vector") }
	for _, tt := range []struct {
		name    string
		db      func(t *testing.T) string
		vectors string
		want    string
		err     error
	}{
		{"auto, superuser", super, "", postgres.VectorsPgvector, nil},
		{"auto, no right to create it", plain, postgres.VectorsAuto, postgres.VectorsCodes, nil},
		{"auto, created by a superuser", created, postgres.VectorsAuto, postgres.VectorsPgvector, nil},
		{"pgvector, superuser", super, postgres.VectorsPgvector, postgres.VectorsPgvector, nil},
		{"pgvector, no right to create it", plain, postgres.VectorsPgvector, "", postgres.ErrNoPgvector},
		{"codes, superuser", super, postgres.VectorsCodes, postgres.VectorsCodes, nil},
		{"unknown mode", super, "faiss", "", memory.ErrInvalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, err := postgres.Open(t.Context(), postgres.Config{DSN: tt.db(t), MaxConns: 2, Vectors: tt.vectors}, nil)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("open: %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if got := st.VectorMode(); got != tt.want {
				t.Fatalf("vector mode %s, want %s", got, tt.want)
			}
			// Either way the store remembers and recalls.
			alice := tools.WithCaller(t.Context(), tools.Caller{Principal: "alice"})
			if _, err := st.Remember(alice, memory.RememberInput{Content: "the deploy key rotates monthly"}); err != nil {
				t.Fatal(err)
			}
			res, err := st.Recall(alice, memory.RecallInput{Query: "deploy key rotation", Mode: memory.ModeVector})
			if err != nil || len(res.Results) != 1 {
				t.Fatalf("recall: %+v %v", res.Results, err)
			}
		})
	}
	t.Run("pgvector error says what to do", func(t *testing.T) {
		_, err := postgres.Open(t.Context(), postgres.Config{DSN: plain(t), MaxConns: 2, Vectors: postgres.VectorsPgvector}, nil)
		if err == nil || !errors.Is(err, postgres.ErrNoPgvector) {
			t.Fatalf("open: %v", err)
		}
		for _, want := range []string{"CREATE EXTENSION vector", "permission denied"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	})
}

// countEmbeddings counts the rows of memory_embeddings.
func countEmbeddings(t *testing.T, st *postgres.Store) int {
	t.Helper()
	var n int
	if err := st.Pool().QueryRow(t.Context(), `SELECT count(*) FROM memory_embeddings`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPgvectorKeptCurrent: an instance that takes pgvector on a database
// filled in codes mode fills the embeddings it lacks; every write of a
// vector (remember, update, import, reindex) keeps them current, and a
// reindex with an embedder of other dimensions makes the column again.
// An instance opened with an embedder of other dimensions than the
// column's fails memory operations with embedder_mismatch.
func TestPgvectorKeptCurrent(t *testing.T) {
	needPgvector(t)
	dsn := pgtest.Database(t)
	alice := tools.WithCaller(t.Context(), tools.Caller{Principal: "alice"})
	codes := openConfig(t, postgres.Config{DSN: dsn, MaxConns: 2, Vectors: postgres.VectorsCodes})
	for i := range 5 {
		if _, err := codes.Remember(alice, memory.RememberInput{Content: fmt.Sprintf("note %d about the billing service", i)}); err != nil {
			t.Fatal(err)
		}
	}
	pgv := openConfig(t, postgres.Config{DSN: dsn, MaxConns: 2, Vectors: postgres.VectorsPgvector, ExactSearchLimit: 1})
	if n := countEmbeddings(t, pgv); n != 5 {
		t.Fatalf("after open: %d embeddings, want 5", n)
	}
	m, err := pgv.Remember(alice, memory.RememberInput{Content: "the payroll export runs on Fridays"})
	if err != nil {
		t.Fatal(err)
	}
	// The codes instance, opened before the table existed, learns of it
	// on its next open; one opened now fills it too.
	codes2 := openConfig(t, postgres.Config{DSN: dsn, MaxConns: 2, Vectors: postgres.VectorsCodes})
	if _, err := codes2.Remember(alice, memory.RememberInput{Content: "the office wifi password changes in May"}); err != nil {
		t.Fatal(err)
	}
	if n := countEmbeddings(t, pgv); n != 7 {
		t.Fatalf("after remember: %d embeddings, want 7", n)
	}
	content := "the VPN certificate expires in June"
	if _, err := pgv.Update(alice, memory.UpdateInput{ID: m.ID, Content: &content}); err != nil {
		t.Fatal(err)
	}
	res, err := pgv.Recall(alice, memory.RecallInput{Query: "VPN certificate expiry", Mode: memory.ModeVector, Limit: 1})
	if err != nil || len(res.Results) != 1 || res.Results[0].ID != m.ID {
		t.Fatalf("recall after update: %+v %v", res.Results, err)
	}
	if res.Exact {
		t.Errorf("recall over 7 memories with ExactSearchLimit 1 reports exact: the HNSW path did not run")
	}

	emb := memory.NewHashEmbedder(64)
	other := openConfig(t, postgres.Config{DSN: dsn, MaxConns: 2, Vectors: postgres.VectorsPgvector, Embedder: emb, ExactSearchLimit: 1})
	var te *tools.Error
	if _, err := other.Remember(alice, memory.RememberInput{Content: "x"}); !errors.As(err, &te) || te.Code != memory.CodeEmbedderMismatch {
		t.Fatalf("remember with another embedder: %v, want embedder_mismatch", err)
	}
	if _, err := other.Reindex(t.Context(), emb); err != nil {
		t.Fatal(err)
	}
	var dims int
	if err := other.Pool().QueryRow(t.Context(), `SELECT atttypmod FROM pg_attribute WHERE attrelid = 'memory_embeddings'::regclass AND attname = 'embedding'`).Scan(&dims); err != nil || dims != 64 {
		t.Fatalf("column after reindex: %d dimensions (%v), want 64", dims, err)
	}
	if n := countEmbeddings(t, other); n != 7 {
		t.Fatalf("after reindex: %d embeddings, want 7", n)
	}
	res, err = other.Recall(alice, memory.RecallInput{Query: "VPN certificate expiry", Mode: memory.ModeVector, Limit: 1})
	if err != nil || len(res.Results) != 1 || res.Results[0].ID != m.ID {
		t.Fatalf("recall after reindex: %+v %v", res.Results, err)
	}
}
