package engine

import (
	"runtime/debug"
	"testing"
	"time"
)

// TestKill stops VMs stuck inside built-ins, which poll no interrupt: the
// goroutine that runs each leaves the engine, and the next VM works.
func TestKill(t *testing.T) {
	t.Parallel()
	for _, code := range []string{
		"Array.prototype.indexOf.call({length: 2 ** 53 - 1}, 1)",
		"const r = []; r.length = 2 ** 32 - 1; r.join(',')",
		// Reads a large block (a mapping of its own) for seconds: the
		// typed array's own lastIndexOf is done in a few hundred
		// milliseconds, sooner than the test interrupts it on a quiet machine.
		"Array.prototype.lastIndexOf.call(new Uint8Array(1 << 26).fill(1), 3)",
		"'x'.repeat(1 << 27).lastIndexOf('y')",
	} {
		t.Run(code, func(t *testing.T) {
			vm, err := New()
			if err != nil {
				t.Fatal(err)
			}
			vm.SetMemoryLimit(512 << 20)
			done := make(chan any, 1)
			go func() {
				debug.SetPanicOnFault(true)
				defer func() { done <- recover() }()
				v, err := vm.Eval(code, EvalGlobal)
				vm.Free(v)
				done <- err
			}()
			time.Sleep(50 * time.Millisecond)
			vm.Interrupt()
			select {
			case r := <-done:
				t.Fatalf("ended on an interrupt (%v): not stuck in a built-in", r)
			case <-time.After(50 * time.Millisecond):
			}
			vm.Kill()
			select {
			case r := <-done:
				t.Logf("ended with %v", r)
			case <-time.After(time.Minute):
				t.Fatal("still running a minute after Kill")
			}
			if !vm.Killed() {
				t.Error("Killed() is false")
			}
			vm.Close()

			next, err := New()
			if err != nil {
				t.Fatal(err)
			}
			defer next.Close()
			v, err := next.Eval("[1, 2, 3].map(x => x * 2).join()", EvalGlobal)
			if err != nil {
				t.Fatal(err)
			}
			if s, _ := next.String(v); s != "2,4,6" {
				t.Errorf("next VM: %q", s)
			}
			next.Free(v)
		})
	}
}

// TestFreeAfterKill: Kill may take a VM's memory away while its goroutine
// is freeing the values a run held (after Free checked the VM was alive):
// the fault leaves the VM broken, and the goroutine goes on.
func TestFreeAfterKill(t *testing.T) {
	t.Parallel()
	vm, err := New()
	if err != nil {
		t.Fatal(err)
	}
	_, resolve, reject, err := vm.NewPromise()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan any, 1)
	go func() {
		debug.SetPanicOnFault(true)
		defer func() { done <- recover() }()
		vm.Kill()
		vm.free(resolve) // as if Kill came just after Free's check
		vm.Free(reject)
	}()
	if p := <-done; p != nil {
		t.Fatalf("freeing a value of a killed VM panicked: %v", p)
	}
	if !vm.Broken() {
		t.Error("the VM is not broken after a fault")
	}
	vm.Close()
}
