package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// killGrace is how long a stopped run may take to end before its VM is
// given up: its worker process killed (process isolation) or its
// goroutine left behind (in-process). Interrupts reach a VM within a
// millisecond unless it is inside a built-in's own loop.
const killGrace = 25 * time.Millisecond

// Executor runs programs in fresh QuickJS VMs from a pool. It is safe for
// concurrent use.
type Executor struct {
	cfg   Config
	log   *slog.Logger
	sched *scheduler
	// Exactly one of local and procs is set, by cfg.Isolation.
	local *localSandbox
	procs *procPool
	// transforms keeps transform processes warm; nil without a
	// TransformCommand.
	transforms *transformPool

	// calls tracks tool-call goroutines, which may outlive their run
	// until the dispatcher honours the run's cancelled context.
	calls sync.WaitGroup
	// callers runs the tool calls.
	callers *callers

	mu     sync.Mutex
	live   map[*Run]struct{}
	closed bool
	// nested counts the nested runs whose VMs are alive.
	nested atomic.Int64
	// waiting counts the runs that wait outside the pool (see Park).
	waiting atomic.Int64
	// lookups bounds the transform processes that locate JavaScript
	// syntax errors, which a run may do after its slot is free
	// (attack10 E1).
	lookups chan struct{}
}

// New starts an executor and its pool: the VMs, or the worker processes,
// that the first runs will use are prepared in the background.
func New(cfg Config) (*Executor, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger.With("component", "executor")
	e := &Executor{cfg: cfg, log: log, sched: newScheduler(cfg.PoolSize, cfg.ReservedSlots), live: map[*Run]struct{}{}, callers: newCallers(),
		lookups: make(chan struct{}, cfg.PoolSize)}
	switch cfg.Isolation {
	case IsolationProcess:
		e.procs = newProcPool(cfg.PoolSize, cfg.MaxWaiting, cfg.WorkerCommand, cfg.MemoryLimit, log)
	default:
		code, err := compilePrelude()
		if err != nil {
			return nil, err
		}
		e.local = &localSandbox{pool: newVMPool(cfg.PoolSize, code, log), runners: newRunners()}
	}
	if len(cfg.TransformCommand) > 0 {
		e.transforms = newTransformPool(cfg.TransformProcesses, cfg.TransformCommand, log)
	}
	return e, nil
}

// Config returns the executor's configuration with defaults applied.
func (e *Executor) Config() Config { return e.cfg }

// errClosing is the reason runs in progress end with when the executor
// closes.
var errClosing = &Error{Kind: KindCanceled, Message: "the server is shutting down; the run was stopped"}

// Close ends every run in progress (as KindCanceled), stops the pool and
// its worker processes, and waits for tool calls still in flight, whose
// contexts it has cancelled. With in-process isolation, a VM stuck inside
// a built-in is left behind: its goroutine ends when the built-in does.
func (e *Executor) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	runs := make([]*Run, 0, len(e.live))
	for r := range e.live {
		runs = append(runs, r)
	}
	e.mu.Unlock()
	e.sched.close()
	for _, r := range runs {
		r.stop(errClosing)
		r.sb.abandon(r)
	}
	if e.procs != nil {
		e.procs.close()
	}
	if e.local != nil {
		e.local.pool.close()
		e.local.runners.close()
	}
	if e.transforms != nil {
		e.transforms.close()
	}
	e.calls.Wait()
	e.callers.close()
	return nil
}

// Run runs one program and returns its record. Every failure, including
// the limits, is in the record's Error; Run never panics on any program.
func (e *Executor) Run(ctx context.Context, req Request) (res *Result) {
	start := time.Now()
	waited := max(req.Waited, 0)
	res = &Result{Status: StatusError, Value: json.RawMessage("null"), Logs: []LogLine{}, Calls: []CallRecord{}}
	defer func() {
		res.Telemetry.DurationMS = ms(time.Since(start) + waited)
		res.Telemetry.ToolCalls = len(res.Calls)
		if res.Error == nil {
			res.Status = StatusOK
		} else {
			res.Status = StatusError
			res.Value = json.RawMessage("null")
		}
	}()

	src, smap, fail := e.prepare(req)
	if fail != nil {
		res.Error = fail
		return res
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = e.cfg.Timeout
	}
	maxTimeout := e.cfg.MaxTimeout
	if req.MaxTimeout > 0 {
		maxTimeout = req.MaxTimeout
	}
	timeout = min(timeout, maxTimeout)

	r := &Run{
		e:       e,
		req:     &req,
		code:    req.Code,
		src:     src,
		smap:    smap,
		owner:   req.Owner,
		long:    timeout > e.cfg.Timeout,
		maxTime: maxTimeout,
		stopped: make(chan struct{}),
		done:    make(chan struct{}),
		logs:    []LogLine{},
		calls:   []CallRecord{},
	}
	var giveBack func()
	if p := req.Parent; p != nil {
		if fail := r.nest(ctx, p, &timeout); fail != nil {
			res.Error = fail
			return res
		}
	} else {
		queued := time.Now()
		sb, release, fail := e.acquire(ctx, req.Owner, r.long, e.cfg.QueueWait-waited)
		res.Telemetry.QueueWaitMS = ms(time.Since(queued) + waited)
		if fail != nil {
			res.Error = fail
			return res
		}
		r.root, r.sb = r, sb
		r.levels = make([]chan struct{}, e.cfg.MaxDepth)
		r.stripping = make(chan struct{}, 1)
		for i := range r.levels {
			r.levels[i] = make(chan struct{}, e.cfg.MaxNestedRuns)
		}
		r.hold.release = release
		if w, ok := sb.(*worker); ok {
			giveBack = func() { w.p.giveBack(w); r.releaseSlot() }
		} else {
			r.onEnd = r.releaseSlot
		}
	}
	r.timeout = timeout
	r.deadline = time.Now().Add(timeout)
	if p := req.Parent; p != nil && p.deadline.Before(r.deadline) {
		r.deadline = p.deadline
	}
	tctx, cancel := context.WithCancelCause(ctx)
	tctx, cancelDeadline := context.WithDeadline(tctx, r.deadline)
	r.ctx = context.WithValue(tctx, runKey{}, r)
	r.cancel = func() { cancel(errRunEnded); cancelDeadline() }
	r.inflight = make(chan struct{}, e.cfg.MaxConcurrentCalls)

	if !e.track(r) {
		r.cancel()
		if r.onEnd != nil {
			r.onEnd()
		}
		if giveBack != nil {
			giveBack()
		}
		res.Error = errClosed
		return res
	}
	defer e.untrack(r)

	if req.Language == TypeScript {
		if r.src, r.smap, fail = r.stripTypes(req.Code); fail != nil {
			r.cancel()
			if r.onEnd != nil {
				r.onEnd()
			}
			if giveBack != nil {
				giveBack()
			}
			res.Error = fail
			return res
		}
	}

	disarm := r.arm(ctx)
	if err := r.sb.start(r, r.spec(req)); err != nil {
		o := outcome{status: outInternal, message: "could not start a sandbox: " + err.Error()}
		if r.parent != nil {
			// Its root's worker is gone: the root is being killed.
			o = outcome{status: outLost, kind: KindCanceled}
		}
		r.deliver(o)
		r.ended()
	}
	<-r.done
	disarm()
	r.finish(res)
	if giveBack != nil {
		giveBack()
	}
	return res
}

// acquire waits for a pool slot for owner's run, long or not, up to
// wait, and returns the sandbox to run in and the function that gives
// the slot back.
func (e *Executor) acquire(ctx context.Context, owner string, long bool, wait time.Duration) (sandbox, func(), *Error) {
	release, fail := e.sched.acquire(ctx, owner, long, wait, func() *Error { return e.busyError(long) })
	if fail != nil {
		return nil, nil, fail
	}
	if e.local != nil {
		return e.local, release, nil
	}
	w, fail := e.procs.get(ctx)
	if fail != nil {
		release()
		return nil, nil, fail
	}
	return w, release, nil
}

// busyError is why a run that waited the queue wait limit did not start.
func (e *Executor) busyError(long bool) *Error {
	if long && e.cfg.ReservedSlots > 0 {
		return limitError(KindBusy, "the %d of %d sandboxes that runs longer than the default deadline (%s) may use stayed busy for %s (the queue wait limit; %d are kept for runs within it); retry in a while, or ask for a deadline of at most %s",
			e.cfg.PoolSize-e.cfg.ReservedSlots, e.cfg.PoolSize, e.cfg.Timeout, e.cfg.QueueWait, e.cfg.ReservedSlots, e.cfg.Timeout)
	}
	return limitError(KindBusy, "all %d sandboxes stayed busy for %s (the queue wait limit); retry in a few seconds", e.cfg.PoolSize, e.cfg.QueueWait)
}

// nest makes r a nested run of p: it checks the depth, waits for a place
// at r's depth in the root's tree, and shortens the timeout to the
// parent's.
func (r *Run) nest(ctx context.Context, p *Run, timeout *time.Duration) *Error {
	cfg := r.e.cfg
	if p.e != r.e {
		return &Error{Kind: KindInvalidRequest, Message: "the parent run belongs to another executor"}
	}
	r.parent, r.root, r.depth, r.sb = p, p.root, p.depth+1, p.sb
	r.owner = p.root.owner
	if r.depth > cfg.MaxDepth {
		return limitError(KindDepth, "runs nested more than %d deep (skills calling skills); a skill probably calls itself without end", cfg.MaxDepth)
	}
	if p.isOver() {
		return &Error{Kind: KindCanceled, Message: "the calling run has ended"}
	}
	wait, stop := context.WithDeadline(ctx, p.deadline)
	defer stop()
	level := r.root.levels[r.depth-1]
	select {
	case level <- struct{}{}:
	case <-p.done:
		return &Error{Kind: KindCanceled, Message: "the calling run has ended"}
	case <-wait.Done():
		if ctx.Err() != nil {
			return canceledError(ctx)
		}
		return p.timeoutError()
	}
	r.e.nested.Add(1)
	r.onEnd = func() {
		r.e.nested.Add(-1)
		<-level
	}
	*timeout = min(*timeout, time.Until(p.deadline))
	return nil
}

func (e *Executor) track(r *Run) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	e.live[r] = struct{}{}
	return true
}

func (e *Executor) untrack(r *Run) {
	e.mu.Lock()
	delete(e.live, r)
	e.mu.Unlock()
}

// prepare checks the request and returns the JavaScript to run.
func (e *Executor) prepare(req Request) (string, *sourceMap, *Error) {
	if n := len(req.Code); n > e.cfg.MaxCodeBytes {
		return "", nil, limitError(KindCodeSize, "the program is %s; the limit is %s. Send a shorter program, or save parts of it as skills", formatBytes(int64(n)), formatBytes(int64(e.cfg.MaxCodeBytes)))
	}
	if strings.TrimSpace(req.Code) == "" {
		return "", nil, &Error{Kind: KindInvalidRequest, Message: "the program is empty; send JavaScript such as `return await util.echo({text: \"hi\"})`"}
	}
	switch req.Language {
	case "", JavaScript:
		return req.Code, nil, nil
	case TypeScript:
		// Stripped in a transform process once the run holds its slot
		// and has its deadline (in Run).
		return "", nil, nil
	}
	return "", nil, &Error{Kind: KindInvalidRequest, Message: fmt.Sprintf("unknown language %q; use \"javascript\" or \"typescript\"", req.Language)}
}

func canceledError(ctx context.Context) *Error {
	msg := "the run was cancelled by the client"
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errRunEnded):
		msg = "the run was stopped because the run that called it ended"
	case errors.Is(cause, context.DeadlineExceeded):
		msg = "the request's deadline passed before the run finished"
	case cause != nil && !errors.Is(cause, context.Canceled):
		msg = "the run was cancelled: " + cause.Error()
	}
	return &Error{Kind: KindCanceled, Message: msg}
}

// errRunEnded is the cause of a tool call's context ending with its run.
var errRunEnded = errors.New("the run ended")

type runKey struct{}

// RunFrom returns the run whose tool call ctx belongs to, or nil. It is
// Call.Run, for code that a dispatcher reaches only through a context.
func RunFrom(ctx context.Context) *Run {
	r, _ := ctx.Value(runKey{}).(*Run)
	return r
}

// Run is a run in progress, as its tool calls see it: the handle that a
// nested run's Request names as its Parent.
type Run struct {
	e      *Executor
	req    *Request
	parent *Run
	root   *Run
	depth  int
	owner  string
	// long is true for a root run whose deadline is past the default
	// one: it may not take the slots Config.ReservedSlots keeps.
	long bool
	code string // the program as written
	src  string // the JavaScript evaluated
	smap *sourceMap

	timeout  time.Duration
	maxTime  time.Duration // the cap on timeout the run was admitted with
	deadline time.Time
	// hold is a root run's hold on its pool slot (see Park).
	hold hold
	// ctx is the tool calls' context; cancel ends it with the run.
	ctx    context.Context
	cancel func()

	sb sandbox
	// job names the run in its worker; vj is its job in this process.
	job uint32
	vj  *vmJob
	// levels bound the nested runs of a root alive at each depth.
	levels []chan struct{}
	// stripping lets a root's nested runs strip TypeScript one at a time
	// (a transform process each; attack10 E1).
	stripping chan struct{}
	inflight  chan struct{}

	stopOnce sync.Once
	stopped  chan struct{} // closed by stop
	reason   *Error        // why it stopped, written before stopped closes

	doneOnce sync.Once
	done     chan struct{} // closed once out is set
	out      outcome

	endOnce sync.Once
	onEnd   func() // called once the VM is gone

	mu sync.Mutex
	// unacked holds, by call, the holds of results sent to the run's
	// worker whose VM has not taken them (see worker.complete), until
	// acksOver, when its job has ended.
	unacked        map[uint32]func()
	acksOver       bool
	over           bool // the record is built; later events are dropped
	logs           []LogLine
	calls          []CallRecord
	completed      []bool
	bytesFromTools int
}

// Depth returns how deep the run is nested: 0 for a root run.
func (r *Run) Depth() int { return r.depth }

// Owner returns the principal the run's root was started for.
func (r *Run) Owner() string { return r.owner }

// Deadline returns when the run is stopped.
func (r *Run) Deadline() time.Time { return r.deadline }

func (r *Run) isOver() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func (r *Run) isStopped() bool {
	select {
	case <-r.stopped:
		return true
	default:
		return false
	}
}

// spec is what the VM needs to run the program.
func (r *Run) spec(req Request) *jobSpec {
	cfg := r.e.cfg
	layout := req.Functions
	if layout == nil {
		layout = emptyLayout
	}
	var killAt int64
	if r.depth == 0 {
		// Nested jobs die with their root's worker.
		killAt = monotonicAt(r.deadline.Add(killGrace))
	}
	return &jobSpec{
		Src:         r.src,
		Args:        req.Args,
		Pin:         req.Pin,
		Layout:      layout,
		Memory:      r.heap(),
		Stack:       cfg.MaxStackFrames,
		MaxCalls:    cfg.MaxToolCalls,
		MaxLogLines: cfg.MaxLogLines,
		MaxLogBytes: cfg.MaxLogBytes,
		MaxResult:   cfg.MaxResultBytes,
		Timeout:     time.Until(r.deadline),
		KillAt:      killAt,
		Nested:      r.depth > 0,
	}
}

// arm stops the run at its deadline or when ctx ends, and returns the
// function that disarms both. The VM is given up killGrace after the
// deadline by a timer armed now, rather than one started when the first
// fires: on a loaded machine each timer may fire late, and the delays
// would add up.
func (r *Run) arm(ctx context.Context) func() {
	unwatch := context.AfterFunc(ctx, func() {
		r.stop(canceledError(ctx))
		time.AfterFunc(killGrace, r.giveUp)
	})
	left := time.Until(r.deadline)
	timer := time.AfterFunc(left, func() { r.stop(r.timeoutError()) })
	kill := time.AfterFunc(left+killGrace, func() {
		r.stop(r.timeoutError())
		r.giveUp()
	})
	return func() {
		unwatch()
		timer.Stop()
		kill.Stop()
	}
}

// stop ends the run for reason; the first reason wins. It may be called
// from any goroutine. It interrupts the VM; giveUp follows when the VM
// does not stop.
func (r *Run) stop(reason *Error) {
	first := false
	r.stopOnce.Do(func() {
		r.reason = reason
		close(r.stopped)
		first = true
	})
	// Outside the Once: an interrupt that waits (for the worker's pipe)
	// must not hold up the kill, which stops the run too.
	if first && !r.isOver() {
		r.sb.interrupt(r)
	}
}

// expire ends a root run whose VM is to be given up with its worker: it
// has timed out. Its VM is not interrupted first, as stop would: the
// worker is killed at once.
func (r *Run) expire() {
	r.stopOnce.Do(func() {
		r.reason = r.timeoutError()
		close(r.stopped)
	})
	r.giveUp()
}

// pastKill reports whether the time to give up the run's VM has come:
// its deadline plus killGrace.
func (r *Run) pastKill() bool { return !time.Now().Before(r.deadline.Add(killGrace)) }

// giveUp abandons the VM of a run that has not ended.
func (r *Run) giveUp() {
	if !r.isOver() {
		r.sb.abandon(r)
	}
}

// deliver hands the run its outcome; the first one counts.
func (r *Run) deliver(o outcome) {
	r.doneOnce.Do(func() {
		r.out = o
		close(r.done)
	})
}

// ended reports that the run's VM is gone, which frees its place in the
// pool or in its root's tree.
func (r *Run) ended() {
	r.endOnce.Do(func() {
		r.endAcks()
		if r.onEnd != nil {
			r.onEnd()
		}
	})
}

// awaitAck keeps done, the hold of call's result, until the run's
// worker says the VM has taken it (acked), or the run's job ends.
func (r *Run) awaitAck(call uint32, done func()) {
	r.mu.Lock()
	if r.acksOver {
		r.mu.Unlock()
		done()
		return
	}
	if r.unacked == nil {
		r.unacked = map[uint32]func(){}
	}
	r.unacked[call] = done
	r.mu.Unlock()
}

// acked gives back the hold of call's result, which the VM has taken.
func (r *Run) acked(call uint32) {
	r.mu.Lock()
	done := r.unacked[call]
	delete(r.unacked, call)
	r.mu.Unlock()
	if done != nil {
		done()
	}
}

// endAcks gives back the holds of results the VM never took.
func (r *Run) endAcks() {
	r.mu.Lock()
	left := r.unacked
	r.unacked, r.acksOver = nil, true
	r.mu.Unlock()
	for _, done := range left {
		done()
	}
}

func (r *Run) timeoutError() *Error {
	return limitError(KindTimeout, "the program ran past its %s deadline (this server allows timeout_ms up to %d). Do less work per run, await tool calls together with Promise.all, or pass a larger timeout_ms",
		r.timeout, r.maxTime.Milliseconds())
}

// record traces a call the program made, and reports whether to run it.
func (r *Run) record(id uint32, name string, args []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.over || int(id) != len(r.calls) {
		return false
	}
	r.calls = append(r.calls, CallRecord{Tool: name, ArgsBytes: len(args)})
	r.completed = append(r.completed, false)
	return true
}

// dispatch runs one tool call and hands its completion to the sandbox.
func (r *Run) dispatch(id uint32, name string, args json.RawMessage) {
	defer r.e.calls.Done()
	select {
	case r.inflight <- struct{}{}:
	case <-r.done:
		return
	}
	defer func() { <-r.inflight }()

	start := time.Now()
	var cached bool
	var consumed func()
	// A result handed early (Call.Prepare) is built in the VM while the
	// dispatcher decides; the call is then confirmed, or replaced.
	var early json.RawMessage
	prepare := func(out json.RawMessage) {
		if early != nil || r.isOver() {
			return
		}
		early = out
		r.sb.complete(r, callResult{id: id, ok: true, prepared: true, payload: out})
	}
	out, err := callTool(r.ctx, r.req.Dispatcher, Call{Name: name, Args: args, Run: r, Seq: int(id), cached: &cached, consumed: &consumed, prepare: prepare})
	dur := time.Since(start)
	if r.ctx.Err() != nil {
		// The run is ending (cancelled, past its deadline, or over): a
		// call that failed for that reason tells the program nothing, and
		// the run's own reason is the one to report.
		if consumed != nil {
			consumed()
		}
		return
	}
	c := callResult{id: id, ok: err == nil, payload: out, done: consumed}
	code := ""
	if err != nil {
		code, c.payload = rejectionOf(name, err)
	} else if early != nil && len(early) == len(out) && unsafe.SliceData(early) == unsafe.SliceData(out) {
		c.confirmed, c.payload = true, nil
	}
	r.mu.Lock()
	if !r.over {
		rec := &r.calls[id]
		rec.DurationMS = ms(dur)
		rec.OK = err == nil
		rec.Code = code
		rec.Cached = cached
		if err == nil {
			rec.ResultBytes = len(out)
			r.bytesFromTools += len(out)
		}
		r.completed[id] = true
	}
	r.mu.Unlock()
	if !r.isOver() {
		r.sb.complete(r, c)
	} else {
		c.consumed()
	}
}

// callTool calls the dispatcher and turns a panic into an error. The
// result goes to the VM as it is: the VM parses it, and rejects the call
// if it is not JSON.
func callTool(ctx context.Context, d Dispatcher, c Call) (out json.RawMessage, err error) {
	if d == nil {
		return nil, fmt.Errorf("no tools are available to this program (tried %s)", c.Name)
	}
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("tool %s crashed; this is a bug in the tool, not in your program", c.Name)
		}
	}()
	out, err = d.Call(ctx, c)
	if err == nil && len(out) == 0 {
		out = json.RawMessage("null")
	}
	return out, err
}

// rejection is the reason a tool call's promise is rejected with; the
// prelude turns it into a ToolError.
type rejection struct {
	Message  string `json:"message"`
	Code     string `json:"code"`
	Tool     string `json:"tool"`
	Problems any    `json:"problems,omitempty"`
}

// detailedError is an error with structured details for the program, such
// as the argument problems of a validation error.
type detailedError interface {
	ErrorDetails() any
}

// rejectionOf describes a failed call for the program: its code and the
// rejection as JSON.
func rejectionOf(name string, err error) (string, []byte) {
	rj := rejection{Message: err.Error(), Code: "tool_failed", Tool: name}
	var ce CodedError
	if errors.As(err, &ce) {
		rj.Code = ce.ErrorCode()
		if t := ce.ErrorTool(); t != "" {
			rj.Tool = t
		}
	}
	var de detailedError
	if errors.As(err, &de) {
		rj.Problems = de.ErrorDetails()
	}
	b, merr := json.Marshal(rj)
	if merr != nil {
		rj.Problems = nil
		b, _ = json.Marshal(rj) // strings always marshal
	}
	return rj.Code, b
}

// onLog records one console line; the VM has checked its limits.
func (r *Run) onLog(level int, text string) {
	if level < 0 || level >= len(logLevels) {
		level = 0
	}
	line := LogLine{Level: logLevels[level], Message: text}
	r.mu.Lock()
	if r.over {
		r.mu.Unlock()
		return
	}
	r.logs = append(r.logs, line)
	r.mu.Unlock()
	if r.req.OnLog != nil {
		r.req.OnLog(line)
	}
}

// onProgress forwards one progress report.
func (r *Run) onProgress(message string, fraction float64) {
	r.mu.Lock()
	over := r.over
	r.mu.Unlock()
	if !over && r.req.OnProgress != nil {
		r.req.OnProgress(message, fraction)
	}
}

// finish fills res from the run's outcome and ends its tool calls.
func (r *Run) finish(res *Result) {
	r.cancel()
	r.mu.Lock()
	r.over = true
	for i, done := range r.completed {
		if !done {
			r.calls[i].Code = "not_completed"
		}
	}
	res.Logs = r.logs
	res.Calls = r.calls
	res.Telemetry.BytesFromTools = r.bytesFromTools
	r.mu.Unlock()
	if r.isStopped() {
		res.Error = r.reason
		return
	}
	if r.out.status == outValue {
		res.Value = r.out.payload
		res.Telemetry.ResultBytes = len(r.out.payload)
		return
	}
	res.Error = r.outcomeError(r.out)
}

// Stats is a snapshot of the pool.
type Stats struct {
	// Size is the number of programs that may run at once.
	Size int
	// Running is the number of programs running now, and Long those of
	// them whose deadline is past the default one (see
	// Config.ReservedSlots).
	Running, Long int
	// Queued is the number of programs waiting for the pool.
	Queued int
	// Ready is the number of VMs prepared for the next runs in-process,
	// or of idle worker processes, each of which takes a run at once
	// (with the VM it prepared, or one it makes if it is still preparing).
	Ready int
	// Nested is the number of nested runs whose VMs are alive, in every
	// run tree.
	Nested int
	// Waiting is the number of runs that wait outside the pool, their
	// slots given back (see Park).
	Waiting int
	// TransformsReady is the number of warm transform processes idle,
	// each ready to parse a program at once (see
	// Config.TransformProcesses).
	TransformsReady int
}

// Stats returns a snapshot of the pool.
func (e *Executor) Stats() Stats {
	s := Stats{Size: e.cfg.PoolSize, Queued: e.sched.waiting(), Nested: int(e.nested.Load()), Waiting: int(e.waiting.Load())}
	s.Running, s.Long = e.sched.running()
	if e.local != nil {
		s.Ready = len(e.local.pool.ready)
	} else {
		s.Ready = e.procs.idleCount()
	}
	if e.transforms != nil {
		s.TransformsReady = e.transforms.idleCount()
	}
	return s
}

// stripTypes turns the run's TypeScript into JavaScript in a transform
// process. A root run strips once, holding its slot; its nested runs take
// turns, so that one run's skills cannot start a process each at once.
func (r *Run) stripTypes(code string) (string, *sourceMap, *Error) {
	if r.parent != nil {
		select {
		case r.root.stripping <- struct{}{}:
			defer func() { <-r.root.stripping }()
		case <-r.ctx.Done():
			return "", nil, transformStopped(r.ctx, r.timeoutError)
		}
	}
	return r.e.transform(r.ctx, code, TypeScript, r.timeoutError)
}
