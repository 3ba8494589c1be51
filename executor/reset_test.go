package executor

import (
	"encoding/json"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/codecell/codecell/executor/internal/engine"
)

// resetHost settles every tool call at once with its arguments, and keeps
// the job's console lines.
type resetHost struct {
	onCall func(id uint32, name, args string)
	lines  *[]string
}

func (h resetHost) call(id uint32, name, args string) { h.onCall(id, name, args) }
func (h resetHost) log(level int, text string) {
	*h.lines = append(*h.lines, fmt.Sprint(level, text))
}
func (resetHost) progress(string, float64) {}

var resetLayout = NewLayout([]Function{{Name: "util.echo"}, {Name: "util.fail"}})

// probeTimeout is the deadline of the programs whose outcomes are
// compared: none comes near it, and it is long so that a machine too busy
// to run one VM's program in time does not make the two outcomes differ
// (a fresh VM's `for` loop of 1e5 ran past 5 s under the race detector at
// a load of 55).
const probeTimeout = time.Minute

// runOn runs code on in, pinned (Math.random and the clock), and
// describes how it ended: its outcome and its console lines.
func runOn(t testing.TB, in *instance, code string) string {
	t.Helper()
	out, lines := runJob(in, code, probeTimeout)
	return fmt.Sprintf("%d %s %q %s %q %q %q %d:%d %v", out.status, out.kind, out.payload, out.name, out.message, out.stack, out.raw, out.line, out.col, lines)
}

func runJob(in *instance, code string, timeout time.Duration) (outcome, []string) {
	spec := &jobSpec{
		Src: code, Layout: in.layout, Pin: &Pin{Seed: 7, Now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		Memory: 32 << 20, Stack: 2000, MaxCalls: 50, MaxLogLines: 50, MaxLogBytes: 1 << 16, MaxResult: 1 << 20,
		Timeout: timeout,
	}
	var lines []string
	var j *vmJob
	j = newVMJob(spec, resetHost{lines: &lines, onCall: func(id uint32, name, args string) {
		j.inbox.push(callResult{id: id, ok: name == "util.echo", payload: []byte(args)})
	}})
	return j.run(in), lines
}

// pollutions are programs that change what the next program on the same
// VM would see, were the VM not reset.
var pollutions = []string{
	"Object.prototype.polluted = 1; Array.prototype.push = () => 0; globalThis.leak = 'secret'; 1",
	"delete Array.prototype.map; String.prototype.split = () => ['planted']; JSON.stringify = () => '\"hijacked\"'; 1",
	"Object.defineProperty(Object.prototype, 'toJSON', {value: () => 'hijacked', enumerable: false}); 1",
	"Array.prototype[Symbol.iterator] = function* () { yield 'planted' }; Promise.prototype.then = null; 1",
	"Math.random = () => 4; Date.now = () => 0; Function.prototype.call = null; 1",
	"Symbol.for('planted'); globalThis.r = new WeakRef({}); new FinalizationRegistry(() => { globalThis.fin = 1 }).register({}, 1); 1",
	"Promise.resolve().then(() => { globalThis.later = 1 }); new Promise(() => {}); util.echo({x: 1}); 1",
	"const big = new Uint8Array(1 << 22).fill(9); globalThis.keepBig = big; 'x'.repeat(1 << 20); 1",
	"Object.freeze(Object.prototype); Object.freeze(Array.prototype); 1",
	"globalThis.util = null; globalThis.console = null; 1",
	"var v = 1; let l = 2; class C {}; function f() {}; 1",
	"/(a)/.exec('a'); RegExp.prototype.exec = () => null; 1",
	"while (true) {}",
	"throw new Error('left')",
	"Error.prepareStackTrace = () => 'x'; Error.prototype.toString = () => 'planted'; 1",
	"Object.setPrototypeOf(globalThis, {inherited: 1}); 1",
	"let a = []; for (let i = 0; i < 1e5; i++) a.push({i, s: 'k' + i}); globalThis.a = a; 1",
}

const listBuiltins = `const l = (o) => Object.getOwnPropertyNames(o).filter(k => k !== "constructor" && k !== "caller" && k !== "arguments" &&
  typeof Object.getOwnPropertyDescriptor(o, k).value === "function").sort();
({"Array.prototype": l(Array.prototype), "String.prototype": l(String.prototype), "Object": l(Object),
  "Math": l(Math), "JSON": l(JSON), "Number.prototype": l(Number.prototype), "Array": l(Array),
  "TypedArray.prototype": l(Object.getPrototypeOf(Uint8Array.prototype)), "Map.prototype": l(Map.prototype),
  "Date.prototype": l(Date.prototype), "RegExp.prototype": l(RegExp.prototype)})`

// diffPrograms are the programs run on fresh VMs and on reset ones: a
// hand-written set, and a call of every method of the main built-ins on
// small receivers.
func diffPrograms(t *testing.T) []string {
	progs := []string{
		"1 + 1", "return 1 + 1", "[typeof leak, typeof polluted, ({}).polluted]",
		"[].push(1)", "[1, 2, 3].map(x => x * 2)", "'a,b'.split(',')", "JSON.stringify({a: [1, {b: 2}]})",
		"({a: 1, toJSON: undefined})", "[...[1, 2]]", "Math.random()", "Date.now()", "new Date().toISOString()",
		"Symbol.keyFor(Symbol.for('planted'))", "[typeof r, typeof fin, typeof later, typeof keepBig, typeof a, typeof v, typeof C]",
		"await util.echo({x: 1})", "await Promise.all([util.echo({a: 1}), util.echo({b: 2})])",
		"try { await util.fail({}) } catch (e) { return String(e) }",
		"console.log('one', {two: 2}); console.error('three'); 4",
		"throw new Error('boom')", "throw {plain: 1}", "null.x", "let x = ;", "undeclared",
		"(function f(n) { return n ? f(n - 1) : 'deep' })(500)", "(function f() { return f() })()",
		"new Array(10).fill(0).map((_, i) => i ** 2)", "Object.getOwnPropertyNames(globalThis).sort()",
		"Object.getOwnPropertyNames(Object.prototype).sort()", "Object.isFrozen(Object.prototype)",
		"Object.getPrototypeOf(globalThis) === Object.prototype", "typeof util.echo", "Object.keys(util)",
		"/(a)(b)?/.exec('ab')", "'abc'.replace(/b/g, 'x')", "[3, 1, 2].sort()", "new Map([[1, 2]]).size",
		"[...new Set([1, 1, 2])]", "BigInt(2) ** 64n + ''", "(0.1 + 0.2).toFixed(20)", "parseInt('0x1f')",
		"new Intl.NumberFormat ? 1 : 0", "typeof structuredClone", "encodeURIComponent('a b&c')",
		"new Uint8Array([1, 2, 3]).reverse()", "new Float64Array(3)", "new ArrayBuffer(8).byteLength",
		"new Uint8Array(1 << 20).reduce((a, b) => a + b, 0)", "Array.from({length: 3}, (_, i) => i)",
		"(async () => { await null; return 'async' })()", "async function* g() { yield 1; yield 2 } const o = []; for await (const x of g()) o.push(x); o",
		"Promise.reject(new Error('rejected'))", "new Promise(() => {})", "await new Promise(r => setTimeout ? r(1) : r(2))",
		"String(Error.prototype.toString.call(new TypeError('t')))", "new Error('s').stack",
		"Reflect.ownKeys(Array.prototype).length", "Object.entries({b: 1, a: 2})", "'x'.repeat(1000).length",
		"globalThis.r = 1; r", "var v = 2; v", "class C { #p = 1; get p() { return this.#p } } new C().p",
		"const {a, ...rest} = {a: 1, b: 2, c: 3}; rest", "label: { break label } 'after'",
		"[1, [2, [3, [4]]]].flat(Infinity)", "Object.fromEntries([['k', 'v']])", "'ß'.toUpperCase()",
		"'\\u{1F600}'.length", "new Date(2020, 0, 1).getDay()", "Math.max(...[1, 5, 3])", "typeof WeakRef",
		"let s = 0; for (let i = 0; i < 1e5; i++) s += i; s", "JSON.parse('{\"a\":[1,2,{\"b\":null}]}')",
		"new Proxy({}, {get: (_, k) => k}).hello", "Array.prototype.concat.call(1, 2)", "globalThis.util === util",
	}
	// Every method of the main built-ins, called on small receivers.
	in, err := newInstance(testPrelude(t), resetLayout)
	if err != nil {
		t.Fatal(err)
	}
	defer in.close()
	list, _ := runJob(in, listBuiltins, probeTimeout)
	var names map[string][]string
	if err := json.Unmarshal(list.payload, &names); err != nil {
		t.Fatalf("list the built-ins: %v (%+v)", err, list)
	}
	receivers := map[string]string{
		"Array.prototype": "[3, 1, 2, 'b', 'a']", "String.prototype": "'Hello, World'", "Object": "{b: 1, a: [2]}",
		"Math": "2.5", "JSON": "'{\"a\":1}'", "Number.prototype": "1234.5678", "Array": "[1, 2]",
		"TypedArray.prototype": "new Uint8Array([5, 3, 9])", "Map.prototype": "new Map([['k', 1]])",
		"Date.prototype": "new Date(1700000000000)", "RegExp.prototype": "/l+/g",
	}
	for owner, methods := range names {
		r := receivers[owner]
		for _, m := range methods {
			var call string
			switch owner {
			case "Object", "Math", "JSON", "Array":
				call = fmt.Sprintf("%s[%q](%s, 1)", owner, m, r)
			case "RegExp.prototype":
				call = fmt.Sprintf("%s[%q]('Hello, World', 'x')", r, m)
			default:
				call = fmt.Sprintf("%s[%q].call(%s, x => x, 1)", owner, m, r)
			}
			progs = append(progs, fmt.Sprintf("try { const v = %s; return typeof v === 'object' && v !== null && typeof v.next === 'function' ? [...v] : v } catch (e) { return String(e) }", call))
		}
	}
	if len(progs) < 300 {
		t.Fatalf("only %d programs", len(progs))
	}
	return progs
}

var (
	preludeOnce sync.Once
	preludeCode any
)

func testPrelude(t testing.TB) *engine.Bytecode {
	t.Helper()
	preludeOnce.Do(func() {
		c, err := compilePrelude()
		if err != nil {
			preludeCode = err
			return
		}
		preludeCode = c
	})
	if err, ok := preludeCode.(error); ok {
		t.Fatal(err)
	}
	return preludeCode.(*engine.Bytecode)
}

// TestResetDifferential runs each program on a freshly built VM and on
// one reset after another program changed it (pollutions): the two must
// end alike, byte for byte.
//
// Not parallel: it builds and runs some 700 VMs (16 s of CPU under the
// race detector), which would compete for the CPU with the package's
// tests that bound times (the built-in sweep, TestBusy).
func TestResetDifferential(t *testing.T) {
	prelude := testPrelude(t)
	progs := diffPrograms(t)
	reused, err := newInstance(prelude, resetLayout)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { reused.close() }()
	resets := 0
	for i, code := range progs {
		fresh, err := newInstance(prelude, resetLayout)
		if err != nil {
			t.Fatal(err)
		}
		want := runOn(t, fresh, code)
		fresh.close()

		runJob(reused, pollutions[i%len(pollutions)], 20*time.Millisecond)
		if !reused.reset() {
			t.Fatalf("after %q: the VM could not be reset", pollutions[i%len(pollutions)])
		}
		resets++
		if got := runOn(t, reused, code); got != want {
			t.Errorf("%s\nafter %s:\nreset VM: %s\nfresh VM: %s", code, pollutions[i%len(pollutions)], got, want)
		}
		if !reused.reset() {
			t.Fatalf("after %q: the VM could not be reset", code)
		}
	}
	t.Logf("%d programs, %d resets", len(progs), resets)
}

// FuzzReset runs an arbitrary program on a VM, resets it, and checks
// that a set of probes then see what they see on a fresh VM: nothing a
// program does survives a reset.
func FuzzReset(f *testing.F) {
	for _, p := range pollutions {
		f.Add(p)
	}
	probes := []string{
		"[typeof leak, ({}).polluted, [].push(1), typeof Array.prototype.map, 'a,b'.split(','), JSON.stringify({a: 1})]",
		"Object.getOwnPropertyNames(globalThis).sort().join()",
		"[Object.isFrozen(Object.prototype), Object.getPrototypeOf(globalThis) === Object.prototype, typeof util.echo, Math.random(), Date.now()]",
		"[...[1, 2]].concat(Object.keys(Object.prototype), Reflect.ownKeys(Array.prototype).length, String(Symbol.keyFor(Symbol.for('planted'))))",
		"await util.echo({x: [1, 2]})",
		"await null; [typeof later, typeof fin, typeof r]",
	}
	prelude := testPrelude(f)
	fresh, err := newInstance(prelude, resetLayout)
	if err != nil {
		f.Fatal(err)
	}
	var want []string
	for _, p := range probes {
		want = append(want, runOn(f, fresh, p))
		if !fresh.reset() {
			f.Fatal("reset")
		}
	}
	fresh.close()
	reused, err := newInstance(prelude, resetLayout)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { reused.close() })
	f.Fuzz(func(t *testing.T, code string) {
		runJob(reused, code, 20*time.Millisecond)
		if !reused.reset() {
			// Broken by a host function's panic, or killed: closed, never
			// reused.
			reused.close()
			if reused, err = newInstance(prelude, resetLayout); err != nil {
				t.Fatal(err)
			}
			return
		}
		for i, p := range probes {
			if got := runOn(t, reused, p); got != want[i] {
				t.Fatalf("after %q, %s:\nreset VM: %s\nfresh VM: %s", code, p, got, want[i])
			}
			reused.reset()
		}
	})
}

// BenchmarkVMCycle measures what a run's VM costs besides the run, one
// `1+1` job each: fresh builds a VM for each job and closes it after (as
// before VMs were reset), reset resets one VM after each job. Reports the
// CPU time per job and the size of the heap image a reset copies back.
//
//	go test -tags sqlite_fts5 -run '^$' -bench VMCycle -count 3 ./executor
func BenchmarkVMCycle(b *testing.B) {
	prelude := testPrelude(b)
	b.Run("fresh", func(b *testing.B) {
		cpu := cpuTimeInternal()
		for b.Loop() {
			in, err := newInstance(prelude, resetLayout)
			if err != nil {
				b.Fatal(err)
			}
			runJob(in, "1+1", 5*time.Second)
			in.close()
		}
		b.ReportMetric(float64((cpuTimeInternal()-cpu).Nanoseconds())/float64(b.N)/1000, "cpu-µs/op")
	})
	b.Run("reset", func(b *testing.B) {
		in, err := newInstance(prelude, resetLayout)
		if err != nil {
			b.Fatal(err)
		}
		defer in.close()
		cpu := cpuTimeInternal()
		for b.Loop() {
			runJob(in, "1+1", 5*time.Second)
			if !in.reset() {
				b.Fatal("reset")
			}
		}
		b.ReportMetric(float64((cpuTimeInternal()-cpu).Nanoseconds())/float64(b.N)/1000, "cpu-µs/op")
		b.ReportMetric(float64(in.vm.ImageSize())/1024, "image-KiB")
	})
}

func cpuTimeInternal() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
