package security

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreReadsHeld (issue 19, attack18 K8): a store tool holds each row
// it reads in its call's results in flight before it reads the next,
// and stops at the bound. The registry held a result only once the
// handler had read every row and built it: bob's 500 tasks with 14 KB of
// metadata each (7,000 numbers), listed by 32 task_list({limit: 500})
// at once in one run, were every one refused result_bytes_limit — after
// the cost: the server grew from 207 to 856 MiB. They are refused now
// having read a few rows each, naming the limit, and an ordinary listing
// still answers.
func TestStoreReadsHeld(t *testing.T) {
	t.Parallel()
	s := start(t)
	bob := s.open(t, bobToken)
	for range 5 { // a run of 500 task_add took more than 60 s under load
		if rec := bob.run(`const z = new Array(7000).fill(0); const ps = [];
for (let i = 0; i < 100; i++) ps.push(memory.task_add({content: "task " + i, metadata: {z}}));
await Promise.all(ps); return 1`, "timeout_ms", 60000); rec.Status != "ok" {
			t.Fatalf("100 tasks: %.400s", rec.raw)
		}
	}
	pid := s.cmd.Process.Pid
	before := peakRSS(pid)
	if before < 0 {
		t.Skip("no VmHWM in /proc/<pid>/status to measure memory")
	}
	rec := bob.run(`const ps = []; for (let i = 0; i < 32; i++) ps.push(memory.task_list({limit: 500}).then(r => "listed " + r.tasks.length, e => e.message));
return await Promise.all(ps)`, "timeout_ms", 60000)
	after := peakRSS(pid)
	t.Logf("32 task_list of 500 tasks of 7,000 values at once: %s, peak RSS %d → %d MiB (load %s)", rec.Status, before>>20, after>>20, loadAverage())
	var answers []string
	if rec.Status != "ok" || json.Unmarshal(rec.Result, &answers) != nil || len(answers) != 32 {
		t.Fatalf("the run: %.600s", rec.raw)
	}
	for _, a := range answers {
		if !strings.Contains(a, "limits.result_bytes_in_flight_per_run") {
			t.Errorf("one of 32 task_list: %.400s", a)
			break
		}
	}
	if grow := after - before; grow > 256<<20 {
		t.Errorf("32 task_list refused in the end grew the server by %d MiB", grow>>20)
	}
	if rec := bob.run(`(await memory.task_list({limit: 5})).tasks.length`); rec.Status != "ok" || string(rec.Result) != "5" {
		t.Errorf("an ordinary task_list: %.400s", rec.raw)
	}
	bob.normal()
}

// TestMemoHitsHeld (issue 19, attack18 K9): a memoised hit is held in its
// call's results in flight — its bound before it is read from the store,
// then what it holds — as the same call made is. Answered before the
// results in flight and outside the registry, 32 hits at once of a 3.9
// MB workspace.read grew the server by 236–279 MiB, against 62–65 MiB for
// the same reads made.
func TestMemoHitsHeld(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte("[cache.memoize]\n\"workspace.read\" = \"1h\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, "--config", cfg)
	bob := s.open(t, bobToken)
	const reads = `const ps = []; for (let k = 0; k < 4; k++) for (let i = 0; i < 8; i++) ps.push(workspace.read({path: "f" + i + ".txt"}).then(r => r.data.length, e => e.code));
return (await Promise.all(ps)).join(",").slice(0, 80)`
	if rec := bob.run(`const s = "y".repeat(3900000); for (let i = 0; i < 8; i++) await workspace.write({path: "f" + i + ".txt", data: s}); return 1`, "timeout_ms", 60000); rec.Status != "ok" {
		t.Fatalf("eight files: %.400s", rec.raw)
	}
	if rec := bob.run(reads, "timeout_ms", 60000); rec.Status != "ok" { // fills the memo
		t.Fatalf("the first reads: %.400s", rec.raw)
	}
	pid := s.cmd.Process.Pid
	before := peakRSS(pid)
	if before < 0 {
		t.Skip("no VmHWM in /proc/<pid>/status to measure memory")
	}
	for range 3 {
		rec := bob.run(reads, "timeout_ms", 60000)
		if rec.Status != "ok" || !strings.HasPrefix(string(rec.Result), `"3900000,3900000,`) || !strings.Contains(rec.raw, `"cached":32`) {
			t.Fatalf("32 memoised reads: %.600s", rec.raw)
		}
	}
	after := peakRSS(pid)
	t.Logf("3 × 32 memoised reads of 3.9 MB at once: peak RSS %d → %d MiB (load %s)", before>>20, after>>20, loadAverage())
	if grow := after - before; grow > 160<<20 {
		t.Errorf("32 memoised reads of 3.9 MB at once grew the server by %d MiB", grow>>20)
	}
	bob.normal()
}
