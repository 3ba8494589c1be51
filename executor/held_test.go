package executor_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codecell/codecell/executor"
)

// TestCallArgumentsHeldWithinTheHeap (issue 19, attack14 I8): a call's
// arguments are copied out of the VM and held outside it until the call
// finishes, while the VM runs on and makes more: a 4 MB string passed to
// a hundred calls before the first await held 400 MB outside a 64 MiB
// heap — in the worker, or in the server itself in-process. The calls a
// run has in flight hold at most its heap limit of arguments: past it,
// the call throws a RangeError the program can catch, saying to await
// fewer calls at once. (Here a 250 kB string and a 4 MiB heap.)
func TestCallArgumentsHeldWithinTheHeap(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode executor.Isolation) {
		e := newExecutor(t, mode, executor.Config{PoolSize: 1, MemoryLimit: 4 << 20})
		var seen atomic.Int64 // the bytes of arguments the dispatcher was given
		d := dispatcher(func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
			seen.Add(int64(len(args)))
			return json.RawMessage(`1`), nil
		})
		res := e.Run(context.Background(), executor.Request{Dispatcher: d, Functions: layout, Timeout: time.Minute, Code: `
const S = "x".repeat(250000); const ps = []; let err = "";
try { for (let i = 0; i < 100; i++) ps.push(util.echo({s: S}).then(() => 1, () => 0)); }
catch (e) { err = e.name + ": " + e.message }
const ok = (await Promise.all(ps)).length;
// Once those are done, as many may go again.
for (let i = 0; i < 4; i++) await Promise.all([util.echo({s: S}), util.echo({s: S})]);
return {made: ps.length, ok, err}`})
		if res.Status != executor.StatusOK {
			t.Fatalf("run: %s %v", res.Status, res.Error)
		}
		var got struct {
			Made, OK int
			Err      string
		}
		json.Unmarshal(res.Value, &got)
		if got.Made > 16 || got.Made < 8 || got.OK != got.Made || !strings.HasPrefix(got.Err, "RangeError: ") || !strings.Contains(got.Err, "Await fewer calls at once") {
			t.Errorf("100 calls of a 250 kB argument, heap 4 MiB: %s", res.Value)
		}
		if n := seen.Load(); n > int64(got.Made+8)*250020 {
			t.Errorf("the dispatcher was given %d bytes of arguments", n)
		}
	})
}

// TestResultHeldUntilTheVMTakesIt (issue 19, attack14 I9): a call's
// result holds its bytes in flight (Call.OnConsumed) until the run's VM
// has taken it. With process isolation the hold ended once the result
// was written to the worker's pipe, and the worker queued every result
// its VM did not read, unbounded: a VM looping after its calls held
// hundreds of megabytes of results in the worker. The program here makes
// twelve calls and loops until it is cancelled, never taking a result:
// none of their holds may end before the run does. The last call's
// argument (4.3 MB) passes the bytes a host holds before it sends calls
// on, so every call goes while the VM runs; and the run has one place in
// flight, so
// that a call is dispatched only once the one before it is done, its
// result written to the VM's host: when the last result is returned
// every other one has got there, and a hold given back on the way would
// have been given back by then. The test waits for that state, not for a
// time.
func TestResultHeldUntilTheVMTakesIt(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode executor.Isolation) {
		const calls = 12
		e := newExecutor(t, mode, executor.Config{PoolSize: 1, MaxConcurrentCalls: 1})
		var running atomic.Bool
		running.Store(true)
		var early, late, returned atomic.Int32
		big := json.RawMessage(`"` + strings.Repeat("y", 1<<20) + `"`)
		d := caller(func(ctx context.Context, c executor.Call) (json.RawMessage, error) {
			c.OnConsumed(func() {
				if running.Load() {
					early.Add(1)
				} else {
					late.Add(1)
				}
			})
			returned.Add(1)
			return big, nil
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan *executor.Result, 1)
		go func() {
			done <- e.Run(ctx, executor.Request{Dispatcher: d, Functions: layout, Timeout: 5 * time.Minute,
				Code: `const ps = []; for (let i = 1; i < ` + strconv.Itoa(calls) + `; i++) ps.push(util.echo({i}).then(() => 1, () => 0));
ps.push(util.echo({s: "x".repeat(4300000)}).then(() => 1, () => 0));
while (true) {}`})
		}()
		for deadline := time.Now().Add(2 * time.Minute); returned.Load() < calls; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d results returned in two minutes", returned.Load(), calls)
			}
		}
		if n := early.Load(); n > 0 {
			t.Errorf("%d of %d results the VM never took gave back their holds while it ran", n, calls)
		}
		running.Store(false)
		cancel()
		if res := <-done; res.Status != executor.StatusError || res.Error.Kind != executor.KindCanceled {
			t.Errorf("the run: %s %v", res.Status, res.Error)
		}
		// Every hold ends with the run.
		for deadline := time.Now().Add(30 * time.Second); early.Load()+late.Load() < returned.Load(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d results still hold their bytes after the run ended", returned.Load()-early.Load()-late.Load(), returned.Load())
			}
		}
	})
}

// TestWorkerQueueBounded (issue 19, attack14 I9): a sandbox worker keeps
// at most four heaps of results its VMs have not taken, whatever holds
// them in the executor: past that, a result is replaced by a rejection
// and acknowledged at once. The dispatcher here holds nothing back, as a
// tool with no bytes in flight would not: 159 results of 1 MiB reach a
// worker whose VM (of a 4 MiB heap) loops after its first await and
// never takes one. The first 15 fit the 16 MiB bound; each of the 144
// after them must give its hold back while the VM still loops, and the
// worker lives on. Without the bound the worker queued every result, and
// no hold ended before the run did; with the bound as it was, at least
// 128 MiB a job, the worker died out of memory (its data limit is 304
// MiB at this heap, and the collector lets its heap grow to twice what
// it holds), the run with it. The test waits for the state, not for a
// time: it is reached as soon as the results are in the worker.
func TestWorkerQueueBounded(t *testing.T) {
	t.Parallel()
	const calls, heap = 160, 4 << 20
	bound := executor.QueueBound(heap) // 16 MiB
	big := json.RawMessage(`"` + strings.Repeat("y", 1<<20) + `"`)
	kept := int(bound / int64(len(big))) // the results that fit
	dropped := calls - 1 - kept
	if dropped < 1 {
		t.Fatalf("%d results of 1 MiB all fit the bound of %d MiB: the test checks nothing", calls-1, bound>>20)
	}
	// Every call has a place in flight at once: the first, which the VM
	// awaits, never waits behind those held until it loops.
	e := newExecutor(t, executor.IsolationProcess, executor.Config{PoolSize: 1, MemoryLimit: heap, MaxConcurrentCalls: calls})
	p := newLoopProbe(big)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *executor.Result, 1)
	go func() {
		done <- e.Run(ctx, executor.Request{Dispatcher: p.caller(), Functions: layout, Timeout: 5 * time.Minute, OnLog: p.onLog, Code: loopingCode(calls)})
	}()
	// The bound is reached once the results are in the worker; a minute
	// is only how long a broken bound is waited for.
	p.waitDropped(t, dropped, bound, "")
	cancel()
	res := <-done
	if res.Status != executor.StatusError || res.Error.Kind != executor.KindCanceled {
		t.Errorf("the run: %s %v", res.Status, res.Error)
	}
	if n := p.early.Load(); n != int32(dropped) {
		t.Errorf("%d results gave back their holds while the VM looped, want the %d past the bound", n, dropped)
	}
	// The others' holds end with the run.
	p.waitAll(t)
}

// loopProbe answers a run's calls: its first at once, the others with
// big once the run's VM loops (its first log line), counting the results
// given back while it loops (early) and after (late).
type loopProbe struct {
	big                   json.RawMessage
	release               chan struct{}
	once                  sync.Once
	early, late, returned atomic.Int32
	looping               atomic.Bool
}

func newLoopProbe(big json.RawMessage) *loopProbe {
	return &loopProbe{big: big, release: make(chan struct{})}
}

// loopingCode makes calls calls at once, awaits the first, logs and
// loops.
func loopingCode(calls int) string {
	return `const ps = []; for (let i = 0; i < ` + strconv.Itoa(calls) + `; i++) ps.push(util.echo({i}).then(() => 1, () => 0));
await ps[0]; console.log("looping"); while (true) {}`
}

func (p *loopProbe) caller() caller {
	return func(ctx context.Context, c executor.Call) (json.RawMessage, error) {
		if c.Seq == 0 {
			return json.RawMessage(`1`), nil
		}
		select {
		case <-p.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		c.OnConsumed(func() {
			if p.looping.Load() {
				p.early.Add(1)
			} else {
				p.late.Add(1)
			}
		})
		p.returned.Add(1)
		return p.big, nil
	}
}

// onLog is the run's OnLog: its VM loops.
func (p *loopProbe) onLog(executor.LogLine) {
	p.once.Do(func() {
		p.looping.Store(true)
		close(p.release)
	})
}

// waitDropped waits until dropped results have given back their holds
// while the VM looped, then stops counting them so; nested names the run
// in the failure.
func (p *loopProbe) waitDropped(t *testing.T, dropped int, bound int64, nested string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); p.early.Load() < int32(dropped); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d results returned%s while its VM looped, %d of them given back: the worker queued %d MiB its VMs never took (the bound is %d MiB)",
				p.returned.Load(), nested, p.early.Load(), (p.returned.Load()-p.early.Load())*int32(len(p.big))>>20, bound>>20)
		}
	}
	p.looping.Store(false)
}

// waitAll waits until every result returned has given back its hold.
func (p *loopProbe) waitAll(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); p.early.Load()+p.late.Load() < p.returned.Load(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d results still hold their bytes after the run ended", p.returned.Load()-p.early.Load()-p.late.Load(), p.returned.Load())
		}
	}
}

// TestWorkerQueueBoundedWithNestedRuns: the worker's bound on results its
// VMs have not taken is of the worker, its root job's and their nested
// jobs' together — four of the root's heaps. It was of each job, at
// least 128 MiB, a nested job's too: a root of a 4 MiB heap whose skill
// (a nested run of a 1 MiB heap) looped after its first await queued all
// its 39 results of 1 MiB, and each skill more would have queued as
// many, past what the worker's data limit allows for.
func TestWorkerQueueBoundedWithNestedRuns(t *testing.T) {
	t.Parallel()
	const calls, heap = 40, 4 << 20
	bound := executor.QueueBound(heap)
	big := json.RawMessage(`"` + strings.Repeat("y", 1<<20) + `"`)
	dropped := calls - 1 - int(bound/int64(len(big)))
	e := newExecutor(t, executor.IsolationProcess, executor.Config{PoolSize: 1, MemoryLimit: heap, MaxConcurrentCalls: calls})
	p := newLoopProbe(big)
	skill := caller(func(ctx context.Context, c executor.Call) (json.RawMessage, error) {
		res := e.Run(ctx, executor.Request{Parent: c.Run, Dispatcher: p.caller(), Functions: layout, Timeout: 5 * time.Minute, OnLog: p.onLog, Code: loopingCode(calls)})
		if res.Error != nil {
			return nil, res.Error
		}
		return res.Value, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *executor.Result, 1)
	go func() {
		done <- e.Run(ctx, executor.Request{Dispatcher: skill, Functions: layout, Timeout: 5 * time.Minute, Code: `return await util.echo({})`})
	}()
	p.waitDropped(t, dropped, bound, " to the nested run")
	cancel()
	<-done
	if n := p.early.Load(); n != int32(dropped) {
		t.Errorf("%d results gave back their holds while the nested run's VM looped, want the %d past the bound", n, dropped)
	}
	p.waitAll(t)
}
