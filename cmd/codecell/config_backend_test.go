package main

import (
	"strings"
	"testing"
)

func TestValidateBackend(t *testing.T) {
	tests := []struct {
		name string
		m    MemoryConfig
		want string // "" for valid
	}{
		{"sqlite default", MemoryConfig{Backend: "sqlite"}, ""},
		{"postgres", MemoryConfig{Backend: "postgres", DSN: "postgres://codecell@db/codecell"}, ""},
		{"postgres key=value", MemoryConfig{Backend: "postgres", DSN: "host=/tmp dbname=codecell"}, ""},
		{"postgres without dsn", MemoryConfig{Backend: "postgres"}, "memory.dsn: is required"},
		{"bad dsn", MemoryConfig{Backend: "postgres", DSN: "postgres://a b:secret@%zz"}, "memory.dsn: is not a PostgreSQL"},
		{"dsn with sqlite", MemoryConfig{Backend: "sqlite", DSN: "postgres://db"}, "memory.dsn: applies to"},
		{"path with postgres", MemoryConfig{Backend: "postgres", DSN: "postgres://db", Path: "/x.db"}, "memory.path: applies to"},
		{"unknown", MemoryConfig{Backend: "mysql"}, `memory.backend: "mysql"`},
		{"pg_vectors pgvector", MemoryConfig{Backend: "postgres", DSN: "postgres://db", PGVectors: "pgvector"}, ""},
		{"pg_vectors codes", MemoryConfig{Backend: "postgres", DSN: "postgres://db", PGVectors: "codes"}, ""},
		{"pg_vectors auto with sqlite", MemoryConfig{Backend: "sqlite", PGVectors: "auto"}, ""},
		{"pg_vectors unknown", MemoryConfig{Backend: "postgres", DSN: "postgres://db", PGVectors: "ivfflat"}, `memory.pg_vectors: "ivfflat"`},
		{"pg_vectors with sqlite", MemoryConfig{Backend: "sqlite", PGVectors: "pgvector"}, "memory.pg_vectors: applies to"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.m.validateBackend()
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("errors %v, want none", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want) {
				t.Fatalf("errors %v, want one containing %q", errs, tc.want)
			}
			if strings.Contains(errs[0].Error(), "secret") {
				t.Fatalf("the error shows the DSN's password: %v", errs[0])
			}
		})
	}
}

func TestHideDSNPassword(t *testing.T) {
	for _, tc := range []struct{ dsn, want string }{
		{"postgres://codecell:s3cret@db.internal:5432/codecell?sslmode=require", "postgres://codecell:(hidden)@db.internal:5432/codecell?sslmode=require"},
		{"postgresql://codecell@db/codecell", "postgresql://codecell@db/codecell"},
		{"postgres:///codecell?host=/run/pg&password=s3cret", "postgres:///codecell?host=/run/pg&password=(hidden)"},
		{"host=db user=codecell password=s3cret dbname=codecell", "host=db user=codecell password=(hidden) dbname=codecell"},
		{`host=db password = 'it\'s s3cret' dbname=codecell`, "host=db password = (hidden) dbname=codecell"},
		{"host=db dbname=codecell", "host=db dbname=codecell"},
	} {
		t.Run(tc.dsn, func(t *testing.T) {
			got := hideDSNPassword(tc.dsn)
			if strings.Contains(got, "s3cret") || got != tc.want {
				t.Errorf("hideDSNPassword(%q) = %q, want %q", tc.dsn, got, tc.want)
			}
		})
	}
}
