package main

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/postgres/pgserver"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/tools"
)

// postgresDatabase starts a throwaway PostgreSQL server for the test and
// returns the DSN of a fresh database on it. It skips the test when the
// machine has no PostgreSQL binaries.
func postgresDatabase(t *testing.T) (*pgserver.Server, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	srv, err := pgserver.Start(ctx)
	if errors.Is(err, pgserver.ErrNoPostgres) {
		t.Skipf("needs PostgreSQL's binaries: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	dsn, err := srv.CreateDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return srv, dsn
}

// TestServePostgres: a server with memory.backend = "postgres" serves a
// program that remembers, recalls and writes a workspace file; after a
// restart, another program finds both.
func TestServePostgres(t *testing.T) {
	_, dsn := postgresDatabase(t)
	t.Setenv("CODECELL_MEMORY_BACKEND", "postgres")
	t.Setenv("CODECELL_MEMORY_DSN", dsn)

	run := func(code string) map[string]any {
		t.Helper()
		cmd, base, _ := startHTTP(t)
		c, err := client.NewStreamableHttpClient(base + "/mcp")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		initialize(t, c)
		isErr, rec, txt := callExecute(t, c, map[string]any{"code": code})
		c.Close()
		if isErr {
			t.Fatalf("program failed: %s", txt)
		}
		var out map[string]any
		if err := json.Unmarshal(rec.Result, &out); err != nil {
			t.Fatalf("result %s: %v", rec.Result, err)
		}
		// Stop it as an operator would, and wait: the next server must
		// find what this one stored.
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("server exited with %v", err)
		}
		return out
	}

	first := run(`
		await memory.remember({content: "The deploy key of the billing service rotates every Friday", tags: ["ops"]});
		await workspace.write("notes/rotation.md", "rotate on Fridays");
		const r = await memory.recall({query: "when does the billing deploy key rotate"});
		return {hits: r.results.map(h => h.content), file: (await workspace.read("notes/rotation.md")).data};`)
	if hits, _ := first["hits"].([]any); len(hits) == 0 || !strings.Contains(hits[0].(string), "rotates every Friday") {
		t.Errorf("recall in the first run: %v", first)
	}
	if first["file"] != "rotate on Fridays" {
		t.Errorf("workspace read in the first run: %v", first)
	}

	again := run(`
		const r = await memory.recall({query: "billing deploy key rotation", limit: 3});
		return {hits: r.results.map(h => h.content), file: (await workspace.read("notes/rotation.md")).data};`)
	if hits, _ := again["hits"].([]any); len(hits) != 1 || !strings.Contains(hits[0].(string), "rotates every Friday") {
		t.Errorf("recall after the restart: %v", again)
	}
	if again["file"] != "rotate on Fridays" {
		t.Errorf("workspace read after the restart: %v", again)
	}
}

// TestMemoryMigrate: codecell memory migrate copies a SQLite store into
// PostgreSQL and says it verified; a second run is refused, appending
// adds nothing, and the memory commands then read the copy.
func TestMemoryMigrate(t *testing.T) {
	srv, dsn := postgresDatabase(t)
	data := t.TempDir()
	path := filepath.Join(data, "codecell.db")
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	local := tools.WithCaller(t.Context(), tools.Caller{Principal: "local"})
	for _, c := range []string{"Invoices are exported to the finance share on the first of the month", "The VPN gateway is vpn.internal"} {
		if _, err := st.Remember(local, memory.RememberInput{Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := st.WriteFile(local, "todo.txt", []byte("migrate")); err != nil {
		t.Fatal(err)
	}
	st.Close()

	codecell := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(cmd.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	sqliteEnv := []string{"CODECELL_SERVER_DATA_DIR=" + data}
	out, err := codecell(sqliteEnv, "memory", "migrate", "--to", "postgres", "--dsn", dsn)
	if err != nil || !strings.Contains(out, "verified: every table copied") {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	if strings.Contains(out, dsn) {
		t.Errorf("the output shows the DSN:\n%s", out)
	}
	for _, want := range []string{"memories", "workspace_files", "memory_vectors"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report does not list %s:\n%s", want, out)
		}
	}
	out, err = codecell(sqliteEnv, "memory", "migrate", "--to", "postgres", "--dsn", dsn)
	if err == nil || !strings.Contains(out, "already holds data") {
		t.Errorf("second migrate into a full target: %v\n%s", err, out)
	}
	out, err = codecell(sqliteEnv, "memory", "migrate", "--to", "postgres", "--dsn", dsn, "--from", path, "--append", "--json")
	if err != nil {
		t.Fatalf("migrate --append: %v\n%s", err, out)
	}
	var rep struct {
		Tables []struct {
			Table    string
			Inserted int64
			Kept     int64
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("migrate --json: %v\n%s", err, out)
	}
	for _, tc := range rep.Tables {
		if tc.Inserted != 0 {
			t.Errorf("append again inserted %d rows into %s", tc.Inserted, tc.Table)
		}
	}

	pgEnv := []string{"CODECELL_MEMORY_BACKEND=postgres", "CODECELL_MEMORY_DSN=" + dsn}
	out, err = codecell(pgEnv, "memory", "search", "--json", "when are invoices exported")
	if err != nil || !strings.Contains(out, "finance share") {
		t.Errorf("memory search on PostgreSQL after the migration: %v\n%s", err, out)
	}
	// What the PostgreSQL store cannot do yet is said, not failed on.
	out, err = codecell(pgEnv, "memory", "stats")
	if err != nil && !strings.Contains(out, "the postgres store cannot do this yet") {
		t.Errorf("memory stats on PostgreSQL: %v\n%s", err, out)
	}
	// A database without codecell's schema is no store for a reader.
	empty, err := srv.CreateDatabase(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out, err = codecell([]string{"CODECELL_MEMORY_BACKEND=postgres", "CODECELL_MEMORY_DSN=" + empty}, "memory", "search", "x")
	if err == nil || !strings.Contains(out, "holds no codecell schema") {
		t.Errorf("memory search on an empty database: %v\n%s", err, out)
	}
}
