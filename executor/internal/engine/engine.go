// Package engine is the executor's thin layer over QuickJS as
// modernc.org/libquickjs transpiles it to Go: a VM (one runtime, one
// context), the calls the executor makes into it, host functions called
// by magic number without reflection, and values built from Go — tool
// results parsed from JSON straight into objects, arrays and strings of
// the VM (ParseJSON), about twice as fast as the engine's JSON.parse.
//
// modernc.org/quickjs keeps the context of its VM unexported, so building
// values from Go needs a layer of our own; this one does only what the
// executor uses. A VM is not safe for concurrent use, except Interrupt.
//
// Values follow QuickJS's reference counting: every Value a method
// returns is owned by the caller, who frees it (Free) exactly once;
// arguments are borrowed unless a method says it takes them. A VM that a
// Go panic went through is broken: Close then leaks its memory rather
// than touch it.
package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/libquickjs"
)

// Value is a JavaScript value of a VM.
type Value = lib.TJSValue

// Undefined and Null are the values of every VM.
var (
	Undefined = undefined
	Null      = null
)

// IsUndefined reports whether v is undefined.
func IsUndefined(v Value) bool { return tagOf(v) == lib.EJS_TAG_UNDEFINED }

// Eval flags.
const (
	EvalGlobal = lib.MJS_EVAL_TYPE_GLOBAL
	// EvalAsync is JS_EVAL_FLAG_ASYNC: a global script that may use
	// top-level await, evaluating to a promise of {value: completion}.
	EvalAsync = 1 << 7
)

// Func is a host function: it gets the call's arguments, borrowed, and
// returns a value the engine takes, or the result of a Throw method.
type Func func(args []Value) Value

// VM is a QuickJS runtime with one context.
type VM struct {
	tls  *libc.TLS
	rt   uintptr
	ctx  uintptr
	heap *heap
	intr *interruptData // Go memory: Interrupt may run after Close
	// funcs are the host functions, by magic number.
	funcs []Func
	// buf is a C buffer for strings on their way in.
	buf    uintptr
	bufCap int
	// panicked is what a host function panicked with; the call into the
	// VM that led to it fails with it.
	panicked any
	broken   bool
	closed   bool
	// image is the VM as Snapshot kept it, for Reset; nFuncs is how many
	// host functions it had then.
	image  *heapImage
	nFuncs int
}

// interruptData is what the interrupt handler reads: a stop that stays
// once requested, and a deadline on the monotonic clock.
type interruptData struct {
	stop     atomic.Int32
	deadline atomic.Int64 // nanoseconds since monoBase; 0: none
}

var monoBase = time.Now()

func monotonic() int64 { return int64(time.Since(monoBase)) }

// vms maps a context to its VM, for host functions.
var vms sync.Map // uintptr → *VM

// New makes a VM with no limits and the engine's default stack limit,
// with a heap of its own (see heap.go).
func New() (*VM, error) {
	h, err := newHeap()
	if err != nil {
		return nil, err
	}
	tls := libc.NewTLS()
	rt := lib.XJS_NewRuntime2(tls, heapFuncs, uintptr(unsafe.Pointer(h)))
	if rt == 0 {
		tls.Close()
		h.release()
		return nil, errors.New("engine: cannot create a runtime")
	}
	// The stack limit counts libc.TLS stack slots (about one per
	// JavaScript call frame), see modernc.org/libquickjs.
	lib.XJS_SetMaxStackSize(tls, rt, lib.MaxStackSlots)
	ctx := lib.XJS_NewContext(tls, rt)
	if ctx == 0 {
		lib.XJS_FreeRuntime(tls, rt)
		tls.Close()
		h.release()
		return nil, errors.New("engine: cannot create a context")
	}
	// The engine seeds Math.random with the time in microseconds
	// (js_random_init): a guess away from another VM's. Seeded as Reset
	// seeds it (issue 19, attack14).
	(*lib.TJSContext)(ptr(ctx)).Frandom_state = rand.Uint64() | 1
	vm := &VM{tls: tls, rt: rt, ctx: ctx, heap: h, intr: &interruptData{}}
	lib.XJS_SetInterruptHandler(tls, rt, fp(onInterrupt), uintptr(unsafe.Pointer(vm.intr)))
	vms.Store(ctx, vm)
	return vm, nil
}

// Snapshot keeps the VM as it is now, for Reset to bring back. Nothing
// may run in it meanwhile, and the values the caller holds stay valid
// across a Reset only if they were held at Snapshot.
//
// All of a VM's state is in its heap (runtime, context, atoms, shapes,
// objects, jobs, the GC's lists) at addresses that do not change, except
// what this type holds in Go and a few fields that Reset sets again. The
// engine keeps no state of a VM in the process's C statics (class ids are
// allocated only by JS_NewClassID, which this layer never calls), and its
// stack depth is counted on the VM's libc.TLS, which is at its base
// between calls.
func (vm *VM) Snapshot() {
	vm.image = vm.heap.snapshot()
	vm.nFuncs = len(vm.funcs)
}

// ImageSize is the bytes Snapshot kept, which each Reset copies back: the
// used part of the VM's region and its large blocks.
func (vm *VM) ImageSize() int {
	if vm.image == nil {
		return 0
	}
	n := len(vm.image.bytes)
	for _, m := range vm.image.large {
		n += len(m)
	}
	return n
}

// Dirty returns the bytes a Reset would clear or unmap: what the VM's
// programs used since Snapshot or the last Reset, beyond the image. A
// Reset costs about a copy of the image plus this.
func (vm *VM) Dirty() int {
	if vm.image == nil || vm.dead() {
		return 0
	}
	return vm.heap.dirty(vm.image)
}

// Reset brings the VM back to what Snapshot kept, byte for byte: nothing
// a program did since (globals, prototypes, atoms, jobs, weak references,
// memory) is left, and none of the bytes it wrote can be read. Math.random
// gets a new seed, as a new VM would; the interrupt, the deadline, the
// memory and stack limits are those of the snapshot. It reports false
// when the VM cannot be reset (no snapshot, broken, killed or closed): it
// must then be closed.
func (vm *VM) Reset() bool {
	if vm.image == nil || vm.closed || vm.dead() {
		return false
	}
	if !vm.heap.restore(vm.image) {
		return false
	}
	// The runtime's interrupt handler and its opaque, vm.intr, are in the
	// image; a stop requested of the run before is not for the next.
	vm.intr.stop.Store(0)
	vm.intr.deadline.Store(0)
	(*lib.TJSContext)(ptr(vm.ctx)).Frandom_state = rand.Uint64() | 1
	clear(vm.funcs[vm.nFuncs:])
	vm.funcs = vm.funcs[:vm.nFuncs]
	vm.panicked = nil
	return true
}

// Close releases the VM. Values of it must all have been freed.
func (vm *VM) Close() {
	if vm.closed {
		return
	}
	vm.closed = true
	vms.Delete(vm.ctx)
	if vm.heap.killed.Load() {
		vm.broken = true
	}
	if vm.buf != 0 {
		libc.Xfree(vm.tls, vm.buf)
	}
	if !vm.broken {
		lib.XJS_FreeContext(vm.tls, vm.ctx)
		lib.XJS_FreeRuntime(vm.tls, vm.rt)
	} else {
		// What the engine left may be anything: the region is not kept.
		vm.heap.killed.Store(true)
	}
	vm.heap.release()
	vm.tls.Close()
}

// Kill stops the VM wherever it is, inside a built-in's own loop too, by
// taking its memory away (see heap.go), and interrupts it. It may be
// called from any goroutine. The goroutine that runs the VM must have
// asked to panic on faults (debug.SetPanicOnFault): it panics at its next
// access to the VM's memory, and the VM is broken. Close then unmaps its
// memory.
func (vm *VM) Kill() {
	vm.Interrupt()
	vm.heap.kill()
}

// Broken reports whether a Go panic went up through the engine, which
// may have left it in any state: such a VM can only be closed.
func (vm *VM) Broken() bool { return vm.broken }

// guard marks the VM broken when a panic goes up through a call into it.
// Deferred by every method that enters the engine's code.
func (vm *VM) guard() {
	if p := recover(); p != nil {
		vm.broken = true
		panic(p)
	}
}

// onInterrupt is the engine's interrupt handler, polled from its
// bytecode loop: non-zero stops the script with an uncatchable
// InternalError "interrupted".
func onInterrupt(tls *libc.TLS, rt, opaque uintptr) int32 {
	d := (*interruptData)(ptr(opaque))
	if d.stop.Load() != 0 {
		return 1
	}
	if t := d.deadline.Load(); t != 0 && monotonic() >= t {
		return 1
	}
	return 0
}

// Interrupt stops whatever the VM runs, now and from then on: every later
// call into it is interrupted too, until Reset, as a VM serves one program
// between Resets. It may be called from any goroutine, also after Close;
// the caller orders it before Reset, which would undo it.
func (vm *VM) Interrupt() { vm.intr.stop.Store(1) }

// Interrupted reports whether Interrupt was called or the deadline passed.
func (vm *VM) Interrupted() bool {
	return onInterrupt(nil, 0, uintptr(unsafe.Pointer(vm.intr))) != 0
}

// SetDeadline interrupts the VM at t; the zero time means never.
func (vm *VM) SetDeadline(t time.Time) {
	if t.IsZero() {
		vm.intr.deadline.Store(0)
		return
	}
	vm.intr.deadline.Store(max(monotonic()+int64(time.Until(t)), 1))
}

// SetMemoryLimit caps the heap, in bytes (at least 128 KiB, which the
// engine needs to report running out of it).
func (vm *VM) SetMemoryLimit(n int64) {
	lib.XJS_SetMemoryLimit(vm.tls, vm.rt, lib.Tsize_t(max(n, 128<<10)))
}

// Refused returns how many of the engine's allocations the heap has
// refused since the VM was made (past the memory limit, or with no memory
// to map), Resets included: a caller compares two counts. Each refusal
// is an "out of memory" exception, which the program may catch, and which
// the engine drops when it is thrown inside a promise job's internal
// handler (an element of Promise.all or allSettled), leaving the promise
// it would have settled pending for ever.
func (vm *VM) Refused() uint64 { return vm.heap.refused.Load() }

// SetMaxStack caps the call depth, in libc.TLS stack slots (about one
// per JavaScript call frame).
func (vm *VM) SetMaxStack(slots int) {
	lib.XJS_SetMaxStackSize(vm.tls, vm.rt, lib.Tsize_t(slots))
}

// Error is a JavaScript exception that came out of the VM.
type Error struct {
	Name, Message, Stack string
	// Line and Column are set for syntax errors.
	Line, Column int
	// Raw is the exception converted to a string.
	Raw string
}

func (e *Error) Error() string { return e.Raw }

// PanicError is a call into the VM that a host function panicked in.
type PanicError struct{ Value any }

func (e *PanicError) Error() string { return fmt.Sprintf("a host function panicked: %v", e.Value) }

// ErrDrainBound is how RunJobs reports a job queue it stopped draining: a
// program that keeps queueing jobs, which the deadline ends.
var ErrDrainBound = errors.New("engine: aborted draining a job queue that keeps growing")

// evalName is the file name of every script: the executor's prelude and
// programs share it.
var evalName = [...]byte{'<', 'e', 'v', 'a', 'l', '>', 0}

// Eval evaluates src as a global script (flags: EvalGlobal, EvalAsync).
func (vm *VM) Eval(src string, flags int) (Value, error) {
	defer vm.guard()
	p, n := vm.cString(src)
	defer libc.Xfree(vm.tls, p)
	return vm.result(lib.XJS_Eval(vm.tls, vm.ctx, p, lib.Tsize_t(n), uintptr(unsafe.Pointer(&evalName)), int32(flags)))
}

// Compile compiles src as a global script to bytecode for EvalBytecode.
func (vm *VM) Compile(src string) ([]byte, error) {
	defer vm.guard()
	p, n := vm.cString(src)
	defer libc.Xfree(vm.tls, p)
	obj, err := vm.result(lib.XJS_Eval(vm.tls, vm.ctx, p, lib.Tsize_t(n), uintptr(unsafe.Pointer(&evalName)), lib.MJS_EVAL_TYPE_GLOBAL|lib.MJS_EVAL_FLAG_COMPILE_ONLY))
	if err != nil {
		return nil, err
	}
	defer vm.Free(obj)
	size := vm.tls.Alloc(int(unsafe.Sizeof(lib.Tsize_t(0))))
	defer vm.tls.Free(int(unsafe.Sizeof(lib.Tsize_t(0))))
	b := lib.XJS_WriteObject(vm.tls, vm.ctx, size, obj, lib.MJS_WRITE_OBJ_BYTECODE)
	if b == 0 {
		return nil, vm.exception()
	}
	defer lib.Xjs_free(vm.tls, vm.ctx, b)
	return append([]byte(nil), unsafe.Slice((*byte)(ptr(b)), *(*lib.Tsize_t)(ptr(size)))...), nil
}

// Bytecode is compiled code kept in C memory, to be evaluated in many VMs.
type Bytecode struct {
	p uintptr
	n int
}

// NewBytecode keeps code for EvalBytecode. Its memory is never released:
// it is made once per process.
func NewBytecode(code []byte) *Bytecode {
	p := libc.Xmalloc(nil, lib.Tsize_t(max(len(code), 1)))
	copy(unsafe.Slice((*byte)(ptr(p)), len(code)), code)
	return &Bytecode{p: p, n: len(code)}
}

// EvalBytecode evaluates code that Compile made, in this engine version.
func (vm *VM) EvalBytecode(code *Bytecode) (Value, error) {
	defer vm.guard()
	obj := lib.XJS_ReadObject(vm.tls, vm.ctx, code.p, lib.Tsize_t(code.n), lib.MJS_READ_OBJ_BYTECODE)
	if tagOf(obj) == lib.EJS_TAG_EXCEPTION {
		return Undefined, vm.exception()
	}
	return vm.result(lib.XJS_EvalFunction(vm.tls, vm.ctx, obj)) // takes obj
}

// Call calls f with this and args.
func (vm *VM) Call(f, this Value, args ...Value) (Value, error) {
	defer vm.guard()
	n := len(args) * int(valueSize)
	var argv uintptr
	if n > 0 {
		argv = vm.tls.Alloc(n)
		defer vm.tls.Free(n)
		copy(unsafe.Slice((*Value)(ptr(argv)), len(args)), args)
	}
	return vm.result(lib.XJS_Call(vm.tls, vm.ctx, f, this, int32(len(args)), argv))
}

// RunJobs runs the queued jobs (promise reactions, async continuations)
// until the queue is empty. It reports the first exception a job threw,
// stops at an interrupt, and gives up with ErrDrainBound on a queue that
// keeps growing.
func (vm *VM) RunJobs() error {
	defer vm.guard()
	pctx := vm.tls.Alloc(int(unsafe.Sizeof(uintptr(0))))
	defer vm.tls.Free(int(unsafe.Sizeof(uintptr(0))))
	var first error
	const maxJobs = 1 << 20
	for range maxJobs {
		r := lib.XJS_ExecutePendingJob(vm.tls, vm.rt, pctx)
		if r == 0 {
			return first
		}
		if vm.panicked != nil {
			return vm.takePanic()
		}
		if r < 0 {
			if err := vm.exception(); first == nil {
				first = err
			}
		}
		if vm.Interrupted() {
			if first == nil {
				first = &Error{Name: "InternalError", Message: "interrupted", Raw: "InternalError: interrupted"}
			}
			return first
		}
	}
	if first == nil {
		first = ErrDrainBound
	}
	return first
}

// Free releases v. It does nothing once the VM is broken or killed:
// its memory may be anything, or gone.
func (vm *VM) Free(v Value) {
	if tagOf(v) >= 0 || vm.dead() {
		return // no reference count
	}
	vm.free(v)
}

// free releases v's reference. Kill may take the VM's memory away from
// another goroutine between Free's check and the engine's access: the
// fault (a panic, on a goroutine that asked for one) then leaves the VM
// broken, and nothing to free; it must not end the goroutine, which may
// be releasing what a run held as the run ends.
func (vm *VM) free(v Value) {
	defer vm.survive()
	lib.XFreeValue(vm.tls, vm.ctx, v)
}

// survive ends a panic that a fault on the VM's memory made once Kill
// had taken it away; any other panic goes on.
func (vm *VM) survive() {
	if p := recover(); p != nil {
		vm.broken = true
		if !vm.heap.killed.Load() {
			panic(p)
		}
	}
}

// Dup returns another reference to v.
func (vm *VM) Dup(v Value) Value {
	if tagOf(v) >= 0 || vm.dead() {
		return v
	}
	return lib.XDupValue(vm.tls, vm.ctx, v)
}

// dead reports whether the engine must not be touched any more.
func (vm *VM) dead() bool { return vm.broken || vm.heap.killed.Load() }

// Killed reports whether Kill was called.
func (vm *VM) Killed() bool { return vm.heap.killed.Load() }

// Get returns the property name of obj.
func (vm *VM) Get(obj Value, name string) (Value, error) {
	defer vm.guard()
	p, _ := vm.cString(name)
	defer libc.Xfree(vm.tls, p)
	return vm.result(lib.XJS_GetPropertyStr(vm.tls, vm.ctx, obj, p))
}

// SetGlobalFunc makes the global property name a function of argc
// arguments that calls f: writable, configurable and not enumerable.
func (vm *VM) SetGlobalFunc(name string, argc int, f Func) error {
	defer vm.guard()
	magic := len(vm.funcs)
	vm.funcs = append(vm.funcs, f)
	p, _ := vm.cString(name)
	defer libc.Xfree(vm.tls, p)
	fn := lib.XJS_NewCFunction2(vm.tls, vm.ctx, fp(callHost), p, int32(argc), lib.EJS_CFUNC_generic_magic, int32(magic))
	if tagOf(fn) == lib.EJS_TAG_EXCEPTION {
		return vm.exception()
	}
	g := lib.XJS_GetGlobalObject(vm.tls, vm.ctx)
	defer vm.Free(g)
	// Takes fn, also when it fails.
	if lib.XJS_DefinePropertyValueStr(vm.tls, vm.ctx, g, p, fn, lib.MJS_PROP_WRITABLE|lib.MJS_PROP_CONFIGURABLE|lib.MJS_PROP_THROW) < 0 {
		return vm.exception()
	}
	return nil
}

// callHost is the C function of every host function: magic is its index
// in its VM's funcs. A panic does not go up through the engine: it
// becomes an uncatchable exception, and the call into the VM that led
// here fails with a PanicError.
func callHost(tls *libc.TLS, ctx uintptr, this Value, argc int32, argv uintptr, magic int32) (r Value) {
	x, ok := vms.Load(ctx)
	if !ok {
		return exception
	}
	vm := x.(*VM)
	defer func() {
		if p := recover(); p != nil {
			if vm.heap.killed.Load() {
				panic(p) // its memory is gone: out of the engine, at once
			}
			if vm.panicked == nil {
				vm.panicked = p
			}
			r = vm.ThrowInternal("a host function failed", true)
		}
	}()
	var args []Value
	if argc > 0 {
		args = unsafe.Slice((*Value)(ptr(argv)), argc)
	}
	r = vm.funcs[magic](args)
	if vm.Interrupted() {
		// The script that called must end too, whatever the function
		// returned: the engine would notice only later.
		vm.Free(r)
		r = vm.ThrowInternal("interrupted", true)
	}
	return r
}

// ThrowTypeError throws a TypeError with msg; a host function returns
// what it returns.
func (vm *VM) ThrowTypeError(msg string) Value {
	return vm.throw(lib.XJS_ThrowTypeError, msg)
}

// ThrowRangeError throws a RangeError with msg; a host function returns
// what it returns.
func (vm *VM) ThrowRangeError(msg string) Value {
	return vm.throw(lib.XJS_ThrowRangeError, msg)
}

// ThrowInternal throws an InternalError with msg. An uncatchable one runs
// no catch or finally block of the script, as for an interrupt.
func (vm *VM) ThrowInternal(msg string, uncatchable bool) Value {
	r := vm.throw(lib.XJS_ThrowInternalError, msg)
	if uncatchable {
		lib.XJS_SetUncatchableException(vm.tls, vm.ctx, 1)
	}
	return r
}

// percentS is the C format of every message thrown: a message is never
// the format itself.
var percentS = [...]byte{'%', 's', 0}

func (vm *VM) throw(f func(*libc.TLS, uintptr, uintptr, uintptr) Value, msg string) Value {
	p, _ := vm.cString(validUTF8(msg))
	defer libc.Xfree(vm.tls, p)
	va := vm.tls.Alloc(16)
	defer vm.tls.Free(16)
	return f(vm.tls, vm.ctx, uintptr(unsafe.Pointer(&percentS)), libc.VaList(va+8, p))
}

// result returns v, or the pending exception as an error when v is the
// exception marker.
func (vm *VM) result(v Value) (Value, error) {
	if vm.panicked != nil {
		vm.Free(v)
		return Undefined, vm.takePanic()
	}
	if tagOf(v) == lib.EJS_TAG_EXCEPTION {
		return Undefined, vm.exception()
	}
	return v, nil
}

// takePanic drops the exception thrown in place of a host function's
// panic and returns the panic as an error.
func (vm *VM) takePanic() error {
	p := vm.panicked
	vm.panicked = nil
	if lib.XJS_HasException(vm.tls, vm.ctx) != 0 {
		vm.Free(lib.XJS_GetException(vm.tls, vm.ctx))
	}
	lib.XJS_SetUncatchableException(vm.tls, vm.ctx, 0)
	return &PanicError{Value: p}
}

// exception takes the pending exception and describes it. Reading its
// properties may run the program's getters; what cannot be read stays
// empty.
func (vm *VM) exception() error {
	if vm.panicked != nil {
		return vm.takePanic()
	}
	e := lib.XJS_GetException(vm.tls, vm.ctx)
	defer vm.Free(e)
	return &Error{
		Raw:     vm.errString(e),
		Name:    vm.errProp(e, "name"),
		Message: vm.errProp(e, "message"),
		Stack:   vm.errProp(e, "stack"),
		Line:    vm.errInt(e, "lineNumber"),
		Column:  vm.errInt(e, "columnNumber"),
	}
}

// errString converts v to a string, or "" with the exception dropped.
func (vm *VM) errString(v Value) string {
	s, ok := vm.toString(v)
	if !ok {
		vm.Free(lib.XJS_GetException(vm.tls, vm.ctx))
	}
	return s
}

func (vm *VM) errProp(v Value, name string) string {
	p, _ := vm.cString(name)
	defer libc.Xfree(vm.tls, p)
	x := lib.XJS_GetPropertyStr(vm.tls, vm.ctx, v, p)
	if tagOf(x) == lib.EJS_TAG_EXCEPTION {
		vm.Free(lib.XJS_GetException(vm.tls, vm.ctx))
		return ""
	}
	defer vm.Free(x)
	if t := tagOf(x); t != lib.EJS_TAG_STRING && t != lib.EJS_TAG_STRING_ROPE {
		return ""
	}
	return vm.errString(x)
}

func (vm *VM) errInt(v Value, name string) int {
	p, _ := vm.cString(name)
	defer libc.Xfree(vm.tls, p)
	x := lib.XJS_GetPropertyStr(vm.tls, vm.ctx, v, p)
	if tagOf(x) == lib.EJS_TAG_EXCEPTION {
		vm.Free(lib.XJS_GetException(vm.tls, vm.ctx))
		return 0
	}
	defer vm.Free(x)
	n, _ := ToNumber(x)
	return int(n)
}

// String returns v, a string, as Go text: a lone surrogate becomes
// U+FFFD. It reports false for a value that is not a string, and for a
// string the heap has no room to convert.
func (vm *VM) String(v Value) (string, bool) {
	if t := tagOf(v); t != lib.EJS_TAG_STRING && t != lib.EJS_TAG_STRING_ROPE {
		return "", false
	}
	s, ok := vm.toString(v)
	if !ok {
		vm.Free(lib.XJS_GetException(vm.tls, vm.ctx))
	}
	return s, ok
}

// toString converts v with the engine's ToString; on failure the
// exception is pending.
func (vm *VM) toString(v Value) (string, bool) {
	size := int(unsafe.Sizeof(lib.Tsize_t(0)))
	plen := vm.tls.Alloc(size)
	defer vm.tls.Free(size)
	p := lib.XJS_ToCStringLen2(vm.tls, vm.ctx, plen, v, 0)
	if p == 0 {
		return "", false
	}
	defer lib.XJS_FreeCString(vm.tls, vm.ctx, p)
	return wellFormed(unsafe.Slice((*byte)(ptr(p)), *(*lib.Tsize_t)(ptr(plen)))), true
}

// Int returns n as a number.
func Int(n int) Value {
	if n >= -1<<31 && n < 1<<31 {
		return mkInt32(int32(n))
	}
	return mkFloat(float64(n))
}

// Float returns f as a number.
func Float(f float64) Value { return mkFloat(f) }

// Bool returns b as a boolean.
func Bool(b bool) Value { return mkBool(b) }

// ToNumber returns v as a float64 when it is a number.
func ToNumber(v Value) (float64, bool) {
	switch tagOf(v) {
	case lib.EJS_TAG_INT:
		return float64(int32Of(v)), true
	case lib.EJS_TAG_FLOAT64:
		return float64Of(v), true
	}
	return 0, false
}

// ToBool returns v as a bool when it is a boolean.
func ToBool(v Value) (b, ok bool) {
	if tagOf(v) != lib.EJS_TAG_BOOL {
		return false, false
	}
	return int32Of(v) != 0, true
}

// NewString makes a string of s; invalid UTF-8 becomes U+FFFD.
func (vm *VM) NewString(s string) (Value, error) {
	s = validUTF8(s)
	p := vm.scratch(len(s))
	copy(unsafe.Slice((*byte)(ptr(p)), len(s)), s)
	return vm.result(lib.XJS_NewStringLen(vm.tls, vm.ctx, p, lib.Tsize_t(len(s))))
}

// NewPromise returns a promise and the functions that resolve and reject
// it.
func (vm *VM) NewPromise() (promise, resolve, reject Value, err error) {
	defer vm.guard()
	n := 2 * int(valueSize)
	funcs := vm.tls.Alloc(n)
	defer vm.tls.Free(n)
	promise, err = vm.result(lib.XJS_NewPromiseCapability(vm.tls, vm.ctx, funcs))
	if err != nil {
		return Undefined, Undefined, Undefined, err
	}
	fs := unsafe.Slice((*Value)(ptr(funcs)), 2)
	return promise, fs[0], fs[1], nil
}

// scratch returns the VM's C buffer with room for n bytes and a NUL.
func (vm *VM) scratch(n int) uintptr {
	if n+1 > vm.bufCap {
		c := max(n+1, 2*vm.bufCap, 4096)
		if vm.buf != 0 {
			libc.Xfree(vm.tls, vm.buf)
		}
		vm.buf = libc.Xmalloc(vm.tls, lib.Tsize_t(c))
		if vm.buf == 0 {
			panic("engine: out of C memory")
		}
		vm.bufCap = c
	}
	*(*byte)(ptr(vm.buf + uintptr(n))) = 0
	return vm.buf
}

// cString copies s into C memory with a NUL, for the caller to free.
func (vm *VM) cString(s string) (uintptr, int) {
	p := libc.Xmalloc(vm.tls, lib.Tsize_t(len(s)+1))
	if p == 0 {
		panic("engine: out of C memory")
	}
	b := unsafe.Slice((*byte)(ptr(p)), len(s)+1)
	copy(b, s)
	b[len(s)] = 0
	return p, len(s)
}

// ptr converts an address in C memory (or of Go memory kept alive
// elsewhere) to a pointer.
func ptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// fp returns the code pointer of a Go function for the engine to call,
// as modernc.org/quickjs does.
func fp(f any) uintptr {
	type iface [2]uintptr
	return (*iface)(unsafe.Pointer(&f))[1]
}

// wellFormed returns b, UTF-8 the engine wrote from a JavaScript string,
// as a Go string with U+FFFD for each lone surrogate, which the engine
// writes as the three bytes of its code point (not UTF-8).
func wellFormed(b []byte) string {
	var r []byte
	for i := 0; i+2 < len(b); i++ {
		if b[i] != 0xed || b[i+1] < 0xa0 {
			continue
		}
		if r == nil {
			r = append([]byte(nil), b...)
		}
		copy(r[i:], "\uFFFD")
		i += 2
	}
	if r == nil {
		return string(b)
	}
	return unsafe.String(unsafe.SliceData(r), len(r))
}

// validUTF8 returns s with U+FFFD for each byte that does not start valid
// UTF-8, as Go decodes it: the engine would skip what follows such a
// byte.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*utf8.UTFMax)
	for _, r := range s { // an invalid byte comes as utf8.RuneError
		b.WriteRune(r)
	}
	return b.String()
}
