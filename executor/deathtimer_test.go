//go:build linux

package executor

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// stuckSrc stays inside one built-in for longer than any test runs:
// QuickJS never polls for an interrupt there.
const stuckSrc = "Array.prototype.indexOf.call({length: 2 ** 53 - 1}, 1)"

// workerProc is a sandbox worker process that a test speaks the
// protocol to itself: nothing else kills it.
type workerProc struct {
	cmd *exec.Cmd
	w   *frameWriter
	r   *frameReader
	// exited is closed once the process is reaped; state is how it ended.
	exited chan struct{}
	state  *os.ProcessState
}

// workerArgv is the command that starts a sandbox worker: this test
// binary (see TestMain), or the built codecell binary named by
// CODECELL_WORKER_BINARY, whose workers confine themselves.
func workerArgv(t *testing.T) []string {
	t.Helper()
	if bin := os.Getenv("CODECELL_WORKER_BINARY"); bin != "" {
		return []string{bin, "sandbox-worker"}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, "sandbox-worker"}
}

// startWorkerProc starts a sandbox worker and reads its hello.
func startWorkerProc(t *testing.T) *workerProc {
	t.Helper()
	argv := workerArgv(t)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &workerProc{cmd: cmd, w: newFrameWriter(stdin), r: newFrameReader(stdout), exited: make(chan struct{})}
	go func() {
		// Wait closes stdout only after the process is gone; a frame
		// read meanwhile is the test's.
		p.state, _ = cmd.Process.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
		stdin.Close()
		stdout.Close()
	})
	if f, err := p.r.read(); err != nil || f.typ != frameHello || string(f.body) != workerMagic {
		t.Fatalf("hello: %+v, %v", f, err)
	}
	if err := p.w.write(frameLayout, 0, enc(nil).u32(emptyLayout.id), []byte(emptyLayout.json)); err != nil {
		t.Fatal(err)
	}
	return p
}

// run sends a root job that the worker is to be dead by killAt if it
// has not ended.
func (p *workerProc) run(t *testing.T, job uint32, src string, killAt int64) {
	t.Helper()
	spec := &jobSpec{Src: src, Layout: emptyLayout, Memory: 64 << 20, Stack: 1000, MaxCalls: 10,
		MaxLogLines: 10, MaxLogBytes: 1 << 10, MaxResult: 1 << 20, Timeout: time.Minute, KillAt: killAt}
	if err := p.w.write(frameRun, job, encodeSpec(spec, emptyLayout.id), nil); err != nil {
		t.Fatal(err)
	}
}

// outcome reads frames up to job's outcome.
func (p *workerProc) outcome(t *testing.T, job uint32) outcome {
	t.Helper()
	for {
		f, err := p.r.read()
		if err != nil {
			t.Fatalf("read the outcome of job %d: %v", job, err)
		}
		if f.typ == frameDone && f.job == job {
			o, err := decodeOutcome(f.body)
			if err != nil {
				t.Fatal(err)
			}
			return o
		}
	}
}

// TestWorkerDiesByItself: a worker whose root job is stuck inside a
// built-in, which no interrupt reaches, kills itself at the time the
// executor gave it (jobSpec.KillAt), though nothing kills it from
// outside: a server whose own timers run late, or that is stuck, cannot
// leave a worker running.
func TestWorkerDiesByItself(t *testing.T) {
	t.Parallel()
	p := startWorkerProc(t)
	killAt := monotonicAt(time.Now().Add(300 * time.Millisecond))
	p.run(t, 1, stuckSrc, killAt)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker still runs 30 s after the time it was to be dead by")
	}
	if got := monotonicAt(time.Now()); got < killAt {
		t.Errorf("the worker died %s before its time", time.Duration(killAt-got))
	}
	ws, ok := p.state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the worker ended with %v, want killed by SIGKILL", p.state)
	}
	for {
		f, err := p.r.read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || f.typ == frameDone {
			t.Fatalf("frame %+v, %v; want no outcome, and the end of the worker's output", f, err)
		}
	}
}

// TestWorkerOutlivesItsRunsTime: a root job that ends disarms the
// worker's timer: the worker still serves after the time the job's VM
// would have been given up.
func TestWorkerOutlivesItsRunsTime(t *testing.T) {
	t.Parallel()
	p := startWorkerProc(t)
	killAt := monotonicAt(time.Now().Add(100 * time.Millisecond))
	p.run(t, 1, "1 + 1", killAt)
	if o := p.outcome(t, 1); o.status != outValue || string(o.payload) != "2" {
		t.Fatalf("outcome %+v, want the value 2", o)
	}
	for monotonicAt(time.Now()) < killAt+int64(50*time.Millisecond) {
		time.Sleep(10 * time.Millisecond)
	}
	p.run(t, 2, "2 + 2", 0)
	if o := p.outcome(t, 2); o.status != outValue || string(o.payload) != "4" {
		t.Fatalf("outcome %+v, want the value 4", o)
	}
	select {
	case <-p.exited:
		t.Fatalf("the worker exited: %v", p.state)
	default:
	}
}

// TestSelfKilledWorkerTimesOut: when a worker's output ends because it
// killed itself at its root run's time, the executor ends the run as
// timed out at once, whatever its own timers do, and does not report
// the worker's death as a fault. The run here is started without the
// executor's own alarm or timers, as a late server would have them.
func TestSelfKilledWorkerTimesOut(t *testing.T) {
	t.Parallel()
	pool := newProcPool(1, 0, workerArgv(t), 64<<20, slog.New(slog.DiscardHandler))
	t.Cleanup(pool.close)
	w, fail := pool.get(t.Context())
	if fail != nil {
		t.Fatal(fail)
	}
	r := &Run{sb: w, deadline: time.Now().Add(100 * time.Millisecond), done: make(chan struct{}), stopped: make(chan struct{})}
	spec := &jobSpec{Src: stuckSrc, Layout: emptyLayout, Memory: 64 << 20, Stack: 1000, MaxCalls: 10,
		MaxLogLines: 10, MaxLogBytes: 1 << 10, MaxResult: 1 << 20, Timeout: time.Minute,
		KillAt: monotonicAt(r.deadline.Add(killGrace))}
	// What start does, without arming the executor's alarm.
	w.mu.Lock()
	w.handOff()
	w.next++
	r.job = w.next
	w.lastRoot.Store(int64(r.job))
	w.jobs[r.job] = r
	err := w.w.write(frameRun, r.job, encodeSpec(spec, emptyLayout.id), nil)
	w.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the run has not ended 30 s after its deadline")
	}
	if !r.pastKill() {
		t.Error("the run ended before its time")
	}
	if r.out.status != outLimit || r.out.kind != KindTimeout {
		t.Errorf("outcome %+v, want a timeout", r.out)
	}
	if !w.killed.Load() {
		t.Error("the worker's death is taken for a fault")
	}
	pool.giveBack(w)
	w2, fail := pool.get(t.Context())
	if fail != nil {
		t.Fatal(fail)
	}
	if w2 == w {
		t.Error("the dead worker was given out again")
	}
	pool.giveBack(w2)
}
