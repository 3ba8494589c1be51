package executor

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
	"unsafe"

	"modernc.org/quickjs"
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
func compilePrelude() ([]byte, error) {
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, fmt.Errorf("compile prelude: %w", err)
	}
	defer vm.Close()
	code, err := vm.Compile(strings.Repeat("\n", preludeLine-1)+preludeJS, quickjs.EvalGlobal)
	if err != nil {
		return nil, fmt.Errorf("compile prelude: %w", err)
	}
	return code, nil
}

// jobSpec is everything a VM needs to run one program. It crosses the pipe
// to a worker as it is (see encodeSpec).
type jobSpec struct {
	Src         string
	Args        []byte // nil: no global args
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
// settled, these included.
type flusher interface {
	flush(inFlight int)
}

// outcomeStatus says how a job ended.
type outcomeStatus uint8

const (
	outValue     outcomeStatus = iota // payload: the result as JSON
	outThrown                         // payload: the prelude's description of the exception (JSON)
	outJSError                        // name, message, stack, raw, line, col: an exception from the engine
	outLimit                          // kind (and size): a limit the VM enforces
	outStopped                        // the host asked the job to stop
	outUnsettled                      // the program awaits a promise nothing can settle
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
	id      uint32
	ok      bool
	payload []byte
}

// inbox queues call results for a job without ever blocking the sender.
type inbox struct {
	mu     sync.Mutex
	items  []callResult
	signal chan struct{}
}

func (b *inbox) push(c callResult) {
	b.mu.Lock()
	b.items = append(b.items, c)
	b.mu.Unlock()
	select {
	case b.signal <- struct{}{}:
	default:
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

	inbox    inbox
	stopOnce sync.Once
	stopped  chan struct{}
	exited   chan struct{}
	// mu orders stop against the end of the job: after it, stop starts
	// no interrupter.
	mu           sync.Mutex
	over         bool
	interrupters sync.WaitGroup

	deadline time.Time
	pending  map[uint32]pendingCall
	calls    uint32
	logs     int
	logBytes int
	settled  bool
	// decided is set once out says how the job ended.
	decided bool
	wrapped bool
	out     outcome
}

// pendingCall is a tool call in flight: its promise.
type pendingCall struct {
	pc *quickjs.PromiseCapability
}

func (p pendingCall) free() {
	p.pc.Resolve.Free()
	p.pc.Reject.Free()
}

func newVMJob(spec *jobSpec, host jobHost) *vmJob {
	return &vmJob{
		spec:    spec,
		host:    host,
		inbox:   inbox{signal: make(chan struct{}, 1)},
		stopped: make(chan struct{}),
		exited:  make(chan struct{}),
		pending: map[uint32]pendingCall{},
	}
}

// stop asks the job to end: it may be called from any goroutine, and
// interrupts the VM until the job is over. Every call into the VM clears
// a pending interrupt, so the interrupt repeats.
func (j *vmJob) stop() {
	j.stopOnce.Do(func() {
		close(j.stopped)
		j.mu.Lock()
		defer j.mu.Unlock()
		if j.over || j.in == nil {
			return
		}
		j.interrupters.Add(1)
		go j.interrupt()
	})
}

func (j *vmJob) interrupt() {
	defer j.interrupters.Done()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		j.in.vm.Interrupt()
		select {
		case <-j.exited:
			return
		case <-tick.C:
		}
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
	j.execute()
	if !j.decided {
		// The host stopped the job, or (never expected) the loop ended
		// without a word.
		j.decide(outcome{status: outStopped})
	}
	return
}

// end releases what the job holds in the VM and stops its interrupter.
// Calls the host still holds start now, as they would have had the
// program waited for them.
func (j *vmJob) end() {
	if f, ok := j.host.(flusher); ok {
		f.flush(-1)
	}
	for id, p := range j.pending {
		p.free()
		delete(j.pending, id)
	}
	j.mu.Lock()
	j.over = true
	j.mu.Unlock()
	close(j.exited)
	j.interrupters.Wait()
}

// enter prepares a call into the VM: it reports false once the job has
// stopped or failed, and otherwise arms the VM's own timeout with the time
// left.
func (j *vmJob) enter() bool {
	if j.decided || j.isStopped() {
		return false
	}
	left := time.Until(j.deadline)
	if left <= 0 {
		j.decide(outcome{status: outLimit, kind: KindTimeout})
		return false
	}
	j.in.vm.SetEvalTimeout(left)
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

// errDrainBound is how ExecutePendingJobs reports a drain it cut short: a
// program that keeps queueing jobs, which the deadline ends.
const errDrainBound = "quickjs: aborted draining"

// execute runs the program to its end.
func (j *vmJob) execute() {
	vm := j.in.vm
	vm.SetMemoryLimit(uintptr(j.spec.Memory))
	vm.SetMaxStackSize(uintptr(j.spec.Stack))

	if !j.enter() {
		return
	}
	var args any = quickjs.Undefined{}
	if j.spec.Args != nil {
		args = string(j.spec.Args)
	}
	if _, err := j.in.begin.Call(quickjs.UndefinedValue, j.spec.MaxLogBytes, args); err != nil {
		j.failWith(err)
		return
	}

	if !j.enter() {
		return
	}
	promise, err := vm.EvalValue(j.spec.Src, quickjs.EvalGlobal|evalAsync)
	if isReturnOutsideFunction(err) {
		j.wrapped = true
		if !j.enter() {
			return
		}
		promise, err = vm.EvalValue(wrapPrefix+j.spec.Src+"\n})()", quickjs.EvalGlobal)
	}
	if err != nil {
		j.failWith(err)
		return
	}
	if !j.enter() {
		promise.Free()
		return
	}
	_, err = j.in.settle.Call(quickjs.UndefinedValue, promise, j.wrapped)
	promise.Free()
	if err != nil {
		j.failWith(err)
		return
	}

	var results []callResult
	for {
		if !j.enter() || j.settled {
			return
		}
		if _, err := vm.ExecutePendingJobs(); err != nil {
			if !strings.HasPrefix(err.Error(), errDrainBound) {
				j.failWith(err)
				return
			}
			continue // a self-feeding queue: the deadline ends it
		}
		if j.settled || j.decided || j.isStopped() {
			return
		}
		if len(j.pending) == 0 {
			j.decide(outcome{status: outUnsettled})
			return
		}
		results = j.inbox.drain(results[:0])
		if f, ok := j.host.(flusher); ok && len(results) == 0 {
			f.flush(len(j.pending))
			results = j.inbox.drain(results[:0])
		}
		if len(results) == 0 {
			select {
			case <-j.inbox.signal:
			case <-j.stopped:
				return
			}
			results = j.inbox.drain(results[:0])
		}
		for _, c := range results {
			j.complete(c)
		}
	}
}

// failWith records an error that came out of the VM, unless the job was
// stopped or failed already, whose reason is the better explanation.
func (j *vmJob) failWith(err error) {
	if j.decided || j.isStopped() {
		return
	}
	var je *quickjs.Error
	if !errors.As(err, &je) {
		j.decide(outcome{status: outInternal, message: "the sandbox failed: " + err.Error()})
		return
	}
	j.decide(outcome{status: outJSError, name: je.Name, message: je.Message, stack: je.Stack, raw: je.Error(), line: je.LineNumber, col: je.ColumnNumber})
}

// complete settles the promise of a finished tool call.
func (j *vmJob) complete(c callResult) {
	p, ok := j.pending[c.id]
	if !ok {
		return
	}
	delete(j.pending, c.id)
	defer p.free()
	if !j.enter() {
		return
	}
	// The payload is handed over, never written again: no copy for the
	// string the engine copies anyway.
	payload := unsafe.String(unsafe.SliceData(c.payload), len(c.payload))
	if _, err := j.in.settleCall.Call(quickjs.UndefinedValue, p.pc.Resolve, p.pc.Reject, c.ok, payload); err != nil {
		j.failWith(err)
	}
}

// evalAsync is QuickJS's JS_EVAL_FLAG_ASYNC: a global script that may use
// top-level await, evaluating to a promise of {value: completion value}.
const evalAsync = 1 << 7

// wrapPrefix turns a program that uses top-level return into the body of
// an async function. It stays on the program's first line, so lines keep
// their numbers.
const wrapPrefix = "(async function () {"

func isReturnOutsideFunction(err error) bool {
	var je *quickjs.Error
	return errors.As(err, &je) && je.Name == "SyntaxError" && strings.Contains(je.Message, "return not in a function")
}

// instance is a VM with the runtime and a layout's namespaces installed,
// waiting for its one job.
type instance struct {
	vm         *quickjs.VM
	layout     *Layout
	begin      quickjs.Value
	settle     quickjs.Value
	settleCall quickjs.Value
	// job is the job in progress; host functions reach it through here.
	job *vmJob
}

func newInstance(prelude []byte, layout *Layout) (in *instance, err error) {
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, fmt.Errorf("new vm: %w", err)
	}
	in = &instance{vm: vm, layout: layout}
	defer func() {
		if err != nil {
			in.close()
		}
	}()
	for name, f := range map[string]any{
		"__cc_call":     in.hostCall,
		"__cc_log":      in.hostLog,
		"__cc_done":     in.hostDone,
		"__cc_progress": in.hostProgress,
		"__cc_heap":     in.hostHeap,
	} {
		if err := vm.RegisterFunc(name, f, false); err != nil {
			return in, fmt.Errorf("register %s: %w", name, err)
		}
	}
	api, err := vm.EvalBytecodeValue(prelude)
	if err != nil {
		return in, fmt.Errorf("load prelude: %w", err)
	}
	defer api.Free()
	install, err := property(vm, api, "install")
	if err != nil {
		return in, err
	}
	defer install.Free()
	if _, err := install.Call(quickjs.UndefinedValue, layout.json); err != nil {
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
	return in, nil
}

func property(vm *quickjs.VM, v quickjs.Value, name string) (quickjs.Value, error) {
	atom, err := vm.NewAtom(name)
	if err != nil {
		return quickjs.Value{}, fmt.Errorf("atom %s: %w", name, err)
	}
	p, err := v.GetPropertyValue(atom)
	if err != nil {
		return quickjs.Value{}, fmt.Errorf("prelude %s: %w", name, err)
	}
	if p.IsUndefined() {
		return quickjs.Value{}, errors.New("prelude has no " + name)
	}
	return p, nil
}

// close releases the VM. A VM whose engine was abandoned by a panic is
// closed too; quickjs then leaks its memory rather than touching it.
func (in *instance) close() {
	defer func() {
		// Close must never take the process down.
		_ = recover()
	}()
	for _, v := range []*quickjs.Value{&in.begin, &in.settle, &in.settleCall} {
		if v.VM() != nil {
			v.Free()
		}
	}
	in.vm.Close()
}

// The host functions below are the whole bridge between a program and
// its host. The VM calls them on the job's goroutine; each checks its
// input, and none panics: a failure becomes a failed job or a rejected
// promise.

var logLevels = [...]string{"log", "info", "warn", "error", "debug"}

// hostCall starts a tool call and returns a promise for its result. The
// host runs the call; its completion comes back through the inbox and is
// settled on the job's goroutine.
func (in *instance) hostCall(name, args string) quickjs.Value {
	j := in.job
	if j == nil || j.decided || j.isStopped() {
		return quickjs.UndefinedValue
	}
	if int(j.calls) >= j.spec.MaxCalls {
		j.limit(KindToolCalls, 0)
		return quickjs.UndefinedValue
	}
	pc, err := in.vm.NewPromiseCapability()
	if err != nil {
		j.limit(KindMemory, 0)
		return quickjs.UndefinedValue
	}
	id := j.calls
	j.calls++
	j.pending[id] = pendingCall{pc: pc}
	j.host.call(id, name, args)
	return pc.Promise
}

// hostLog reports one console line, and ends the job when the output
// passes its limits.
func (in *instance) hostLog(level int, text string) {
	j := in.job
	if j == nil || j.decided || j.isStopped() {
		return
	}
	if j.logs >= j.spec.MaxLogLines || j.logBytes+len(text) > j.spec.MaxLogBytes {
		j.limit(KindOutput, 0)
		return
	}
	if level < 0 || level >= len(logLevels) {
		level = 0
	}
	j.logs++
	j.logBytes += len(text)
	j.host.log(level, text)
}

// hostProgress forwards progress(message, fraction); a fraction outside
// 0..1 (or none) is reported as -1, meaning unknown.
func (in *instance) hostProgress(message string, fraction any) {
	j := in.job
	if j == nil || j.decided || j.isStopped() {
		return
	}
	f := -1.0
	switch v := fraction.(type) {
	case int:
		f = float64(v)
	case float64:
		f = v
	}
	if math.IsNaN(f) || f < 0 || f > 1 {
		f = -1
	}
	if len(message) > 1024 {
		message = message[:1024]
	}
	j.host.progress(message, f)
}

// hostHeap lifts the heap limit for the prelude to encode a large result,
// when no code of the program can run until hostDone restores it.
func (in *instance) hostHeap() {
	if j := in.job; j != nil && !j.settled {
		in.vm.SetMemoryLimit(uintptr(3 * j.spec.Memory))
	}
}

// hostDone receives the program's outcome from the prelude: its result as
// JSON, or a description of the exception that ended it. Copying the
// string out of the VM takes room in its heap; a result as large as the
// heap may allow gets that room: the limit is lifted for the copy, while
// no program code runs.
func (in *instance) hostDone(ok bool, v quickjs.Value) {
	j := in.job
	if j == nil || j.settled || j.decided {
		return
	}
	j.settled = true
	in.vm.SetMemoryLimit(uintptr(3 * j.spec.Memory))
	x, err := v.Any()
	in.vm.SetMemoryLimit(uintptr(j.spec.Memory))
	s, isString := x.(string)
	switch {
	case err != nil || !isString:
		j.decide(outcome{status: outLimit, kind: KindMemory})
	case !ok:
		j.decide(outcome{status: outThrown, payload: []byte(s)})
	case len(s) > j.spec.MaxResult:
		j.decide(outcome{status: outLimit, kind: KindResultSize, size: int64(len(s))})
	default:
		// s is a copy of its own, and nothing writes to the bytes.
		j.decide(outcome{status: outValue, payload: unsafe.Slice(unsafe.StringData(s), len(s))})
	}
}
