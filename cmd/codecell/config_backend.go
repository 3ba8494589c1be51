package main

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory/postgres"
)

// This file checks memory.backend and memory.dsn: which store the server
// keeps its state in. sqlite is the embedded default (memory.path);
// postgres is a database several instances share (memory/postgres), named
// by memory.dsn or CODECELL_MEMORY_DSN, whose vector recall
// memory.pg_vectors chooses (postgres.Config.Vectors).

const (
	backendSQLite   = "sqlite"
	backendPostgres = "postgres"
	// defaultPGVectors is memory.pg_vectors' default: pgvector when the
	// database has it.
	defaultPGVectors = postgres.VectorsAuto
)

// validateBackend reports a bad memory.backend or memory.dsn. The DSN is
// parsed, never printed: it may hold a password.
func (m MemoryConfig) validateBackend() []error {
	var errs []error
	bad := func(key, problem string) { errs = append(errs, configError{key, problem}) }
	switch m.Backend {
	case backendSQLite, "":
		if m.DSN != "" {
			bad("memory.dsn", `applies to memory.backend = "postgres" only`)
		}
		if m.PGVectors != "" && m.PGVectors != defaultPGVectors {
			bad("memory.pg_vectors", `applies to memory.backend = "postgres" only`)
		}
	case backendPostgres:
		switch m.PGVectors {
		case postgres.VectorsAuto, postgres.VectorsPgvector, postgres.VectorsCodes, "":
		default:
			bad("memory.pg_vectors", fmt.Sprintf("%q: use %s (pgvector when the database has it), %s or %s", m.PGVectors, postgres.VectorsAuto, postgres.VectorsPgvector, postgres.VectorsCodes))
		}
		if m.DSN == "" {
			bad("memory.dsn", `is required with memory.backend = "postgres" (or set CODECELL_MEMORY_DSN), e.g. postgres://codecell@db.internal/codecell`)
		} else if _, err := pgx.ParseConfig(m.DSN); err != nil {
			bad("memory.dsn", "is not a PostgreSQL connection string (postgres://user@host/db or key=value pairs)")
		}
		if m.Path != "" {
			bad("memory.path", `applies to memory.backend = "sqlite" only`)
		}
	default:
		bad("memory.backend", fmt.Sprintf("%q: use sqlite or postgres", m.Backend))
	}
	return errs
}

// hiddenPassword stands for a password where a DSN is shown.
const hiddenPassword = "(hidden)"

// passwordPair is a password in a key=value DSN, quoted or not.
var passwordPair = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// hideDSNPassword returns dsn with its password, if any, replaced by
// hiddenPassword: where a configuration is shown (config check, the
// connection help of serve) the database is named, the password never.
func hideDSNPassword(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), hiddenPassword)
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", hiddenPassword)
			u.RawQuery = q.Encode()
		}
		s, _ := url.PathUnescape(u.String())
		return s
	}
	if !strings.Contains(dsn, "=") {
		return dsn
	}
	return passwordPair.ReplaceAllString(dsn, "${1}"+hiddenPassword)
}
