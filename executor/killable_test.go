package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/executor"
)

var (
	sweepReport   = flag.String("sweep-report", "", "write the built-in sweep's worst overrun to this file")
	sweepOverruns = flag.String("sweep-overruns", "", "append each attack of the built-in sweep to this file: mode, overrun and this process's lateness in ms, name")
)

// overrunBound is how long past its deadline a run may end, whatever it
// does.
const overrunBound = 100 * time.Millisecond

// Hostile receivers: each is JavaScript that declares r, the receiver.
const (
	// hugeLike is an array-like that the generic Array.prototype methods
	// walk index by index, in C, to 2**53-1.
	hugeLike = "const r = {length: 2 ** 53 - 1};"
	// sparse is an array of the largest length with no element.
	sparse = "const r = []; r.length = 2 ** 32 - 1;"
	// bigTyped is the largest typed array the heap allows.
	bigTyped = "let r; for (let n = 1 << 30; !r; n >>= 1) { try { r = new Uint8Array(n) } catch (e) {} }"
	// longString is a string of 64 Mi characters.
	longString = "const r = 'x'.repeat(1 << 26);"
)

// callbackArgs are the arguments of the methods that take a callback: a
// function that keeps the walk going.
var callbackArgs = map[string]string{
	"every": "() => true", "some": "() => false", "filter": "() => false", "find": "() => false",
	"findIndex": "() => false", "findLast": "() => false", "findLastIndex": "() => false",
	"forEach": "() => {}", "map": "x => x", "flatMap": "x => x", "reduce": "(a) => a, 0",
	"reduceRight": "(a) => a, 0", "sort": "", "toSorted": "",
	"replace": "/y/g, 'z'", "replaceAll": "'y', 'z'", "split": "''", "match": "/y/", "matchAll": "/y/g",
	"search": "/y/", "padEnd": "2 ** 28", "padStart": "2 ** 28", "repeat": "2 ** 4", "normalize": "'NFD'",
	"localeCompare": "r + 'y'", "concat": "r, r", "fill": "0", "copyWithin": "0, 1", "splice": "0, 1",
	"toSpliced": "0, 1", "with": "0, 1", "set": "r", "join": "','", "indexOf": "1", "lastIndexOf": "1",
	"includes": "1", "flat": "Infinity",
}

func argsFor(method string) string {
	if a, ok := callbackArgs[method]; ok {
		return a
	}
	return "1, 2"
}

// attack is one program that may keep a VM busy inside a built-in.
type attack struct{ name, code string }

// builtinAttacks calls every built-in method of the engine, as the engine
// lists them, on the receivers that make each do the most work.
func builtinAttacks(t *testing.T, e *executor.Executor) []attack {
	t.Helper()
	res := e.Run(t.Context(), executor.Request{Code: `
const list = (o) => Object.getOwnPropertyNames(o).filter(k => k !== "constructor" &&
  typeof Object.getOwnPropertyDescriptor(o, k).value === "function").sort();
({
  "Array.prototype": list(Array.prototype),
  "TypedArray.prototype": list(Object.getPrototypeOf(Uint8Array.prototype)),
  "String.prototype": list(String.prototype),
  "RegExp.prototype": list(RegExp.prototype),
  "Object": list(Object), "Array": list(Array), "String": list(String), "JSON": list(JSON),
})`})
	if res.Error != nil {
		t.Fatalf("list the built-ins: %v", res.Error)
	}
	var names map[string][]string
	if err := json.Unmarshal(res.Value, &names); err != nil {
		t.Fatal(err)
	}
	var attacks []attack
	add := func(name, code string) { attacks = append(attacks, attack{name, code}) }
	for _, m := range names["Array.prototype"] {
		add("Array.prototype."+m+" on a huge array-like", fmt.Sprintf("%s Array.prototype[%q].call(r, %s)", hugeLike, m, argsFor(m)))
		add("Array.prototype."+m+" on a sparse array", fmt.Sprintf("%s Array.prototype[%q].call(r, %s)", sparse, m, argsFor(m)))
	}
	for _, m := range names["TypedArray.prototype"] {
		add("TypedArray.prototype."+m+" on the largest Uint8Array", fmt.Sprintf("%s Object.getPrototypeOf(Uint8Array.prototype)[%q].call(r, %s)", bigTyped, m, argsFor(m)))
	}
	for _, m := range names["String.prototype"] {
		add("String.prototype."+m+" on a long string", fmt.Sprintf("%s String.prototype[%q].call(r, %s)", longString, m, argsFor(m)))
	}
	for _, m := range names["RegExp.prototype"] {
		add("RegExp.prototype."+m+" on a long string", fmt.Sprintf("%s /x*y/g[%q](r, 'z')", longString, m))
	}
	for _, sym := range []string{"match", "matchAll", "replace", "search", "split"} {
		add("RegExp.prototype[Symbol."+sym+"] on a long string", fmt.Sprintf("%s const x = /x*y/g[Symbol.%s](r, 'z'); x && x.next && x.next()", longString, sym))
	}
	for _, static := range []string{"Object", "Array", "String", "JSON"} {
		for _, m := range names[static] {
			for _, rc := range [][2]string{{"a huge array-like", hugeLike}, {"a sparse array", sparse}, {"the largest Uint8Array", bigTyped}} {
				add(fmt.Sprintf("%s.%s on %s", static, m, rc[0]), fmt.Sprintf("%s %s[%q](r, r)", rc[1], static, m))
			}
		}
	}
	add("JSON.parse of a long array", "JSON.parse('[' + '0,'.repeat(1 << 24) + '0]')")
	add("catastrophic backtracking", "/(x+x+)+y/.test('x'.repeat(40))")
	add("Function.prototype.apply on a huge array-like", hugeLike+" Math.max.apply(null, r)")
	add("spread of a sparse array", sparse+" [...r].length")
	add("Array.from a huge array-like", hugeLike+" Array.from(r)")
	return attacks
}

// TestBuiltinSweep runs every built-in method on hostile receivers under a
// short deadline, in each isolation mode: each run ends, the VM stuck in
// the built-in is stopped (with its worker process; in-process, by taking
// its memory away) and the next run works. With process isolation, the
// default, each run also ends within its deadline and overrunBound,
// however long the built-in would take. In-process the bound is not
// asserted: a VM stuck in a built-in holds one of this process's Ps until
// it is killed, and a long copy inside the engine cannot be preempted,
// so the server's own timers run late (see docs/decisions.md). The worst
// overrun of each mode is logged, and written to -sweep-report.
func TestBuiltinSweep(t *testing.T) {
	t.Parallel()
	const deadline = 150 * time.Millisecond
	var reports, overruns []string
	for _, mode := range modes {
		bounded := mode == executor.IsolationProcess
		t.Run(string(mode), func(t *testing.T) {
			e := newExecutor(t, mode, executor.Config{PoolSize: 2, QueueWait: time.Minute, MemoryLimit: 128 << 20})
			attacks := builtinAttacks(t, e)

			noise := newLateness(t)
			var mu sync.Mutex
			var worstName string
			var worst, worstNoise time.Duration = -deadline, 0
			t.Run("attacks", func(t *testing.T) {
				for _, a := range attacks {
					t.Run(a.name, func(t *testing.T) {
						t.Parallel()
						start := time.Now()
						over := overrun(t, e, a.code, deadline)
						late := noise.max(start, time.Now())
						mu.Lock()
						if over > worst {
							worst, worstName, worstNoise = over, a.name, late
						}
						overruns = append(overruns, fmt.Sprintf("%s\t%.1f\t%.1f\t%s\n", mode, ms(over), ms(late), a.name))
						mu.Unlock()
						if bounded && over > overrunBound+late {
							t.Errorf("ended %s after its %s deadline (this process was scheduled up to %s late meanwhile)", over.Round(time.Millisecond), deadline, late.Round(time.Millisecond))
						}
						wantOK(t, run(t, e, "(await util.echo({ok: 1})).ok"), "1")
					})
				}
			})
			report := fmt.Sprintf("built-in sweep, %s: %d attacks, deadline %s: worst overrun %.1f ms (%s), while this process was scheduled up to %.1f ms late\n",
				mode, len(attacks), deadline, ms(worst), worstName, ms(worstNoise))
			t.Log(report)
			reports = append(reports, report)
			if !bounded {
				waitIdle(t, e)
			}
		})
	}
	if *sweepReport != "" {
		if err := os.WriteFile(*sweepReport, []byte(strings.Join(reports, "")), 0o644); err != nil {
			t.Error(err)
		}
	}
	if *sweepOverruns != "" {
		f, err := os.OpenFile(*sweepOverruns, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = f.WriteString(strings.Join(overruns, ""))
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			t.Error(err)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// lateness samples how late this process's timers fire: a machine too
// busy to run it for a while delays every deadline by as much, whatever
// the executor does, so the sweep allows for it and reports it.
type lateness struct {
	mu      sync.Mutex
	samples []latenessSample
}

type latenessSample struct {
	at   time.Time
	late time.Duration
}

func newLateness(t testing.TB) *lateness {
	l := &lateness{}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			time.Sleep(time.Millisecond)
			now := time.Now()
			l.mu.Lock()
			l.samples = append(l.samples, latenessSample{now, now.Sub(start) - time.Millisecond})
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return l
}

// max returns the worst lateness of the timers that fired from start to
// end. It waits for the sampler to record the timers that were due by
// end: after a stall it may run after the caller.
func (l *lateness) max(start, end time.Time) time.Duration {
	for {
		// The sampler may not have run yet: in-process, VMs stuck in
		// built-ins can hold every P for longer than a run takes.
		l.mu.Lock()
		n := len(l.samples)
		done := n > 0 && l.samples[n-1].at.After(end)
		l.mu.Unlock()
		if done {
			break
		}
		time.Sleep(time.Millisecond)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var m time.Duration
	for i := len(l.samples) - 1; i >= 0 && !l.samples[i].at.Before(start); i-- {
		if s := l.samples[i]; s.at.Add(-s.late).Before(end) && s.late > m {
			m = s.late
		}
	}
	return m
}

// overrun runs code with timeout and returns how long after its deadline
// it ended (negative when it ended before).
func overrun(t testing.TB, e *executor.Executor, code string, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	res := e.Run(context.Background(), executor.Request{Code: code, Timeout: timeout, Dispatcher: echo, Functions: layout})
	wall := time.Since(start) - time.Duration(res.Telemetry.QueueWaitMS*float64(time.Millisecond))
	if res.Error != nil && res.Error.Kind == executor.KindInternal {
		t.Errorf("internal error: %v", res.Error)
	}
	return wall - timeout
}

// pinned is a program that stays inside one built-in for longer than any
// test runs: QuickJS never polls for an interrupt there.
const pinned = "Array.prototype.indexOf.call({length: 2 ** 53 - 1}, 1)"

// TestPinnedRunsKeepCapacity pins both sandboxes of a pool of two: the
// runs that come after succeed once the deadline passes, none refused as
// busy.
func TestPinnedRunsKeepCapacity(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, executor.IsolationProcess, executor.Config{PoolSize: 2, QueueWait: 30 * time.Second})
	var wg sync.WaitGroup
	pinnedRes := make([]*executor.Result, 2)
	for i := range pinnedRes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pinnedRes[i] = e.Run(t.Context(), executor.Request{Code: pinned, Timeout: 300 * time.Millisecond})
		}()
	}
	waitRunning(t, e, 2)
	after := make([]*executor.Result, 4)
	for i := range after {
		wg.Add(1)
		go func() {
			defer wg.Done()
			after[i] = e.Run(t.Context(), executor.Request{Code: fmt.Sprintf("(await util.echo({i: %d})).i", i), Dispatcher: echo, Functions: layout})
		}()
	}
	wg.Wait()
	for _, res := range pinnedRes {
		wantKind(t, res, executor.KindTimeout, "deadline")
	}
	for i, res := range after {
		wantOK(t, res, fmt.Sprint(i))
	}
}

// TestCancelPinnedRun cancels a run stuck inside a built-in: it ends
// within overrunBound of the cancellation.
func TestCancelPinnedRun(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, executor.IsolationProcess, executor.Config{PoolSize: 1, Timeout: time.Minute, MaxTimeout: time.Minute})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan *executor.Result)
	go func() { done <- e.Run(ctx, executor.Request{Code: pinned}) }()
	waitRunning(t, e, 1)
	noise := newLateness(t)
	time.Sleep(50 * time.Millisecond) // well inside indexOf
	cancelled := time.Now()
	cancel()
	res := <-done
	took := time.Since(cancelled)
	if late := noise.max(cancelled, time.Now()); took > overrunBound+late {
		t.Errorf("the run ended %s after its cancellation (this process was scheduled up to %s late meanwhile)", took.Round(time.Millisecond), late.Round(time.Millisecond))
	}
	wantKind(t, res, executor.KindCanceled, "cancelled")
	wantOK(t, run(t, e, "1 + 1"), "2")
}

// TestClosePinned closes an executor whose sandboxes are all stuck inside
// built-ins: Close returns promptly, and the runs end as canceled.
func TestClosePinned(t *testing.T) {
	t.Parallel()
	e, err := executor.New(inMode(executor.IsolationProcess, executor.Config{PoolSize: 2, Timeout: time.Minute, MaxTimeout: time.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan *executor.Result, 2)
	for range 2 {
		go func() { results <- e.Run(context.Background(), executor.Request{Code: pinned}) }()
	}
	waitRunning(t, e, 2)
	start := time.Now()
	e.Close()
	if took := time.Since(start); took > time.Second {
		t.Errorf("Close took %s", took.Round(time.Millisecond))
	}
	for range 2 {
		wantKind(t, <-results, executor.KindCanceled, "shutting down")
	}
	wantKind(t, run(t, e, "1"), executor.KindCanceled, "shutting down")
}

// waitRunning waits until n runs hold pool slots.
// waitIdle waits until no run holds a slot: every VM stopped, none left
// running inside a built-in.
func waitIdle(t testing.TB, e *executor.Executor) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for e.Stats().Running > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d runs still hold their slots", e.Stats().Running)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitRunning(t testing.TB, e *executor.Executor, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for e.Stats().Running < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d runs running, want %d", e.Stats().Running, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Tables the fuzz target draws its programs from.
var (
	fuzzReceivers = []string{hugeLike, sparse, bigTyped, longString,
		"const r = new Proxy({length: 2 ** 53 - 1}, {});",
		"const r = 'x'.repeat(1 << 20).split('');",
		"const r = new Float64Array(1 << 22);",
		"const r = {length: 2 ** 32, 0: 1};",
	}
	fuzzMethods = []string{
		"Array.prototype.indexOf", "Array.prototype.lastIndexOf", "Array.prototype.includes",
		"Array.prototype.join", "Array.prototype.reverse", "Array.prototype.sort", "Array.prototype.forEach",
		"Array.prototype.toString", "Array.prototype.fill", "Array.prototype.copyWithin", "Array.prototype.map",
		"Array.prototype.filter", "Array.prototype.splice", "Array.prototype.slice", "Array.prototype.concat",
		"Array.prototype.toReversed", "Array.prototype.toSorted", "Array.prototype.flat", "Array.prototype.every",
		"Array.prototype.reduce", "Array.prototype.findLast",
		"Object.getPrototypeOf(Uint8Array.prototype).sort", "Object.getPrototypeOf(Uint8Array.prototype).indexOf",
		"Object.getPrototypeOf(Uint8Array.prototype).join", "Object.getPrototypeOf(Uint8Array.prototype).reverse",
		"Object.getPrototypeOf(Uint8Array.prototype).fill", "Object.getPrototypeOf(Uint8Array.prototype).lastIndexOf",
		"String.prototype.indexOf", "String.prototype.lastIndexOf", "String.prototype.split", "String.prototype.replaceAll",
		"String.prototype.toUpperCase", "String.prototype.normalize", "String.prototype.padEnd", "String.prototype.repeat",
		"Object.keys", "Object.values", "Object.entries", "Object.assign", "Object.freeze", "JSON.stringify", "Array.from",
	}
	// fuzzStatics are the methods that take the receiver as their first
	// argument.
	fuzzStatics = map[string]bool{"Object.keys": true, "Object.values": true, "Object.entries": true,
		"Object.assign": true, "Object.freeze": true, "JSON.stringify": true, "Array.from": true}
	fuzzArgs = []string{"", "1", "1, 2", "() => true", "(a, b) => b - a", "'x'", "0, 2 ** 31", "Infinity", "r", "-1"}
)

// FuzzBuiltins runs programs drawn from the built-in methods with hostile
// receivers: every one ends within its deadline and overrunBound, and the
// executor keeps serving. go test runs the seeds in testdata/fuzz; a
// longer run:
//
//	go test -tags sqlite_fts5 -run '^$' -fuzz FuzzBuiltins -fuzztime 10m ./executor
func FuzzBuiltins(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(1), uint8(0))
	e, err := executor.New(inMode(executor.IsolationProcess, executor.Config{PoolSize: 2, QueueWait: time.Minute, MemoryLimit: 64 << 20}))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	noise := newLateness(f)
	f.Fuzz(func(t *testing.T, recv, method, args, twice uint8) {
		r := fuzzReceivers[int(recv)%len(fuzzReceivers)]
		m := fuzzMethods[int(method)%len(fuzzMethods)]
		a := strings.TrimSuffix(", "+fuzzArgs[int(args)%len(fuzzArgs)], ", ")
		call := fmt.Sprintf("%s.call(r%s)", m, a)
		if fuzzStatics[m] {
			call = fmt.Sprintf("%s(r%s)", m, a)
		}
		code := r + " " + call
		if twice%2 == 1 {
			code += "; " + call
		}
		start := time.Now()
		over := overrun(t, e, code, 100*time.Millisecond)
		if late := noise.max(start, time.Now()); over > overrunBound+late {
			t.Fatalf("%s: ended %s after its deadline (this process was scheduled up to %s late meanwhile)", code, over.Round(time.Millisecond), late.Round(time.Millisecond))
		}
		wantOK(t, run(t, e, "1 + 1"), "2")
	})
}
