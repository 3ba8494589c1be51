package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/tools"
)

// memoryCmd runs `codecell memory args...` in-process against the store
// in dir and returns its stdout and stderr.
func memoryCmd(t *testing.T, dir string, args ...string) (string, string, error) {
	t.Helper()
	args = append([]string{args[0], "-data-dir", dir}, args[1:]...)
	var out, errb bytes.Buffer
	err := runMemory(t.Context(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), err
}

// fillStore stores memories, an entity and a skill in the store in dir,
// as a server would.
func fillStore(t *testing.T, dir string) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(dir, "codecell.db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := tools.WithCaller(t.Context(), tools.Caller{Principal: "local", Session: "s1"})
	for _, c := range []string{"The staging database moved to Frankfurt in March", "Lunch is at noon"} {
		if _, err := st.Remember(ctx, memory.RememberInput{Content: c, Entities: []string{"office"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.SaveSkill(ctx, memory.Skill{Name: "hello", Description: "Say hello.", Code: "return 'hi'"}); err != nil {
		t.Fatal(err)
	}
}

// TestMemoryExportImportCommands is docs/memory.md's backup example, `codecell
// memory export backup.jsonl && codecell memory import backup.jsonl`: the
// import into the same store skips everything and says so; into another
// store it imports everything once.
func TestMemoryExportImportCommands(t *testing.T) {
	data, other := t.TempDir(), t.TempDir()
	fillStore(t, data)
	backup := filepath.Join(t.TempDir(), "backup.jsonl")
	_, stderr, err := memoryCmd(t, data, "export", backup)
	if err != nil {
		t.Fatal(err)
	}
	if want := "exported 2 memories, 1 entity, 1 skill\n"; stderr != want {
		t.Fatalf("export said %q, want %q", stderr, want)
	}
	if b, _ := os.ReadFile(backup); strings.Contains(string(b), "0001-01-01") || strings.Count(string(b), `"exported"`) != 1 {
		t.Fatalf("the export carries zero times:\n%s", b)
	}
	for i, c := range []struct {
		dir, want string
	}{
		{data, "imported nothing; skipped 4 already present\n"},
		{other, "imported 2 memories, 1 entity, 1 skill\n"},
		{other, "imported nothing; skipped 4 already present\n"},
	} {
		out, _, err := memoryCmd(t, c.dir, "import", backup)
		if err != nil || out != c.want {
			t.Fatalf("import %d said %q (%v), want %q", i, out, err, c.want)
		}
	}
	out, _, err := memoryCmd(t, data, "stats")
	if err != nil || !regexp.MustCompile(`(?m)^memories\s+2\s`).MatchString(out) {
		t.Fatalf("stats after importing into the same store: %v\n%s", err, out)
	}
	out, _, err = memoryCmd(t, other, "search", "-json", "staging database")
	if err != nil || !strings.Contains(out, "Frankfurt") {
		t.Fatalf("search after import: %v\n%s", err, out)
	}
}

// TestMemoryReadOnlyCommands: stats, search and export only read. Without
// a store they say where they looked and fail, creating nothing; with one
// they leave it as it was. stats counts the principals of the audit log.
func TestMemoryReadOnlyCommands(t *testing.T) {
	empty := t.TempDir()
	for _, cmd := range [][]string{{"stats"}, {"search", "anything"}, {"export"}} {
		_, _, err := memoryCmd(t, empty, cmd...)
		want := "no store at " + filepath.Join(empty, "codecell.db")
		if err == nil || !strings.Contains(err.Error(), want) || exitCode(err, io.Discard) != 1 {
			t.Errorf("%s without a store: %v (exit %d), want an error naming %s", cmd[0], err, exitCode(err, io.Discard), want)
		}
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Fatalf("read-only commands created %v", ents)
	}

	data := t.TempDir()
	fillStore(t, data)
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(data, "codecell.db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.RecordExecution(t.Context(), memory.Execution{ID: "e1", Principal: "bob", Status: "ok"})
	st.Close()
	db := filepath.Join(data, "codecell.db")
	before, _ := os.ReadFile(db)
	out, _, err := memoryCmd(t, data, "stats")
	if err != nil || !regexp.MustCompile(`(?m)^principals\s+2$`).MatchString(out) || !regexp.MustCompile(`(?m)^executions, tool calls\s+1, 0$`).MatchString(out) {
		t.Fatalf("stats: %v\n%s", err, out)
	}
	if _, _, err := memoryCmd(t, data, "search", "staging"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := memoryCmd(t, data, "export", filepath.Join(t.TempDir(), "b.jsonl")); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
		t.Fatal("read-only commands changed the database")
	}
}

// TestMemoryHelp: help asked for goes to stdout and is no error.
func TestMemoryHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"stats", "--help"}, {"search", "-h"}} {
		var out, errb bytes.Buffer
		err := run(t.Context(), append([]string{"memory"}, args...), strings.NewReader(""), &out, &errb)
		if err != nil || !strings.Contains(out.String(), "Usage: codecell memory") || errb.Len() != 0 {
			t.Errorf("memory %v: %v\nstdout: %s\nstderr: %s", args, err, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if err := runMemory(t.Context(), []string{"frobnicate"}, strings.NewReader(""), &out, &errb); exitCode(err, io.Discard) != 2 {
		t.Errorf("an unknown command: %v", err)
	}
}
