// Package pgserver starts a throwaway PostgreSQL server from the
// machine's PostgreSQL binaries: a temporary data directory, trust
// authentication, a Unix socket in that directory and no TCP listener,
// for tests (package pgtest) and the load tool (cmd/codecell-load). It
// owns nothing else: the schema is the business of its users. It does
// not import package testing.
//
// initdb refuses to run as root, so as root the server runs as the
// postgres user (runuser); the data directory is made theirs.
package pgserver

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
		return nil, fmt.Errorf("pgserver: %w", err)
	}
	s := &Server{dir: dir, done: make(chan struct{})}
	if os.Geteuid() == 0 {
		s.user = "postgres"
		u, err := user.Lookup(s.user)
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgserver: running as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgserver: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	out, err := s.command(ctx, filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "--locale=C").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgserver: initdb: %w: %s", err, out)
	}
	// No TCP, the socket in dir; fsync off and small buffers: a test
	// server, modest on a shared machine.
	s.cmd = s.command(context.Background(), filepath.Join(bin, "postgres"), "-D", data, "-k", dir, "-c", "listen_addresses=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=64MB", "-c", "max_connections=200", "-c", "max_wal_size=1GB")
	logf, err := os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgserver: %w", err)
	}
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgserver: start postgres: %w", err)
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
			return nil, fmt.Errorf("pgserver: postgres exited: %s", log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("pgserver: postgres did not accept connections in 30s: %w", err)
		}
	}
}

func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if s.user == "" {
		return exec.CommandContext(ctx, name, args...)
	}
	return exec.CommandContext(ctx, "runuser", append([]string{"-u", s.user, "--", name}, args...)...)
}

// DSN is the connection string of database db on the server, as the
// superuser.
func (s *Server) DSN(db string) string { return s.dsnAs(db, "postgres") }

// dsnAs is the connection string of database db on the server, as user.
func (s *Server) dsnAs(db, user string) string {
	q := url.Values{"host": {s.dir}, "user": {user}, "sslmode": {"disable"}}
	return "postgres:///" + db + "?" + q.Encode()
}

// newDatabaseName is a database name no other of this process's has.
func (s *Server) newDatabaseName() string {
	return fmt.Sprintf("t%d_%d", os.Getpid(), s.n.Add(1))
}

// CreateDatabase creates a new empty database and returns its DSN.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	name := s.newDatabaseName()
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return "", fmt.Errorf("pgserver: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("pgserver: create database: %w", err)
	}
	return s.DSN(name), nil
}

// CreateDatabaseAs creates a new empty database that role owns and
// returns the DSN that connects as role: a role without superuser rights
// (created if missing), which may create tables in the database but, for
// instance, not an untrusted extension. The extensions named are created
// in the database first, as a superuser would.
func (s *Server) CreateDatabaseAs(ctx context.Context, role string, extensions ...string) (string, error) {
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return "", fmt.Errorf("pgserver: %w", err)
	}
	defer conn.Close(ctx)
	ident := pgx.Identifier{role}.Sanitize()
	if _, err := conn.Exec(ctx, `DO $$ BEGIN
		IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = `+quoteLiteral(role)+`) THEN
			CREATE ROLE `+ident+` LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
		END IF; END $$`); err != nil {
		return "", fmt.Errorf("pgserver: create role: %w", err)
	}
	name := s.newDatabaseName()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" OWNER "+ident); err != nil {
		return "", fmt.Errorf("pgserver: create database: %w", err)
	}
	if len(extensions) > 0 {
		db, err := pgx.Connect(ctx, s.DSN(name))
		if err != nil {
			return "", fmt.Errorf("pgserver: %w", err)
		}
		defer db.Close(ctx)
		for _, e := range extensions {
			if _, err := db.Exec(ctx, "CREATE EXTENSION "+pgx.Identifier{e}.Sanitize()); err != nil {
				return "", fmt.Errorf("pgserver: create extension %s: %w", e, err)
			}
		}
	}
	return s.dsnAs(name, role), nil
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

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
