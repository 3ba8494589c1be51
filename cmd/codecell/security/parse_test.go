package security

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTypeScriptParseIsBounded (issue 19, attack9 D10): esbuild parsed
// programs in the server, before the run had a deadline or a slot: a
// TypeScript run of "a<" (quadratic in esbuild's parser) went on for
// minutes past a 5 s deadline, and 100 KiB of "[" grew the server by
// hundreds of MiB. The parse now runs in a transform process, killed at
// the run's deadline, with a bounded stack; skills.save's check too.
func TestTypeScriptParseIsBounded(t *testing.T) {
	t.Parallel()
	s := start(t, "--pool", "1")
	bob := s.open(t, bobToken)
	rec := bob.run(strings.Repeat("a<", 50000), "language", "typescript", "timeout_ms", 1000)
	if rec.Status != "error" || rec.Error == nil || rec.Error.Kind != "timeout" {
		t.Fatalf("a TypeScript run of a<: %.400s, want a timeout", rec.raw)
	}
	rec = bob.run(strings.Repeat("[", 100<<10), "language", "typescript")
	if rec.Error == nil || rec.Error.Kind != "syntax_error" || !strings.Contains(rec.Error.Message, "nests too deeply") {
		t.Fatalf("a TypeScript program of 100 KiB of [: %.400s", rec.raw)
	}
	rec = bob.run(`try { await skills.save({name: "deep", description: "d", code: "[".repeat(100 << 10), language: "typescript"}) } catch (e) { return e.message }`)
	if !strings.Contains(string(rec.Result), "nests too deeply") {
		t.Fatalf("skills.save of 100 KiB of [: %.400s", rec.raw)
	}
	s.open(t, aliceToken).normal()
}

// TestTransformProcessesWarm (issue 23): the transform processes are kept
// warm and reused, so they live across parses of different principals.
// Each stays confined as a one-parse process was (no_new_privs, its data
// bounded at 1 GiB, none of the server's environment), a hostile parse
// still ends at its run's deadline and kills its process, and the pool
// keeps its size (one with --pool 1) with a fresh process in its place.
func TestTransformProcessesWarm(t *testing.T) {
	t.Parallel()
	s := start(t, "--pool", "1")
	alice, bob := s.open(t, aliceToken), s.open(t, bobToken)
	ts := func(ss *session, code string) {
		t.Helper()
		if rec := ss.run(code, "language", "typescript"); rec.Status != "ok" || string(rec.Result) != "2" {
			t.Fatalf("a TypeScript run: %.400s", rec.raw)
		}
	}
	ts(alice, "const x: number = 1 + 1; return x")
	first := transformProcesses(t, s, 1)
	ts(bob, "const y: number = 2; return y")
	if again := transformProcesses(t, s, 1); again[0] != first[0] {
		t.Errorf("bob's program was parsed by transform process %d, not by the warm one, %d", again[0], first[0])
	}
	for _, pid := range first {
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if !strings.Contains(string(status), "\nNoNewPrivs:\t1") {
			t.Errorf("transform process %d runs without no_new_privs", pid)
		}
		limits, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
		if !regexp.MustCompile(`Max data size\s+1073741824\s+1073741824`).Match(limits) {
			t.Errorf("transform process %d's data is not bounded at 1 GiB:\n%s", pid, limits)
		}
		if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil {
			for _, secret := range []string{aliceToken, bobToken, "CODECELL_"} {
				if strings.Contains(string(env), secret) {
					t.Errorf("transform process %d's environment holds %q", pid, secret)
				}
			}
		}
	}
	rec := bob.run(strings.Repeat("a<", 50000), "language", "typescript", "timeout_ms", 1000)
	if rec.Error == nil || rec.Error.Kind != "timeout" {
		t.Fatalf("a TypeScript run of a<: %.400s, want a timeout", rec.raw)
	}
	fresh := transformProcesses(t, s, 1)
	if fresh[0] == first[0] {
		t.Fatalf("transform process %d outlived the deadline of bob's hostile parse", first[0])
	}
	ts(alice, "const x: number = 1 + 1; return x")
	if again := transformProcesses(t, s, 1); again[0] != fresh[0] {
		t.Errorf("alice's program was parsed by transform process %d, not by the fresh warm one, %d", again[0], fresh[0])
	}
}

// transformProcesses waits until the server has exactly n transform
// processes, confined (their command line is "sandbox-worker confined
// transform"), and returns their pids.
func transformProcesses(t *testing.T, s *server, n int) []int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var pids []int
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err != nil {
				continue
			}
			f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			if len(f) < 2 || f[1] != strconv.Itoa(s.cmd.Process.Pid) || f[0] == "Z" {
				continue
			}
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if strings.Contains(string(cmdline), "sandbox-worker\x00confined\x00transform") {
				pids = append(pids, pid)
			} else if strings.Contains(string(cmdline), "transform") {
				pids = append(pids, -pid) // not confined yet, or not a transform process of ours
			}
		}
		if len(pids) == n && !slices.ContainsFunc(pids, func(p int) bool { return p < 0 }) {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server has transform processes %v (negative: not confined yet), want %d", pids, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
