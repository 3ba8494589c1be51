// Package pgtest gives tests a throwaway PostgreSQL server
// (pgserver): a test binary starts one server in TestMain (Main) and each
// test takes a fresh database of it (Database). It owns nothing else: the
// schema is the business of the code under test.
package pgtest

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory/postgres/pgserver"
)

var shared struct {
	srv *pgserver.Server
	err error
}

// Main runs a test binary's tests with one server, started before them
// and stopped after: call it from TestMain. When the binaries are absent
// tests that call Database skip.
func Main(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	shared.srv, shared.err = pgserver.Start(ctx)
	cancel()
	code := m.Run()
	if shared.srv != nil {
		shared.srv.Stop()
	}
	os.Exit(code)
}

// Database returns the DSN of a fresh database on the server Main
// started. It skips the test when there are no PostgreSQL binaries, and
// fails it when the server did not start.
func Database(tb testing.TB) string {
	tb.Helper()
	dsn, err := server(tb).CreateDatabase(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return dsn
}

// HasExtension reports whether the server Main started can create the
// extension name (its control file is installed). It skips the test when
// there are no PostgreSQL binaries, as Database does.
func HasExtension(tb testing.TB, name string) bool {
	tb.Helper()
	conn := connectShared(tb)
	defer conn.Close(context.Background())
	var ok bool
	if err := conn.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = $1)`, name).Scan(&ok); err != nil {
		tb.Fatal(err)
	}
	return ok
}

// DatabaseAs returns the DSN of a fresh database on the server Main
// started that role owns and connects as: a role without superuser
// rights (created if missing), which may create tables in the database
// but, for instance, not an untrusted extension. The extensions named
// are created in the database first, as a superuser would.
func DatabaseAs(tb testing.TB, role string, extensions ...string) string {
	tb.Helper()
	dsn, err := server(tb).CreateDatabaseAs(context.Background(), role, extensions...)
	if err != nil {
		tb.Fatal(err)
	}
	return dsn
}

// server is the server Main started. It skips the test when there are
// no PostgreSQL binaries, and fails it when the server did not start.
func server(tb testing.TB) *pgserver.Server {
	tb.Helper()
	if errors.Is(shared.err, pgserver.ErrNoPostgres) {
		tb.Skipf("PostgreSQL tests need PostgreSQL's binaries: %v", shared.err)
	}
	if shared.err != nil {
		tb.Fatalf("PostgreSQL test server: %v", shared.err)
	}
	if shared.srv == nil {
		tb.Fatal("pgtest: call pgtest.Main from TestMain")
	}
	return shared.srv
}

// connectShared connects to the postgres database of the server Main
// started, as the superuser.
func connectShared(tb testing.TB) *pgx.Conn {
	tb.Helper()
	conn, err := pgx.Connect(context.Background(), server(tb).DSN("postgres"))
	if err != nil {
		tb.Fatal(err)
	}
	return conn
}
