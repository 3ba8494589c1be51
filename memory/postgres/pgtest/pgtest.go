// Package pgtest starts a throwaway PostgreSQL server for tests from the
// machine's PostgreSQL binaries: a temporary data directory, trust
// authentication, a Unix socket in that directory and no TCP listener.
// A test binary starts one server in TestMain (Main) and each test takes
// a fresh database of it (Database). It owns nothing else: the schema is
// the business of the code under test.
//
// initdb refuses to run as root, so as root the server runs as the
// postgres user (runuser); the data directory is made theirs.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoPostgres: no PostgreSQL binaries on this machine.
var ErrNoPostgres = errors.New("no PostgreSQL binaries (looked in $CODECELL_PG_BIN and /usr/lib/postgresql/*/bin)")

// Server is a running PostgreSQL server in a temporary directory.
type Server struct {
	dir  string
	cmd  *exec.Cmd
	user string // the OS user that runs it, "" for the current one
	n    atomic.Int64
	done chan struct{}
}

// BinDir finds the directory of initdb and postgres: $CODECELL_PG_BIN,
// else the newest /usr/lib/postgresql/<version>/bin.
func BinDir() (string, error) {
	if d := os.Getenv("CODECELL_PG_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			return d, nil
		}
	}
	return "", ErrNoPostgres
}

// Start initializes a data directory under a new temporary directory and
// starts a server on it, waiting until it accepts connections.
func Start(ctx context.Context) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "codecell-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{dir: dir, done: make(chan struct{})}
	if os.Geteuid() == 0 {
		s.user = "postgres"
		u, err := user.Lookup(s.user)
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgtest: running as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgtest: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	out, err := s.command(ctx, filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "--locale=C").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %w: %s", err, out)
	}
	// No TCP, the socket in dir; fsync off and small buffers: a test
	// server, modest on a shared machine.
	s.cmd = s.command(context.Background(), filepath.Join(bin, "postgres"), "-D", data, "-k", dir, "-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=64MB", "-c", "max_connections=200", "-c", "max_wal_size=1GB")
	logf, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: start postgres: %w", err)
	}
	go func() {
		s.cmd.Wait()
		logf.Close()
		close(s.done)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err == nil {
			conn.Close(ctx)
			return s, nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(dir, "postgres.log"))
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgtest: postgres exited: %s", log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("pgtest: postgres did not accept connections in 30s: %w", err)
		}
	}
}

func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if s.user == "" {
		return exec.CommandContext(ctx, name, args...)
	}
	return exec.CommandContext(ctx, "runuser", append([]string{"-u", s.user, "--", name}, args...)...)
}

// DSN is the connection string of database db on the server.
func (s *Server) DSN(db string) string {
	q := url.Values{"host": {s.dir}, "user": {"postgres"}, "sslmode": {"disable"}}
	return "postgres:///" + db + "?" + q.Encode()
}

// CreateDatabase creates a new empty database and returns its DSN.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.n.Add(1))
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("pgtest: create database: %w", err)
	}
	return s.DSN(name), nil
}

// Stop stops the server (its whole process group) and removes its
// directory.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		// SIGINT: fast shutdown. The group: runuser and postgres's
		// children.
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
	}
	os.RemoveAll(s.dir)
}

var shared struct {
	srv *Server
	err error
}

// Main runs a test binary's tests with one server, started before them
// and stopped after: call it from TestMain. When the binaries are absent
// tests that call Database skip.
func Main(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	shared.srv, shared.err = Start(ctx)
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
	if errors.Is(shared.err, ErrNoPostgres) {
		tb.Skipf("PostgreSQL tests need PostgreSQL's binaries: %v", shared.err)
	}
	if shared.err != nil {
		tb.Fatalf("PostgreSQL test server: %v", shared.err)
	}
	if shared.srv == nil {
		tb.Fatal("pgtest.Database: call pgtest.Main from TestMain")
	}
	dsn, err := shared.srv.CreateDatabase(context.Background())
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
	conn := connectShared(tb)
	defer conn.Close(context.Background())
	ctx := context.Background()
	ident := pgx.Identifier{role}.Sanitize()
	if _, err := conn.Exec(ctx, `DO $$ BEGIN
		IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = `+quoteLiteral(role)+`) THEN
			CREATE ROLE `+ident+` LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
		END IF; END $$`); err != nil {
		tb.Fatalf("pgtest: create role: %v", err)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), shared.srv.n.Add(1))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" OWNER "+ident); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	if len(extensions) > 0 {
		db, err := pgx.Connect(ctx, shared.srv.DSN(name))
		if err != nil {
			tb.Fatal(err)
		}
		defer db.Close(ctx)
		for _, e := range extensions {
			if _, err := db.Exec(ctx, "CREATE EXTENSION "+pgx.Identifier{e}.Sanitize()); err != nil {
				tb.Fatalf("pgtest: create extension %s: %v", e, err)
			}
		}
	}
	q := url.Values{"host": {shared.srv.dir}, "user": {role}, "sslmode": {"disable"}}
	return "postgres:///" + name + "?" + q.Encode()
}

// connectShared connects to the postgres database of the server Main
// started, as the superuser.
func connectShared(tb testing.TB) *pgx.Conn {
	tb.Helper()
	if errors.Is(shared.err, ErrNoPostgres) {
		tb.Skipf("PostgreSQL tests need PostgreSQL's binaries: %v", shared.err)
	}
	if shared.err != nil {
		tb.Fatalf("PostgreSQL test server: %v", shared.err)
	}
	if shared.srv == nil {
		tb.Fatal("pgtest: call pgtest.Main from TestMain")
	}
	conn, err := pgx.Connect(context.Background(), shared.srv.DSN("postgres"))
	if err != nil {
		tb.Fatal(err)
	}
	return conn
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
