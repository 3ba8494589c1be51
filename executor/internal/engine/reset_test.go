package engine

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	lib "modernc.org/libquickjs"
)

// marker is what the tests' programs write all over a heap; no byte
// sequence of it may be readable in the region once the VM is reset or
// its region handed to another VM.
const marker = "L6-left-behind-0123456789"

// plant writes marker into small strings, a large string, object keys,
// a typed array's buffer and an array of numbers (its bytes, as doubles).
const plant = `
globalThis.keep = [];
for (let i = 0; i < 2000; i++) keep.push("` + marker + `" + i);
keep.push("` + marker + `".repeat(5000));
{ const o = {}; for (let i = 0; i < 100; i++) o["` + marker + `" + i] = i;
keep.push(o);
const b = new Uint8Array(200000); const m = Array.from("` + marker + `", c => c.charCodeAt(0));
for (let i = 0; i + m.length < b.length; i += m.length) b.set(m, i);
keep.push(b);
const small = new Uint8Array(64); small.set(m); keep.push(small); }
1`

// regionHolds reports whether marker is in the bytes of h's region up to
// its resident extent, or in one of its large blocks.
func regionHolds(h *heap, upTo uintptr) bool {
	if bytes.Contains(h.region[:upTo-h.base], []byte(marker)) {
		return true
	}
	for _, m := range h.large {
		if bytes.Contains(m, []byte(marker)) {
			return true
		}
	}
	return false
}

func eval(t *testing.T, vm *VM, code string) string {
	t.Helper()
	v, err := vm.Eval(code, EvalGlobal)
	if err != nil {
		t.Fatalf("%s: %v", code, err)
	}
	defer vm.Free(v)
	s, ok := vm.toString(v)
	if !ok {
		t.Fatalf("%s: no string", code)
	}
	return s
}

// TestResetLeavesNothing: after Reset, what a program made is gone from
// the VM — globals, prototypes, symbols, pending jobs, weak references —
// and none of the bytes it wrote can be found in the VM's memory.
func TestResetLeavesNothing(t *testing.T) {
	t.Parallel()
	vm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	eval(t, vm, "globalThis.base = 41; function inc(x) { return x + 1 }")
	vm.Snapshot()
	for i := range 3 {
		if got := eval(t, vm, plant); got != "1" {
			t.Fatal(got)
		}
		eval(t, vm, `
Object.prototype.polluted = 1; Array.prototype.push = () => 0; String.prototype.trim = null;
globalThis.leak = Symbol.for("leak"); base = 0; inc = () => 0;
globalThis.ref = new WeakRef({}); new FinalizationRegistry(() => { globalThis.finalized = 1 }).register({}, 1);
/(a)(b)?/.exec("ab"); RegExp.prototype.exec = null;
Promise.resolve().then(() => { globalThis.later = 1 });
new Promise(() => {});
1`)
		if !regionHolds(vm.heap, vm.heap.top) {
			t.Fatal("the program's marker is not in the region: the test finds nothing")
		}
		if !vm.Reset() {
			t.Fatal("Reset failed")
		}
		if regionHolds(vm.heap, vm.heap.high) {
			t.Fatalf("round %d: a byte sequence the program wrote is still in the VM's memory after Reset", i)
		}
		if err := vm.RunJobs(); err != nil {
			t.Fatal(err)
		}
		got := eval(t, vm, `JSON.stringify([typeof ({}).polluted, [].push(1), typeof "".trim, typeof leak,
Symbol.keyFor(Symbol.for("x")), base, inc(1), typeof ref, typeof finalized, typeof later,
typeof RegExp.prototype.exec, typeof keep])`)
		if want := `["undefined",1,"function","undefined","x",41,2,"undefined","undefined","undefined","function","undefined"]`; got != want {
			t.Fatalf("round %d after Reset:\n got %s\nwant %s", i, got, want)
		}
		if !vm.Reset() {
			t.Fatal("Reset failed")
		}
	}
}

// TestResetMathRandom: every Reset seeds Math.random anew, as a new VM
// would be; a VM restored from one image must not repeat its numbers.
func TestResetMathRandom(t *testing.T) {
	t.Parallel()
	vm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	vm.Snapshot()
	seen := map[string]bool{}
	for range 5 {
		s := eval(t, vm, "String(Math.random())")
		if seen[s] {
			t.Fatalf("Math.random repeated %s after Reset", s)
		}
		seen[s] = true
		vm.Reset()
	}
}

// TestResetInterrupt: an interrupt and a deadline are the run's before
// Reset, not the next one's.
func TestResetInterrupt(t *testing.T) {
	t.Parallel()
	vm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	vm.Snapshot()
	vm.Interrupt()
	if _, err := vm.Eval("1", EvalGlobal); err == nil {
		t.Fatal("an interrupted VM ran")
	}
	vm.Reset()
	if got := eval(t, vm, "String(1 + 1)"); got != "2" {
		t.Fatal(got)
	}
}

// TestResetLargeBlocks: the large blocks of the image (mappings of their
// own) are there again after a run freed or grew them, and the large
// blocks of a run are unmapped.
func TestResetLargeBlocks(t *testing.T) {
	t.Parallel()
	vm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	eval(t, vm, `globalThis.big = new Uint8Array(100000).fill(7); globalThis.words = "w".repeat(50000); 1`)
	vm.Snapshot()
	pinned := len(vm.heap.pinned)
	if pinned == 0 {
		t.Fatal("no large block in the image: the test checks nothing")
	}
	for range 3 {
		eval(t, vm, `big = null; words = null; globalThis.more = new Uint8Array(1 << 20); 1`)
		eval(t, vm, `1`)
		if !vm.Reset() {
			t.Fatal("Reset failed")
		}
		if len(vm.heap.large) != pinned {
			t.Fatalf("%d large blocks after Reset, want the image's %d", len(vm.heap.large), pinned)
		}
		if got := eval(t, vm, `String([big.length, big[99999], words.length, typeof more])`); got != "100000,7,50000,undefined" {
			t.Fatal(got)
		}
	}
}

// TestResetAfterKill: a killed VM is not reset.
func TestResetAfterKill(t *testing.T) {
	t.Parallel()
	vm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	vm.Snapshot()
	vm.Kill()
	if vm.Reset() {
		t.Fatal("a killed VM was reset")
	}
	vm.Close()
}

// TestSpareRegionCleared: a region kept for the next VM keeps pages, but
// none of the bytes the VM before wrote in them (finding L6).
func TestSpareRegionCleared(t *testing.T) {
	// Not parallel: the regions kept are the process's.
	for range 2 * maxSpareRegions {
		vm, err := New()
		if err != nil {
			t.Fatal(err)
		}
		eval(t, vm, plant)
		eval(t, vm, "keep = null; 1")
		if !regionHolds(vm.heap, vm.heap.top) {
			t.Fatal("the program's marker is not in the region: the test finds nothing")
		}
		vm.Close()
		next, err := New()
		if err != nil {
			t.Fatal(err)
		}
		found := bytes.Contains(next.heap.region[:next.heap.high-next.heap.base], []byte(marker))
		next.Close()
		if found {
			t.Fatal("a region kept for the next VM holds what the VM before wrote")
		}
	}
}

// TestRefusedCounts: an allocation past the limit is counted, caught
// by the program or not, and the count outlives a Reset (callers compare
// two counts).
func TestRefusedCounts(t *testing.T) {
	t.Parallel()
	vm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	vm.Snapshot()
	eval(t, vm, "globalThis.a = []; for (let i = 0; i < 100; i++) a.push('x'.repeat(1000) + i); 1")
	if n := vm.Refused(); n != 0 {
		t.Fatalf("%d refusals within the limit", n)
	}
	vm.SetMemoryLimit(4 << 20)
	got := eval(t, vm, "try { for (;;) a.push('x'.repeat(1 << 16) + a.length) } catch (e) { String(e) }")
	if got != "InternalError: out of memory" && got != "null" {
		t.Fatalf("the program saw %s", got)
	}
	n := vm.Refused()
	if n == 0 {
		t.Fatal("running out of memory was not counted")
	}
	if !vm.Reset() {
		t.Fatal("Reset failed")
	}
	if vm.Refused() != n {
		t.Fatalf("after Reset: %d refusals, want %d", vm.Refused(), n)
	}
}

// TestNewSeedsMathRandom: the engine seeds a new context's Math.random
// with the time in microseconds (js_random_init), which a program that
// knows roughly when its VM was built could guess; New seeds it as Reset
// does (issue 19, attack14).
func TestNewSeedsMathRandom(t *testing.T) {
	t.Parallel()
	before := uint64(time.Now().UnixMicro())
	vm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	after := uint64(time.Now().UnixMicro())
	if s := (*lib.TJSContext)(ptr(vm.ctx)).Frandom_state; s >= before && s <= after+1 {
		t.Errorf("a new VM's Math.random is seeded with the time: %d in [%d, %d]", s, before, after)
	}
}

// TestRegionNotData: a VM's region is reserved inaccessible and made
// writable as the heap grows: a writable reservation counts a gigabyte
// per VM in the process's data (RLIMIT_DATA), which a sandbox worker
// then could not be bounded by (issue 19, attack14 I8).
func TestRegionNotData(t *testing.T) {
	before := vmData(t)
	vms := make([]*VM, 4)
	for i := range vms {
		vm, err := New()
		if err != nil {
			t.Fatal(err)
		}
		defer vm.Close()
		vms[i] = vm
	}
	if grew := vmData(t) - before; grew > 256<<20 {
		t.Errorf("four new VMs grew the process's data by %d MiB", grew>>20)
	}
	// A heap still grows to its limit, and gives the commit back at
	// Reset.
	vm := vms[0]
	vm.Snapshot()
	vm.SetMemoryLimit(256 << 20)
	eval(t, vm, `globalThis.a = []; for (let i = 0; i < 2000000; i++) a.push({i}); a.length`)
	vm.Reset()
	eval(t, vm, `1`)
}

// vmData is the process's data (VmData), in bytes.
func vmData(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmData:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmData")
	return 0
}
