package security

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/memory/postgres/pgserver"
)

// TestUpstreamReadsDefaultDataDir (issue 19, attack29 T1): a codecell
// started without XDG_DATA_HOME and server.data_dir (a desktop host's)
// keeps its store and filter key in ~/.local/share/codecell. A codecell
// started with a data directory of its own denied its servers that one
// only: a confined server read the other start's filter key and store,
// and could plant a key there. Both default data directories are denied
// whatever this start's.
func TestUpstreamReadsDefaultDataDir(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	first := start(t, "HOME="+home, "XDG_DATA_HOME=", "CODECELL_SERVER_DATA_DIR=")
	if rec := first.open(t, aliceToken).run(`await memory.remember({content: "alice's plan: the launch code is 271828"}); 1`); rec.Status != "ok" {
		t.Fatalf("remember: %s", rec.raw)
	}
	first.cmd.Process.Kill()
	first.cmd.Wait()
	def := filepath.Join(home, ".local", "share", "codecell")
	if _, err := os.Stat(filepath.Join(def, "filter.key")); err != nil {
		t.Fatalf("the first start made no filter key in %s: %v\n%s", def, err, first.stderr.String())
	}

	// The second start has a data directory of its own.
	e := startEvil(t, "", nil, "HOME="+home)
	alice := e.open(t, aliceToken)
	e.ready(t, alice)
	if !strings.Contains(e.stderr.String(), "stdio upstream servers run confined") {
		t.Skipf("stdio upstreams do not run confined here:\n%s", e.stderr.String())
	}
	if e.data == def {
		t.Fatalf("the second start uses the default data directory %s", def)
	}
	cmd := fmt.Sprintf("cat %[1]s/filter.key && echo READ; grep -a -c 271828 %[1]s/*; echo x > %[1]s/planted && echo PLANTED", def)
	rec := alice.run(`(await evil.shell({cmd: `+jsString(cmd)+`}))`, "timeout_ms", 20000)
	out := string(rec.Result)
	if strings.Contains(out, "READ") || strings.Contains(out, "PLANTED") || !strings.Contains(out, "Permission denied") {
		t.Errorf("a confined server read or wrote the default data directory of another start: %.600s", rec.raw)
	}
	// And $XDG_DATA_HOME/codecell, another start's default, cannot be made.
	xdg := filepath.Join(home, "xdg-data")
	os.Mkdir(xdg, 0o700)
	e2 := startEvil(t, "", nil, "HOME="+home, "XDG_DATA_HOME="+xdg)
	alice2 := e2.open(t, aliceToken)
	e2.ready(t, alice2)
	cmd = fmt.Sprintf("mkdir -p %[1]s/codecell && echo x > %[1]s/codecell/filter.key && echo PLANTED", xdg)
	rec = alice2.run(`(await evil.shell({cmd: `+jsString(cmd)+`}))`, "timeout_ms", 20000)
	if strings.Contains(string(rec.Result), "PLANTED") || !strings.Contains(string(rec.Result), "Permission denied") {
		t.Errorf("a confined server planted a filter key in $XDG_DATA_HOME/codecell: %.600s", rec.raw)
	}
}

// tcpToUnix forwards TCP connections on 127.0.0.1 to a Unix socket: a
// PostgreSQL server as it listens on loopback. stop closes it and every
// connection, as a restart of the database does.
type tcpToUnix struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func forwardTCP(t *testing.T, addr, sock string) *tcpToUnix {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	f := &tcpToUnix{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("unix", sock)
			if err != nil {
				c.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, c, u)
			f.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
	t.Cleanup(f.stop)
	return f
}

func (f *tcpToUnix) stop() {
	f.ln.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

// TestUpstreamSquatsThePostgresPort (issue 19, attack29 T3): with the
// store in a PostgreSQL on loopback (memory.dsn, here CODECELL_MEMORY_DSN),
// a confined server bound the database's port while it restarted, and
// codecell's pool, reconnecting, sent it the DSN's password. memory.dsn's
// loopback ports are among those a confined server may not bind.
func TestUpstreamSquatsThePostgresPort(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	srv, err := pgserver.Start(ctx)
	cancel()
	if err != nil {
		t.Skipf("PostgreSQL: %v", err)
	}
	t.Cleanup(srv.Stop)
	dsn0, err := srv.CreateDatabase(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(dsn0)
	sock := filepath.Join(u.Query().Get("host"), ".s.PGSQL.5432")
	fw := forwardTCP(t, "127.0.0.1:0", sock)
	port := fw.ln.Addr().(*net.TCPAddr).Port
	// The keyword form, with a remote host first: every host is parsed.
	dsn := fmt.Sprintf("host=db.invalid,127.0.0.1 port=5432,%d user=postgres password=Pg-S3cret-pass-7a6b5c4d dbname=%s sslmode=disable connect_timeout=2", port, strings.TrimPrefix(u.Path, "/"))
	e := startEvil(t, "", nil, "CODECELL_MEMORY_BACKEND=postgres", "CODECELL_MEMORY_DSN="+dsn)
	alice := e.open(t, aliceToken)
	e.ready(t, alice)
	if !strings.Contains(e.stderr.String(), "stdio upstream servers run confined") {
		t.Skipf("stdio upstreams do not run confined here:\n%s", e.stderr.String())
	}
	if rec := alice.run(`await memory.remember({content: "before the restart"}); 1`); rec.Status != "ok" {
		t.Fatalf("remember: %s\n%s", rec.raw, e.stderr.String())
	}
	fw.stop() // the database restarts
	rec := alice.run(fmt.Sprintf(`(await evil.squat({port: %d})).err`, port), "timeout_ms", 20000)
	if strings.Contains(e.stderr.String(), "cannot deny binding") {
		t.Skipf("this kernel's Landlock cannot deny the port, and codecell said so: %s", rec.raw)
	}
	if !strings.Contains(string(rec.Result), "permission denied") {
		t.Fatalf("the confined upstream listened on the database's port %d: %.300s\n%s", port, rec.raw, e.stderr.String())
	}
	// The port stays the database's: it comes back, and the store with it
	// (once the pool has dropped the connections the restart closed).
	forwardTCP(t, fmt.Sprintf("127.0.0.1:%d", port), sock)
	var after record
	for range 5 {
		if after = alice.run(`await memory.remember({content: "after the restart"}); 1`, "timeout_ms", 20000); after.Status == "ok" {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if after.Status != "ok" {
		t.Errorf("remember after the restart: %.300s", after.raw)
	}
}
