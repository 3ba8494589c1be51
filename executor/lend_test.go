//go:build linux

package executor

import (
	"testing"
	"time"
)

// call reads frames up to job's next tool call and returns its id and
// flags.
func (p *workerProc) call(t *testing.T, job uint32) (id uint32, flags uint8) {
	t.Helper()
	for {
		f, err := p.r.read()
		if err != nil {
			t.Fatalf("read a call of job %d: %v", job, err)
		}
		if f.typ == frameDone {
			o, _ := decodeOutcome(f.body)
			t.Fatalf("job %d ended (%+v), want a call", f.job, o)
		}
		if f.typ == frameCall && f.job == job {
			d := dec{b: f.body}
			id, flags = d.u32(), d.u8()
			if d.err != nil {
				t.Fatalf("call frame: %v", d.err)
			}
			return id, flags
		}
	}
}

// answer sends the result of call, a JSON value.
func (p *workerProc) answer(t *testing.T, job, call uint32, result string) {
	t.Helper()
	if err := p.w.write(frameResult, job, enc(nil).u32(call).bool(true), []byte(result)); err != nil {
		t.Fatal(err)
	}
}

// outcomeWithin is outcome, failing the test when the job's outcome has
// not come within d.
func (p *workerProc) outcomeWithin(t *testing.T, job uint32, d time.Duration) outcome {
	t.Helper()
	got := make(chan outcome, 1)
	go func() {
		for {
			f, err := p.r.read()
			if err != nil {
				close(got)
				return
			}
			if f.typ == frameDone && f.job == job {
				o, _ := decodeOutcome(f.body)
				got <- o
				return
			}
		}
	}()
	select {
	case o, ok := <-got:
		if !ok {
			t.Fatalf("the worker's output ended before job %d's outcome", job)
		}
		return o
	case <-time.After(d):
		t.Fatalf("no outcome of job %d within %s", job, d)
	}
	return outcome{}
}

// TestSoleCallsRunOnTheReader: a program that awaits its calls one by
// one gets each result, and the VM that ran on between them on the
// worker's frame reader (vmJob.resume) hands the job back at its end:
// its outcome comes, and the worker reads and runs the next job.
func TestSoleCallsRunOnTheReader(t *testing.T) {
	t.Parallel()
	p := startWorkerProc(t)
	p.run(t, 1, `let n = 0;
for (let i = 0; i < 5; i++) n += (await tools.call("util.echo", {i})).v;
const [a, b] = await Promise.all([tools.call("util.echo", {}), tools.call("util.echo", {})]);
return n + a.v + b.v + (await tools.call("util.echo", {})).v`, 0)
	for i := range 5 {
		id, flags := p.call(t, 1)
		if flags != callSole {
			t.Errorf("call %d: flags %d, want callSole", i, flags)
		}
		p.answer(t, 1, id, `{"v": 1}`)
	}
	// Two calls at once: neither is sole, and the job's own goroutine
	// waits for them.
	for range 2 {
		id, flags := p.call(t, 1)
		if flags == callSole {
			t.Error("a call of two in flight is flagged callSole")
		}
		p.answer(t, 1, id, `{"v": 10}`)
	}
	id, flags := p.call(t, 1)
	if flags != callSole {
		t.Errorf("the last call: flags %d, want callSole", flags)
	}
	p.answer(t, 1, id, `{"v": 100}`)
	if o := p.outcomeWithin(t, 1, 30*time.Second); o.status != outValue || string(o.payload) != "125" {
		t.Fatalf("outcome %+v, want the value 125", o)
	}
	p.run(t, 2, "2 + 2", 0)
	if o := p.outcomeWithin(t, 2, 30*time.Second); o.status != outValue || string(o.payload) != "4" {
		t.Fatalf("outcome %+v, want the value 4", o)
	}
}

// TestInterruptReachesALentJob: a job whose VM waits for one call alone
// has lent its turn to the frame reader; an interrupt that comes instead
// of the result takes the turn back, and the job ends as stopped — its
// goroutine does not wait for a result that will never come.
func TestInterruptReachesALentJob(t *testing.T) {
	t.Parallel()
	p := startWorkerProc(t)
	p.run(t, 1, `await tools.call("util.echo", {}); return 1`, 0)
	if _, flags := p.call(t, 1); flags != callSole {
		t.Fatalf("flags %d, want callSole", flags)
	}
	if err := p.w.write(frameInterrupt, 1, nil, nil); err != nil {
		t.Fatal(err)
	}
	if o := p.outcomeWithin(t, 1, 30*time.Second); o.status != outStopped {
		t.Fatalf("outcome %+v, want stopped", o)
	}
}
