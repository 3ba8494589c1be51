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
