package executor

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// newTransformExecutor returns an in-process executor whose programs are
// parsed by warm transform processes of this test binary (TestMain in
// main_test.go serves "sandbox-worker transform"), once its pool has all
// of them idle.
func newTransformExecutor(tb testing.TB, cfg Config) *Executor {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Isolation = IsolationInProcess
	cfg.TransformCommand = []string{exe, "sandbox-worker", "transform"}
	e, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	waitTransforms(tb, e.transforms, e.cfg.TransformProcesses)
	return e
}

// waitTransforms waits until the pool has exactly n processes, all idle:
// no process started for one parse, or killed, is left.
func waitTransforms(tb testing.TB, p *transformPool, n int) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		p.mu.Lock()
		idle, all := len(p.idle), len(p.procs)
		p.mu.Unlock()
		if idle == n && all == n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the transform pool has %d processes, %d idle; want %d, all idle", all, idle, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// idlePids returns the pids of the idle transform processes.
func idlePids(p *transformPool) map[int]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	pids := map[int]bool{}
	for _, t := range p.idle {
		pids[t.cmd.Process.Pid] = true
	}
	return pids
}

func runTS(tb testing.TB, e *Executor, code string, timeout time.Duration) *Result {
	tb.Helper()
	return e.Run(context.Background(), Request{Code: code, Language: TypeScript, Timeout: timeout})
}

func wantValue(tb testing.TB, res *Result, want string) {
	tb.Helper()
	if res.Error != nil || string(res.Value) != want {
		tb.Fatalf("got %s, error %+v; want %s", res.Value, res.Error, want)
	}
}

const typed = "const x: number = 1 + 1; return x"

// TestTransformReused: TypeScript runs one after another are parsed by
// the same warm process, which the pool keeps.
func TestTransformReused(t *testing.T) {
	t.Parallel()
	e := newTransformExecutor(t, Config{PoolSize: 1, TransformProcesses: 1})
	before := idlePids(e.transforms)
	for range 5 {
		wantValue(t, runTS(t, e, typed, 0), "2")
	}
	if after := idlePids(e.transforms); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("idle transform processes %v after five runs, want the same as before, %v", after, before)
	}
	if got := e.Stats().TransformsReady; got != 1 {
		t.Errorf("Stats().TransformsReady = %d, want 1", got)
	}
}

// TestTransformDeadlineKills: a parse that passes its run's deadline (a
// run of "a<", quadratic in esbuild's TypeScript parser) kills its
// process; the next run is parsed, normally, by a fresh one, and the
// pool keeps its size.
func TestTransformDeadlineKills(t *testing.T) {
	t.Parallel()
	e := newTransformExecutor(t, Config{PoolSize: 1, TransformProcesses: 1, QueueWait: time.Minute})
	first := idlePids(e.transforms)
	res := runTS(t, e, strings.Repeat("a<", 50000), 500*time.Millisecond)
	if res.Error == nil || res.Error.Kind != KindTimeout {
		t.Fatalf("a run of a<: %+v, want a timeout", res.Error)
	}
	waitTransforms(t, e.transforms, 1)
	for pid := range idlePids(e.transforms) {
		if first[pid] {
			t.Fatalf("transform process %d outlived the deadline of its parse", pid)
		}
	}
	second := idlePids(e.transforms)
	wantValue(t, runTS(t, e, typed, 0), "2")
	if got := idlePids(e.transforms); fmt.Sprint(got) != fmt.Sprint(second) {
		t.Errorf("the run after the timeout was parsed by %v, want the fresh process %v", got, second)
	}
}

// TestTransformCrash: a process that dies mid-parse — its stack
// overflowing on deep nesting, or killed from outside — fails that parse
// only; the pool replaces it and the next run parses normally.
func TestTransformCrash(t *testing.T) {
	t.Parallel()
	e := newTransformExecutor(t, Config{PoolSize: 1, TransformProcesses: 1, QueueWait: time.Minute})
	t.Run("stack", func(t *testing.T) {
		first := idlePids(e.transforms)
		res := runTS(t, e, strings.Repeat("[", 100<<10), 0)
		if res.Error == nil || res.Error.Kind != KindSyntax || !strings.Contains(res.Error.Message, "nests too deeply") {
			t.Fatalf("100 KiB of [: %+v, want a syntax error about nesting", res.Error)
		}
		waitTransforms(t, e.transforms, 1)
		for pid := range idlePids(e.transforms) {
			if first[pid] {
				t.Fatalf("transform process %d survived its crash", pid)
			}
		}
		wantValue(t, runTS(t, e, typed, 0), "2")
	})
	t.Run("killed", func(t *testing.T) {
		pid := 0
		for p := range idlePids(e.transforms) {
			pid = p
		}
		if pid <= 0 {
			t.Fatal("no idle transform process")
		}
		done := make(chan *Result, 1)
		go func() { done <- runTS(t, e, strings.Repeat("a<", 50000), time.Minute) }()
		// Wait until the process is parsing — it has used 50 ms of CPU
		// since it was idle — then kill it. (Killed before the program
		// reached it, the parse would go to another process.)
		idle := cpuTicks(t, pid)
		for cpuTicks(t, pid) < idle+5 {
			time.Sleep(time.Millisecond)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		res := <-done
		if res.Error == nil || res.Error.Kind != KindInternal || !strings.Contains(res.Error.Message, "transform process failed") {
			t.Fatalf("a parse whose process was killed: %+v, want an internal error", res.Error)
		}
		waitTransforms(t, e.transforms, 1)
		wantValue(t, runTS(t, e, typed, 0), "2")
	})
}

// TestTransformDiedIdle: a warm process that died while idle (killed
// from outside) costs no run: the parse goes to another.
func TestTransformDiedIdle(t *testing.T) {
	t.Parallel()
	e := newTransformExecutor(t, Config{PoolSize: 1, TransformProcesses: 1})
	for range 3 {
		pid := 0
		for p := range idlePids(e.transforms) {
			pid = p
		}
		if pid <= 0 {
			t.Fatal("no idle transform process")
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// Reaped, so that all its threads are gone and its pipes closed
		// (a zombie leader may still have threads holding them), and the
		// pool either knows it exited or will find its pipe closed.
		for {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
				break
			}
			time.Sleep(time.Millisecond)
		}
		wantValue(t, runTS(t, e, typed, 0), "2")
		waitTransforms(t, e.transforms, 1)
	}
}

// cpuTicks returns the CPU time process pid has used, in clock ticks.
func cpuTicks(tb testing.TB, pid int) int {
	tb.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// After the command's closing parenthesis: state ppid ... utime
	// (field 14) stime (field 15).
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	return ut + st
}

// TestTransformManyAtOnce: many TypeScript runs and checks at once, more
// than the pool has processes, each get their own program's result; the
// processes started for parses that found none idle are ended after, and
// the pool keeps its size.
func TestTransformManyAtOnce(t *testing.T) {
	t.Parallel()
	e := newTransformExecutor(t, Config{PoolSize: 4, TransformProcesses: 2, QueueWait: time.Minute})
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			res := e.Run(t.Context(), Request{Code: fmt.Sprintf("const n: number = %d; return n", i), Language: TypeScript, Timeout: 30 * time.Second})
			if res.Error != nil || string(res.Value) != fmt.Sprint(i) {
				t.Errorf("run %d: %s, %+v", i, res.Value, res.Error)
			}
		}()
		go func() {
			defer wg.Done()
			if err := e.Check(t.Context(), fmt.Sprintf("let s%d: string = ;", i), TypeScript); err == nil || err.Kind != KindSyntax || err.Line != 1 {
				t.Errorf("check %d: %+v, want a syntax error on line 1", i, err)
			}
		}()
	}
	wg.Wait()
	waitTransforms(t, e.transforms, 2)
}

// TestTransformRecycled: a process is replaced after transformReuse
// parses, or when it holds more than transformHeld after one, whatever
// it parsed; the pool keeps its size.
func TestTransformRecycled(t *testing.T) {
	t.Parallel()
	t.Run("parses", func(t *testing.T) {
		t.Parallel()
		e := newTransformExecutor(t, Config{PoolSize: 1, TransformProcesses: 1})
		e.transforms.reuse = 3
		first := idlePids(e.transforms)
		for range 2 {
			wantValue(t, runTS(t, e, typed, 0), "2")
		}
		if got := idlePids(e.transforms); fmt.Sprint(got) != fmt.Sprint(first) {
			t.Fatalf("replaced after 2 parses of 3: %v, was %v", got, first)
		}
		wantValue(t, runTS(t, e, typed, 0), "2")
		waitTransforms(t, e.transforms, 1)
		for pid := range idlePids(e.transforms) {
			if first[pid] {
				t.Fatalf("transform process %d kept after its third parse", pid)
			}
		}
	})
	t.Run("held", func(t *testing.T) {
		t.Parallel()
		e := newTransformExecutor(t, Config{PoolSize: 1, TransformProcesses: 1})
		first := idlePids(e.transforms)
		// 150,000 statements (2.2 MB) parse, and leave the process
		// holding over 100 MiB.
		if err := e.Check(t.Context(), strings.Repeat("x = [1, 2, 3];\n", 150000), TypeScript); err != nil {
			t.Fatalf("150,000 statements: %+v, want them parsed", err)
		}
		waitTransforms(t, e.transforms, 1)
		for pid := range idlePids(e.transforms) {
			if first[pid] {
				t.Fatalf("transform process %d kept holding more than %d MiB", pid, transformHeld>>20)
			}
		}
	})
}
