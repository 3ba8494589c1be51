package executor

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/codecell/codecell/executor/internal/engine"
)

// This file is the side of a run that lives beside its VM: in this process
// with in-process isolation, in a worker process otherwise. It knows
// nothing of dispatchers, deadlines or records; it runs a jobSpec on a
// fresh VM, reports tool calls, console lines and progress to a jobHost,
// settles tool calls with the results it is handed, and returns an
// outcome.

//go:embed prelude.js
var preludeJS string

// preludeLine is the prelude's first line. QuickJS names every script
// <eval>; starting the prelude a million lines down keeps its frames from
// ever passing for the program's, which is far shorter (MaxCodeBytes).
// Compiling the blank lines costs a few milliseconds, once per process.
const preludeLine = 1 << 20

// compilePrelude compiles the runtime every VM loads before its program.
func compilePrelude() (*engine.Bytecode, error) {
	vm, err := engine.New()
	if err != nil {
		return nil, fmt.Errorf("compile prelude: %w", err)
	}
	defer vm.Close()
	code, err := vm.Compile(strings.Repeat("\n", preludeLine-1) + preludeJS)
	if err != nil {
		return nil, fmt.Errorf("compile prelude: %w", err)
	}
	return engine.NewBytecode(code), nil
}

// jobSpec is everything a VM needs to run one program. It crosses the pipe
// to a worker as it is (see encodeSpec).
type jobSpec struct {
	Src  string
	Args []byte // nil: no global args
	// Pin, when set, pins Math.random and the clock (Request.Pin).
	Pin         *Pin
	Layout      *Layout
	Memory      int64
	Stack       int
	MaxCalls    int
	MaxLogLines int
	MaxLogBytes int
	MaxResult   int
	// Timeout is the VM's own deadline, a second line of defence behind
	// the executor's.
	Timeout time.Duration
	// KillAt, when not 0, is when a worker process running this root
	// job kills itself if the job has not ended by then, on the system's
	// monotonic clock (see deathTimer): its deadline plus killGrace.
	KillAt int64
	// Nested jobs take a new VM instead of the one prepared for the next
	// run.
	Nested bool
}

// jobHost receives what a job reports while it runs, on the job's
// goroutine. It must not block for long.
type jobHost interface {
	call(id uint32, name, args string)
	log(level int, text string)
	progress(message string, fraction float64)
}

// flusher is a jobHost that holds the calls a job makes until the VM
// waits: flush starts them, inFlight being the job's calls not yet
// settled, these included, or -1 as the job ends. A host that tells the
// executor which results the VM has taken (workerHost) does so with the
// calls it flushes, or on acknowledge, which the VM calls as it takes
// the next results while calls are in flight.
//
// flush reports whether the VM now waits for one call alone, which the
// host sent flagged callSole (workerHost): the job then lends its turn to
// whoever delivers that call's result (inbox.lend, vmJob.resume).
type flusher interface {
	flush(inFlight int) (sole bool)
	acknowledge()
}

// outcomeStatus says how a job ended.
type outcomeStatus uint8

const (
	outValue     outcomeStatus = iota // payload: the result as JSON
	outThrown                         // payload: the prelude's description of the exception (JSON)
	outJSError                        // name, message, stack, raw, line, col: an exception from the engine
	outLimit                          // kind (and size): a limit the VM enforces
	outStopped                        // the host asked the job to stop
	outUnsettled                      // the program awaits a promise nothing can settle; kind KindMemory: after the heap ran out
	outInternal                       // message: a fault in codecell
	outLost                           // the VM was lost with its worker, or left behind (executor side only)
)

// outcome is how a job ended, as the VM saw it. The executor turns it
// into a run's result or error.
type outcome struct {
	status  outcomeStatus
	wrapped bool // the program ran as the body of a function
	payload []byte
	kind    Kind
	size    int64
	name    string
	message string
	stack   string
	raw     string
	line    int
	col     int
}

// callResult is a finished tool call handed to its job: the result, or a
// rejection, as JSON.
type callResult struct {
	id uint32
	ok bool
	// prepared: payload is a result handed early (Call.Prepare), to be
	// built into the VM, the call left pending; confirmed: the call is
	// settled with the value built, and payload is empty.
	prepared, confirmed bool
	payload             []byte
	// done, when set, is called once the sandbox has the result, or
	// drops it (Call.OnConsumed); it is not sent to a worker.
	done func()
}

// flags encodes c's kind in a frameResult.
func (c callResult) flags() byte {
	var f byte
	if c.ok {
		f |= resultOK
	}
	if c.prepared {
		f |= resultPrepared
	}
	if c.confirmed {
		f |= resultConfirmed
	}
	return f
}

// consumed calls c.done, if any.
func (c callResult) consumed() {
	if c.done != nil {
		c.done()
	}
}

// inbox queues call results for a job without ever blocking the sender.
type inbox struct {
	mu     sync.Mutex
	items  []callResult
	closed bool // the job is over: results are dropped as they come
	// lent is set while the job's goroutine has lent its turn to the
	// next push (inbox.lend).
	lent   bool
	signal chan struct{}
}

// push queues c. It reports whether the job had lent its turn: the
// caller then holds it, and runs the job on (vmJob.resume) instead of
// waking the job's goroutine.
func (b *inbox) push(c callResult) (turn bool) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		c.consumed()
		return false
	}
	b.items = append(b.items, c)
	if b.lent {
		b.lent = false
		b.mu.Unlock()
		return true
	}
	b.mu.Unlock()
	select {
	case b.signal <- struct{}{}:
	default:
	}
	return false
}

// lend lends the job's turn to the next push, unless a result is queued
// already or the job is over; it reports whether it did.
func (b *inbox) lend() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.items) > 0 || b.closed {
		return false
	}
	b.lent = true
	return true
}

// reclaim takes back a turn lent and not yet taken; it reports whether
// there was one.
func (b *inbox) reclaim() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	lent := b.lent
	b.lent = false
	return lent
}

// close drops the results queued and those that come later: their
// holds end (callResult.consumed).
func (b *inbox) close() {
	b.mu.Lock()
	items := b.items
	b.items, b.closed = nil, true
	b.mu.Unlock()
	for _, c := range items {
		c.consumed()
	}
}

func (b *inbox) drain(into []callResult) []callResult {
	b.mu.Lock()
	into = append(into, b.items...)
	clear(b.items)
	b.items = b.items[:0]
	b.mu.Unlock()
	return into
}

// vmJob is one program on one VM. Apart from stop and the inbox it is
// touched only on the goroutine that runs it, where the host functions run
// too.
type vmJob struct {
	spec *jobSpec
	host jobHost
	in   *instance

	inbox inbox
	// turn comes back to the job's goroutine when it lent its turn
	// (lend) and the goroutine that took it is done (resume).
	turn     chan struct{}
	stopOnce sync.Once
	stopped  chan struct{}
	// mu orders stop against the start and the end of the job: the VM is
	// interrupted once it is there, and not once it is gone.
	mu   sync.Mutex
	over bool

	deadline time.Time
	// lentResults is resume's buffer.
	lentResults []callResult
	pending     map[uint32]pendingCall
	calls       uint32
	// argBytes is the bytes of the names and arguments of the calls
	// pending: copied out of the VM, held by the host until each call
	// finishes, and bounded by the heap limit (see hostCall).
	argBytes int
	// earlyBytes is the JSON bytes of the results built early
	// (callResult.prepared) and not yet settled.
	earlyBytes int
	logs       int
	logBytes   int
	settled    bool
	// refused is the VM's count of refused allocations as the job began
	// (engine.VM.Refused).
	refused uint64
	// decided is set once out says how the job ended.
	decided bool
	wrapped bool
	out     outcome
}

// pendingCall is a tool call in flight: the functions that settle its
// promise, and the bytes of its name and arguments, which its host holds
// outside the VM until it finishes.
type pendingCall struct {
	resolve, reject engine.Value
	argBytes        int
	// early is the result handed early (callResult.prepared), kept until
	// the call is confirmed or replaced, and built its value built from
	// it (engine.Undefined until then, or when it could not be built):
	// the program cannot reach it before the call settles.
	early *callResult
	built engine.Value
}

// earlyShare bounds the results a job builds early while it waits for
// other calls too: at most 1/earlyShare of its heap limit in JSON bytes
// (their values take three to four times that). A result the VM waits
// for alone is built early whatever its size: the program holds it as
// soon as the call is confirmed. Built early without a bound, the 8 MB
// results of calls awaited together — each dropped by the program as it
// arrived — were all in the heap at once (TestObservedFindingsHeld's
// clean run, out of memory).
const earlyShare = 32

func (p pendingCall) free(vm *engine.VM) {
	vm.Free(p.resolve)
	vm.Free(p.reject)
	vm.Free(p.built)
	if p.early != nil {
		p.early.consumed()
	}
}

func newVMJob(spec *jobSpec, host jobHost) *vmJob {
	return &vmJob{
		spec:    spec,
		host:    host,
		inbox:   inbox{signal: make(chan struct{}, 1)},
		turn:    make(chan struct{}, 1),
		stopped: make(chan struct{}),
		pending: map[uint32]pendingCall{},
	}
}

// stop asks the job to end: it may be called from any goroutine, and
// interrupts the VM, which stays interrupted: every later call into it
// ends at once.
func (j *vmJob) stop() {
	j.stopOnce.Do(func() {
		close(j.stopped)
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.over || j.in == nil {
			return
		}
		j.in.vm.Interrupt()
	})
}

// kill stops the job's VM wherever it is, inside a built-in too (see
// engine.VM.Kill): its goroutine, which asked to panic on faults, leaves
// the engine at its next access to the VM's memory. It may be called from
// any goroutine.
func (j *vmJob) kill() {
	j.stop()
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.over && j.in != nil {
		j.in.vm.Kill()
	}
}

func (j *vmJob) isStopped() bool {
	select {
	case <-j.stopped:
		return true
	default:
		return false
	}
}

// limit ends the job for a limit the VM enforces, unless it has ended
// already.
func (j *vmJob) limit(k Kind, size int64) {
	if j.decided || j.isStopped() {
		return
	}
	j.decide(outcome{status: outLimit, kind: k, size: size})
	j.in.vm.Interrupt()
}

// run runs the job on in and returns how it ended. It never panics.
func (j *vmJob) run(in *instance) (out outcome) {
	j.mu.Lock()
	j.in = in
	stopped := j.isStopped()
	j.mu.Unlock()
	in.job = j
	defer func() {
		if p := recover(); p != nil {
			j.decided = false
			j.decide(outcome{status: outInternal, message: "the sandbox failed unexpectedly: " + fmt.Sprint(p)})
		}
		in.job = nil
		j.end()
		out = j.out
	}()
	if stopped {
		j.decide(outcome{status: outStopped})
		return
	}
	j.deadline = time.Now().Add(j.spec.Timeout)
	in.vm.SetDeadline(j.deadline)
	j.execute()
	if !j.decided {
		// The host stopped the job, or (never expected) the loop ended
		// without a word.
		j.decide(outcome{status: outStopped})
	}
	return
}

// end releases what the job holds in the VM. Calls the host still holds
// start now, as they would have had the program waited for them.
func (j *vmJob) end() {
	if f, ok := j.host.(flusher); ok {
		f.flush(-1)
	}
	for id, p := range j.pending {
		p.free(j.in.vm)
		delete(j.pending, id)
	}
	j.argBytes, j.earlyBytes = 0, 0
	j.inbox.close()
	j.mu.Lock()
	j.over = true
	j.mu.Unlock()
}

// enter prepares a call into the VM: it reports false once the job has
// stopped, failed or passed its deadline (which the VM enforces too).
func (j *vmJob) enter() bool {
	if j.decided || j.isStopped() {
		return false
	}
	if !time.Now().Before(j.deadline) {
		j.decide(outcome{status: outLimit, kind: KindTimeout})
		return false
	}
	return true
}

// decide records how the job ended; the first word stands.
func (j *vmJob) decide(o outcome) {
	if j.decided {
		return
	}
	j.decided = true
	o.wrapped = j.wrapped
	j.out = o
}

// execute runs the program to its end.
func (j *vmJob) execute() {
	vm := j.in.vm
	vm.SetMemoryLimit(j.spec.Memory)
	vm.SetMaxStack(j.spec.Stack)
	j.refused = vm.Refused()

	if !j.enter() {
		return
	}
	args := engine.Undefined
	if j.spec.Args != nil {
		v, err := vm.ParseJSON(j.spec.Args)
		if err != nil {
			j.failWith(fmt.Errorf("the program's arguments: %w", err))
			return
		}
		args = v
	}
	seed, now := engine.Undefined, engine.Undefined
	if p := j.spec.Pin; p != nil {
		// A JavaScript number holds 53 bits.
		seed = engine.Float(float64(p.Seed & (1<<53 - 1)))
		now = engine.Float(float64(p.Now.UnixMilli()))
	}
	r, err := vm.Call(j.in.begin, engine.Undefined, engine.Int(j.spec.MaxLogBytes), args, seed, now)
	vm.Free(args)
	vm.Free(r)
	if err != nil {
		j.failWith(err)
		return
	}

	if !j.enter() {
		return
	}
	promise, err := vm.Eval(j.spec.Src, engine.EvalGlobal|engine.EvalAsync)
	if isReturnOutsideFunction(err) {
		j.wrapped = true
		if !j.enter() {
			return
		}
		promise, err = vm.Eval(wrapPrefix+j.spec.Src+"\n})()", engine.EvalGlobal)
	}
	if err != nil {
		j.failWith(err)
		return
	}
	if !j.enter() {
		vm.Free(promise)
		return
	}
	r, err = vm.Call(j.in.settle, engine.Undefined, promise, engine.Bool(j.wrapped))
	vm.Free(promise)
	vm.Free(r)
	if err != nil {
		j.failWith(err)
		return
	}

	var results []callResult
	for {
		var next stepEnds
		next, results = j.step(results)
		switch next {
		case stepEnd:
			return
		case stepLend:
			if j.inbox.lend() {
				select {
				case <-j.turn:
				case <-j.stopped:
					// An interrupt read between the call's flush and
					// the lend found no turn to take back: take it back
					// here, unless a result took it first.
					if j.inbox.reclaim() {
						return
					}
					<-j.turn
				}
			}
			results = j.inbox.drain(results[:0])
			continue
		}
		select {
		case <-j.inbox.signal:
		case <-j.stopped:
			return
		}
		results = j.inbox.drain(results[:0])
	}
}

// stepEnds says how a step of a job ended.
type stepEnds uint8

const (
	stepEnd  stepEnds = iota // the job is over
	stepWait                 // the VM waits for results
	stepLend                 // the VM waits for one call alone (flusher.flush)
)

// step settles the calls of results and runs the VM until it waits for
// more or the job ends. It returns results emptied, for reuse.
func (j *vmJob) step(results []callResult) (stepEnds, []callResult) {
	vm := j.in.vm
	for {
		for _, c := range results {
			j.complete(c)
		}
		results = results[:0]
		if !j.enter() || j.settled {
			return stepEnd, results
		}
		if err := vm.RunJobs(); err != nil {
			if !errors.Is(err, engine.ErrDrainBound) {
				j.failWith(err)
				return stepEnd, results
			}
			continue // a self-feeding queue: the deadline ends it
		}
		if j.settled || j.decided || j.isStopped() {
			return stepEnd, results
		}
		if len(j.pending) == 0 {
			o := outcome{status: outUnsettled}
			if vm.Refused() > j.refused {
				// The heap ran out during the job. Inside a promise job
				// whose exception the engine drops — an element of
				// Promise.all or allSettled, as a large tool result
				// arrived — that leaves the promise the program awaits
				// pending for ever: the program ran out of memory, which
				// is what the run reports (issue 19, attack9 D7).
				o.kind = KindMemory
			}
			j.decide(o)
			return stepEnd, results
		}
		results = j.inbox.drain(results)
		sole := false
		if f, ok := j.host.(flusher); ok {
			if len(results) == 0 {
				sole = f.flush(len(j.pending))
				results = j.inbox.drain(results)
			} else {
				f.acknowledge()
			}
		}
		switch {
		case len(results) > 0:
		case sole:
			return stepLend, results
		default:
			return stepWait, results
		}
	}
}

// resume runs the job on the calling goroutine, which took the turn the
// job lent (inbox.push): in a worker, the goroutine that reads the
// executor's frames, so that a program awaiting its calls one by one
// costs no hand-off between goroutines, and no thread woken, per call.
// The VM runs until it waits again; if it waits for one call alone, the
// turn is lent again, else it goes back to the job's goroutine. Frames
// are not read meanwhile: what can come then is only an interrupt for
// this job (the worker runs no other), which the VM's own deadline, the
// worker's death timer and the executor's kill back up.
func (j *vmJob) resume() {
	defer func() {
		if p := recover(); p != nil {
			j.decided = false
			j.decide(outcome{status: outInternal, message: "the sandbox failed unexpectedly: " + fmt.Sprint(p)})
			j.turn <- struct{}{}
		}
	}()
	for {
		var next stepEnds
		next, j.lentResults = j.step(j.inbox.drain(j.lentResults))
		if next != stepLend {
			j.turn <- struct{}{}
			return
		}
		if j.inbox.lend() {
			return
		}
	}
}

// failWith records an error that came out of the VM, unless the job was
// stopped or failed already, whose reason is the better explanation.
func (j *vmJob) failWith(err error) {
	if j.decided || j.isStopped() {
		return
	}
	var je *engine.Error
	if !errors.As(err, &je) {
		j.decide(outcome{status: outInternal, message: "the sandbox failed: " + err.Error()})
		return
	}
	j.decide(outcome{status: outJSError, name: je.Name, message: je.Message, stack: je.Stack, raw: je.Raw, line: je.Line, col: je.Column})
}

// complete settles the promise of a finished tool call. Its result, JSON,
// is built into the VM from Go (engine.ParseJSON), as JSON.parse would
// make it and about twice as fast; a result that is not JSON rejects
// the call, and one that does not fit the heap ends the run.
//
// A result handed early (prepared) is only built, the call left pending
// and the value out of the program's reach, until the call is confirmed
// (settled with that value) or another result replaces it (the value
// dropped): the server decides meanwhile whether the program may have it
// (Call.Prepare). One that could not be built is built again when
// confirmed, so that its failure is the one the call would have had.
func (j *vmJob) complete(c callResult) {
	p, ok := j.pending[c.id]
	if !ok {
		c.consumed()
		return
	}
	vm := j.in.vm
	if c.prepared {
		if p.early != nil || !j.enter() {
			c.consumed()
			return
		}
		p.early = &c
		alone := len(j.pending) == 1
		if c.ok && (alone || int64(j.earlyBytes+len(c.payload)) <= j.spec.Memory/earlyShare) {
			if v, err := vm.ParseJSON(c.payload); err == nil {
				p.built = v
				j.earlyBytes += len(c.payload)
			}
		}
		j.pending[c.id] = p
		return
	}
	defer c.consumed()
	delete(j.pending, c.id)
	j.argBytes -= p.argBytes
	if !engine.IsUndefined(p.built) {
		j.earlyBytes -= len(p.early.payload)
	}
	defer func() { p.free(vm) }()
	if !j.enter() {
		return
	}
	if c.confirmed {
		if p.early == nil {
			j.decide(outcome{status: outInternal, message: "the sandbox was told to settle a tool call with a result it never received"})
			return
		}
		c.ok, c.payload = p.early.ok, p.early.payload
		if v := p.built; !engine.IsUndefined(v) {
			p.built = engine.Undefined
			j.settleCall(p, c, v)
			return
		}
	}
	v, err := vm.ParseJSON(c.payload)
	switch {
	case errors.Is(err, engine.ErrNoMemory):
		j.limit(KindMemory, 0)
		return
	case errors.Is(err, engine.ErrTooDeep):
		c.ok = false
		v, err = vm.ParseJSON(rejectionJSON(fmt.Sprintf("the tool returned a result nested more than %d levels deep", engine.MaxJSONDepth)))
	case err != nil:
		c.ok = false
		v, err = vm.ParseJSON(rejectionJSON("the tool returned a result that is not JSON"))
	}
	if err != nil {
		j.limit(KindMemory, 0)
		return
	}
	j.settleCall(p, c, v)
}

// settleCall settles the promise of the call p with v, built from c, and
// frees v.
func (j *vmJob) settleCall(p pendingCall, c callResult, v engine.Value) {
	vm := j.in.vm
	j.in.keep(v, len(c.payload), j.spec.Memory)
	r, err := vm.Call(j.in.settleCall, engine.Undefined, p.resolve, p.reject, engine.Bool(c.ok), v)
	vm.Free(v)
	vm.Free(r)
	if err != nil {
		j.failWith(err)
	}
}

// rejectionJSON is the rejection of a call whose result the program
// cannot have.
func rejectionJSON(message string) []byte {
	b, _ := json.Marshal(rejection{Message: message, Code: "tool_failed"}) // strings always marshal
	return b
}

// wrapPrefix turns a program that uses top-level return into the body of
// an async function. It stays on the program's first line, so lines keep
// their numbers.
const wrapPrefix = "(async function () {"

func isReturnOutsideFunction(err error) bool {
	var je *engine.Error
	return errors.As(err, &je) && je.Name == "SyntaxError" && strings.Contains(je.Message, "return not in a function")
}

// instance is a VM with the runtime and a layout's namespaces installed,
// waiting for its one job.
type instance struct {
	vm         *engine.VM
	layout     *Layout
	begin      engine.Value
	settle     engine.Value
	settleCall engine.Value
	// job is the job in progress; host functions reach it through here.
	job *vmJob
	// kept holds large tool results until the VM closes (see keep), and
	// keptBytes the length of their JSON.
	kept      []engine.Value
	keptBytes int
}

// Large results are kept alive until the VM closes, so that freeing them
// — a walk of every object built, about a fifth of ParseJSON's time —
// happens where the VM is closed, after the run's outcome is sent (on the
// worker's low-priority thread, or the pool's maintainer in-process),
// rather than when the program drops the last reference, which for a
// result filtered to a small answer is as its async function returns, on
// the run's path. A run keeps at most keptShare of its memory limit in
// JSON bytes (the values built take about three to four times their
// text), so a program that drops one large result after another to stay
// under the limit still can.
const (
	keepMin   = 64 << 10
	keptShare = 32
)

// keep keeps v, a tool result built from n bytes of JSON, until the VM
// closes, if it is large and the run's share allows it.
func (in *instance) keep(v engine.Value, n int, memory int64) {
	if n < keepMin || int64(in.keptBytes+n) > memory/keptShare {
		return
	}
	in.kept = append(in.kept, in.vm.Dup(v))
	in.keptBytes += n
}

// newInstance builds a VM for layout's jobs and keeps its snapshot, to
// which reset brings it back after each job.
func newInstance(prelude *engine.Bytecode, layout *Layout) (*instance, error) {
	in, err := buildInstance(prelude, layout)
	if err != nil {
		return nil, err
	}
	// Once buildInstance has freed what it held: the image must hold
	// no reference that nothing will free.
	in.vm.Snapshot()
	return in, nil
}

func buildInstance(prelude *engine.Bytecode, layout *Layout) (in *instance, err error) {
	vm, err := engine.New()
	if err != nil {
		return nil, fmt.Errorf("new vm: %w", err)
	}
	in = &instance{vm: vm, layout: layout, begin: engine.Undefined, settle: engine.Undefined, settleCall: engine.Undefined}
	defer func() {
		if err != nil {
			in.close()
		}
	}()
	for _, f := range []struct {
		name string
		argc int
		fn   engine.Func
	}{
		{"__cc_call", 2, in.hostCall},
		{"__cc_log", 2, in.hostLog},
		{"__cc_done", 2, in.hostDone},
		{"__cc_progress", 2, in.hostProgress},
		{"__cc_heap", 0, in.hostHeap},
	} {
		if err := vm.SetGlobalFunc(f.name, f.argc, f.fn); err != nil {
			return in, fmt.Errorf("register %s: %w", f.name, err)
		}
	}
	api, err := vm.EvalBytecode(prelude)
	if err != nil {
		return in, fmt.Errorf("load prelude: %w", err)
	}
	defer vm.Free(api)
	install, err := property(vm, api, "install")
	if err != nil {
		return in, err
	}
	defer vm.Free(install)
	spaces, err := vm.NewString(layout.json)
	if err != nil {
		return in, fmt.Errorf("install namespaces: %w", err)
	}
	r, err := vm.Call(install, engine.Undefined, spaces)
	vm.Free(spaces)
	vm.Free(r)
	if err != nil {
		return in, fmt.Errorf("install namespaces: %w", err)
	}
	if in.begin, err = property(vm, api, "begin"); err != nil {
		return in, err
	}
	if in.settle, err = property(vm, api, "settle"); err != nil {
		return in, err
	}
	if in.settleCall, err = property(vm, api, "settleCall"); err != nil {
		return in, err
	}
	// QuickJS makes some built-ins (Math, Atomics, …) only when they are
	// first read. Read now, they are in the snapshot: otherwise every run
	// of a reset VM that reads one makes it again (a seventh of the CPU
	// of a reset VM's `1+1` job).
	touched, err := vm.Eval(touchGlobals, engine.EvalGlobal)
	if err != nil {
		return in, fmt.Errorf("make the built-ins: %w", err)
	}
	vm.Free(touched)
	return in, nil
}

// touchGlobals reads every property of the global object.
const touchGlobals = `Object.getOwnPropertyNames(globalThis).forEach(function (k) { globalThis[k]; })`

// cheapReset is the most a VM's job may have used beyond its image for
// the VM to be reset where a run would wait for it: clearing more costs
// more than building a VM (a run that made a 100 MB array unmaps it),
// which the next run then does while the used VM is closed, or reset, at
// a lower priority.
const cheapReset = 8 << 20

// resetsCheaply reports whether reset costs less than building a VM.
func (in *instance) resetsCheaply() bool { return in.vm.Dirty() <= cheapReset }

// reset makes a used instance what newInstance made, for the next job of
// its layout: the VM comes back from its snapshot (engine.VM.Reset),
// which costs a copy of its heap instead of building a runtime, a
// context, the prelude and the namespaces again. It reports false for an
// instance that cannot be reset (its VM broken or killed), which must be
// closed.
//
// The results the job kept (keep) are in the heap the reset gives back:
// they go with it, without a walk to free them, and must not be freed
// again at close. A VM that cannot be reset keeps them, for close.
func (in *instance) reset() bool {
	in.job = nil
	if !in.vm.Reset() {
		return false
	}
	clear(in.kept)
	in.kept, in.keptBytes = in.kept[:0], 0
	return true
}

func property(vm *engine.VM, v engine.Value, name string) (engine.Value, error) {
	p, err := vm.Get(v, name)
	if err != nil {
		return engine.Undefined, fmt.Errorf("prelude %s: %w", name, err)
	}
	if engine.IsUndefined(p) {
		return engine.Undefined, errors.New("prelude has no " + name)
	}
	return p, nil
}

// close releases the VM. A VM whose engine was abandoned by a panic is
// closed too; the engine then leaks its memory rather than touching it.
func (in *instance) close() {
	defer func() {
		// Close must never take the process down.
		_ = recover()
	}()
	for _, v := range in.kept {
		in.vm.Free(v)
	}
	for _, v := range []engine.Value{in.begin, in.settle, in.settleCall} {
		in.vm.Free(v)
	}
	in.vm.Close()
}

// The host functions below are the whole bridge between a program and
// its host. The VM calls them on the job's goroutine; each checks its
// input, and none panics: a failure becomes a failed job or a rejected
// promise.

var logLevels = [...]string{"log", "info", "warn", "error", "debug"}

// hostCall starts a tool call: (name, args JSON) and returns a promise
// for its result. The host runs the call; its completion comes back
// through the inbox and is settled on the job's goroutine.
func (in *instance) hostCall(args []engine.Value) engine.Value {
	vm := in.vm
	j := in.job
	if j == nil || j.decided || j.isStopped() || len(args) < 2 {
		return engine.Undefined
	}
	name, ok1 := vm.String(args[0])
	call, ok2 := vm.String(args[1])
	if !ok1 || !ok2 {
		return vm.ThrowTypeError("tools.call: the name and the arguments must be strings")
	}
	if int(j.calls) >= j.spec.MaxCalls {
		j.limit(KindToolCalls, 0)
		return engine.Undefined
	}
	// The name and arguments leave the heap, which bounded them, and are
	// held outside it until the call finishes: by the host while the VM
	// runs on, then in the queue for the run's places in flight. A
	// program could so hold its heap many times over (a 4 MB string
	// passed to a hundred calls, issue 19, attack14 I8): the calls in
	// flight hold at most the heap limit.
	n := len(name) + len(call)
	if int64(j.argBytes+n) > j.spec.Memory {
		return vm.ThrowRangeError(fmt.Sprintf(
			"tools.call: the arguments of this call (%s) and of the %d calls in flight (%s) pass the %s this run's calls may hold at once (its heap limit). Await fewer calls at once (a few at a time rather than Promise.all over all of them), or pass large values to fewer calls",
			formatBytes(int64(n)), len(j.pending), formatBytes(int64(j.argBytes)), formatBytes(j.spec.Memory)))
	}
	promise, resolve, reject, err := vm.NewPromise()
	if err != nil {
		j.limit(KindMemory, 0)
		return engine.Undefined
	}
	id := j.calls
	j.calls++
	j.pending[id] = pendingCall{resolve: resolve, reject: reject, argBytes: n, built: engine.Undefined}
	j.argBytes += n
	j.host.call(id, name, call)
	return promise
}

// hostLog reports one console line, (level, text), and ends the job when
// the output passes its limits.
func (in *instance) hostLog(args []engine.Value) engine.Value {
	j := in.job
	if j == nil || j.decided || j.isStopped() || len(args) < 2 {
		return engine.Undefined
	}
	lv, _ := engine.ToNumber(args[0])
	text, ok := in.vm.String(args[1])
	if !ok {
		return in.vm.ThrowTypeError("console: the text must be a string")
	}
	if j.logs >= j.spec.MaxLogLines || j.logBytes+len(text) > j.spec.MaxLogBytes {
		j.limit(KindOutput, 0)
		return engine.Undefined
	}
	level := int(lv)
	if level < 0 || level >= len(logLevels) {
		level = 0
	}
	j.logs++
	j.logBytes += len(text)
	j.host.log(level, text)
	return engine.Undefined
}

// hostProgress forwards progress(message, fraction); a fraction outside
// 0..1 (or none) is reported as -1, meaning unknown.
func (in *instance) hostProgress(args []engine.Value) engine.Value {
	j := in.job
	if j == nil || j.decided || j.isStopped() || len(args) < 2 {
		return engine.Undefined
	}
	message, ok := in.vm.String(args[0])
	if !ok {
		return in.vm.ThrowTypeError("progress: the message must be a string")
	}
	f, ok := engine.ToNumber(args[1])
	if !ok || math.IsNaN(f) || f < 0 || f > 1 {
		f = -1
	}
	if len(message) > 1024 {
		message = message[:1024]
	}
	j.host.progress(message, f)
	return engine.Undefined
}

// hostHeap lifts the heap limit for the prelude to encode a large result,
// when no code of the program can run until hostDone restores it.
func (in *instance) hostHeap([]engine.Value) engine.Value {
	if j := in.job; j != nil && !j.settled {
		in.vm.SetMemoryLimit(3 * j.spec.Memory)
	}
	return engine.Undefined
}

// hostDone receives the program's outcome from the prelude, (ok, text):
// its result as JSON, or a description of the exception that ended it.
// Copying the string out of the VM takes room in its heap; a result as
// large as the heap may allow gets that room: the limit is lifted for
// the copy, while no program code runs.
func (in *instance) hostDone(args []engine.Value) engine.Value {
	j := in.job
	if j == nil || j.settled || j.decided || len(args) < 2 {
		return engine.Undefined
	}
	ok, _ := engine.ToBool(args[0])
	j.settled = true
	in.vm.SetMemoryLimit(3 * j.spec.Memory)
	s, isString := in.vm.String(args[1])
	in.vm.SetMemoryLimit(j.spec.Memory)
	switch {
	case !isString:
		j.decide(outcome{status: outLimit, kind: KindMemory})
	case !ok:
		j.decide(outcome{status: outThrown, payload: []byte(s)})
	case len(s) > j.spec.MaxResult:
		j.decide(outcome{status: outLimit, kind: KindResultSize, size: int64(len(s))})
	default:
		// s is a copy of its own, and nothing writes to the bytes.
		j.decide(outcome{status: outValue, payload: unsafe.Slice(unsafe.StringData(s), len(s))})
	}
	return engine.Undefined
}
