package executor

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/quickjs"
)

//go:embed prelude.js
var preludeJS string

// Executor runs programs in fresh QuickJS VMs from a pool. It is safe for
// concurrent use.
type Executor struct {
	cfg  Config
	pool *pool

	// calls tracks tool-call goroutines, which may outlive their run
	// until the dispatcher honours the run's cancelled context.
	calls sync.WaitGroup

	closeOnce sync.Once
}

// New starts an executor and its pool's maintainer.
func New(cfg Config) (*Executor, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	code, err := compilePrelude()
	if err != nil {
		return nil, err
	}
	return &Executor{
		cfg:  cfg,
		pool: newPool(cfg.PoolSize, code, runtimeLimits{cfg.MaxLogBytes, cfg.MaxResultBytes}, cfg.Logger.With("component", "executor")),
	}, nil
}

func compilePrelude() ([]byte, error) {
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, fmt.Errorf("compile prelude: %w", err)
	}
	defer vm.Close()
	code, err := vm.Compile(preludeJS, quickjs.EvalGlobal)
	if err != nil {
		return nil, fmt.Errorf("compile prelude: %w", err)
	}
	return code, nil
}

// Config returns the executor's configuration with defaults applied.
func (e *Executor) Config() Config { return e.cfg }

// Close stops the pool and waits for tool calls still in flight. Runs in
// progress must have returned.
func (e *Executor) Close() error {
	e.closeOnce.Do(func() {
		e.pool.close()
		e.calls.Wait()
	})
	return nil
}

// evalAsync is QuickJS's JS_EVAL_FLAG_ASYNC: a global script that may use
// top-level await, evaluating to a promise of {value: completion value}.
const evalAsync = 1 << 7

// wrapPrefix turns a program that uses top-level return into the body of
// an async function. It stays on the program's first line, so lines keep
// their numbers.
const wrapPrefix = "(async function () {"

// Run runs one program and returns its record. Every failure, including
// the limits, is in the record's Error; Run never panics on any program.
func (e *Executor) Run(ctx context.Context, req Request) (res *Result) {
	start := time.Now()
	res = &Result{Status: StatusError, Value: json.RawMessage("null"), Logs: []LogLine{}, Calls: []CallRecord{}}
	defer func() {
		res.Telemetry.DurationMS = ms(time.Since(start))
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
	timeout = min(timeout, e.cfg.MaxTimeout)

	if !req.Nested {
		queued := time.Now()
		if fail := e.acquire(ctx); fail != nil {
			res.Telemetry.QueueWaitMS = ms(time.Since(queued))
			res.Error = fail
			return res
		}
		defer func() { <-e.pool.slots }()
		res.Telemetry.QueueWaitMS = ms(time.Since(queued))
	}

	layout := req.Functions
	if layout == nil {
		layout = emptyLayout
	}
	in, err := e.pool.take(layout)
	if err != nil {
		res.Error = &Error{Kind: KindInternal, Message: "could not start a sandbox: " + err.Error()}
		return res
	}
	defer e.pool.discard(in)

	r := newRun(e, in, &req, smap, timeout)
	in.run = r
	defer func() {
		in.run = nil
		r.finish()
		if p := recover(); p != nil {
			e.cfg.Logger.Error("run panicked", "panic", fmt.Sprint(p))
			res.Error = &Error{Kind: KindInternal, Message: "the sandbox failed unexpectedly; the run was abandoned (this is a bug in codecell, not in your program)"}
		}
		res.Logs = r.logs
		res.Calls = r.calls
		res.Telemetry.BytesFromTools = r.bytesFromTools
	}()
	r.arm(ctx)

	r.execute(src)
	if r.fail != nil {
		res.Error = r.fail
		return res
	}
	res.Value = r.value
	res.Telemetry.ResultBytes = len(r.value)
	return res
}

// acquire waits for a pool slot, up to the queue wait.
func (e *Executor) acquire(ctx context.Context) *Error {
	select {
	case e.pool.slots <- struct{}{}:
		return nil
	default:
	}
	wait := time.NewTimer(e.cfg.QueueWait)
	defer wait.Stop()
	select {
	case e.pool.slots <- struct{}{}:
		return nil
	case <-wait.C:
		return limitError(KindBusy, "all %d sandboxes stayed busy for %s (the queue wait limit); retry in a few seconds", cap(e.pool.slots), e.cfg.QueueWait)
	case <-ctx.Done():
		return canceledError(ctx)
	}
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
		return stripTypes(req.Code)
	}
	return "", nil, &Error{Kind: KindInvalidRequest, Message: fmt.Sprintf("unknown language %q; use \"javascript\" or \"typescript\"", req.Language)}
}

func canceledError(ctx context.Context) *Error {
	msg := "the run was cancelled by the client"
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, context.DeadlineExceeded):
		msg = "the request's deadline passed before the run finished"
	case cause != nil && !errors.Is(cause, context.Canceled):
		msg = "the run was cancelled: " + cause.Error()
	}
	return &Error{Kind: KindCanceled, Message: msg}
}

// run is the state of one program on its VM. Apart from stop and the
// channels, it is touched only on the run's goroutine: the host functions
// run there, called by the VM.
type run struct {
	e        *Executor
	in       *instance
	req      *Request
	smap     *sourceMap
	src      string // the JavaScript evaluated
	wrapped  bool
	deadline time.Time
	timeout  time.Duration

	ctx    context.Context // for tool calls; cancelled when the run ends
	cancel context.CancelFunc

	stopOnce sync.Once
	stopped  chan struct{} // closed by stop
	reason   *Error        // why it stopped, written before stopped closes
	exited   chan struct{} // closed when the run is over
	// disarm stops the deadline timer and the cancellation watch.
	disarm func()
	// mu orders stop against finish: after finish, stop starts no
	// interrupter.
	mu           sync.Mutex
	over         bool
	interrupters sync.WaitGroup

	done     chan completion
	pending  map[int]*quickjs.PromiseCapability
	inflight chan struct{}

	settled        bool
	value          json.RawMessage
	fail           *Error
	logs           []LogLine
	logBytes       int
	calls          []CallRecord
	bytesFromTools int
}

type completion struct {
	id     int
	result json.RawMessage
	err    error
	dur    time.Duration
}

func newRun(e *Executor, in *instance, req *Request, smap *sourceMap, timeout time.Duration) *run {
	ctx, cancel := context.WithCancel(context.Background())
	return &run{
		e:        e,
		in:       in,
		req:      req,
		smap:     smap,
		timeout:  timeout,
		deadline: time.Now().Add(timeout),
		ctx:      ctx,
		cancel:   cancel,
		stopped:  make(chan struct{}),
		exited:   make(chan struct{}),
		done:     make(chan completion),
		pending:  map[int]*quickjs.PromiseCapability{},
		inflight: make(chan struct{}, e.cfg.MaxConcurrentCalls),
		logs:     []LogLine{},
		calls:    []CallRecord{},
	}
}

// arm stops the run at its deadline or when ctx ends. Nothing waits on a
// goroutine for that: the timer and the context call stop when they fire.
func (r *run) arm(ctx context.Context) {
	unwatch := context.AfterFunc(ctx, func() { r.stop(canceledError(ctx)) })
	timer := time.AfterFunc(time.Until(r.deadline), func() { r.stop(r.timeoutError()) })
	r.disarm = func() {
		unwatch()
		timer.Stop()
	}
}

// stop ends the run for reason: the first reason wins. It may be called
// from any goroutine, and starts one that interrupts the VM until the run
// exits; it repeats the interrupt because every call into the VM clears a
// pending one.
func (r *run) stop(reason *Error) {
	r.stopOnce.Do(func() {
		r.reason = reason
		close(r.stopped)
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.over {
			return
		}
		r.interrupters.Add(1)
		go r.interrupt()
	})
}

func (r *run) interrupt() {
	defer r.interrupters.Done()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		r.in.vm.Interrupt()
		select {
		case <-r.exited:
			return
		case <-tick.C:
		}
	}
}

func (r *run) isStopped() bool {
	select {
	case <-r.stopped:
		return true
	default:
		return false
	}
}

func (r *run) timeoutError() *Error {
	return limitError(KindTimeout, "the program ran past its %s deadline (this server allows timeout_ms up to %d). Do less work per run, await tool calls together with Promise.all, or pass a larger timeout_ms",
		r.timeout, r.e.cfg.MaxTimeout.Milliseconds())
}

// finish releases what the run holds in the VM and stops its goroutines.
func (r *run) finish() {
	for id, pc := range r.pending {
		r.calls[id].Code = "not_completed"
		pc.Resolve.Free()
		pc.Reject.Free()
		delete(r.pending, id)
	}
	r.disarm()
	r.mu.Lock()
	r.over = true
	r.mu.Unlock()
	close(r.exited)
	r.cancel()
	r.interrupters.Wait()
}

// enter prepares a call into the VM: it reports false once the run has
// stopped, and otherwise arms the VM's own timeout with the time left, a
// second line of defence behind watch.
func (r *run) enter() bool {
	if r.isStopped() {
		return false
	}
	left := time.Until(r.deadline)
	if left <= 0 {
		r.stop(r.timeoutError())
		return false
	}
	r.in.vm.SetEvalTimeout(left)
	return true
}

// execute runs the program to its end.
func (r *run) execute(src string) {
	r.src = src
	defer func() {
		if r.reason != nil && r.isStopped() {
			r.fail = r.reason
		}
	}()
	vm := r.in.vm
	vm.SetMemoryLimit(uintptr(r.e.cfg.MemoryLimit))
	vm.SetMaxStackSize(uintptr(r.e.cfg.MaxStackFrames))

	if len(r.req.Args) > 0 {
		if !r.enter() {
			return
		}
		if _, err := r.in.setArgs.Call(quickjs.UndefinedValue, string(r.req.Args)); err != nil {
			r.failWith(err)
			return
		}
	}

	if !r.enter() {
		return
	}
	promise, err := vm.EvalValue(src, quickjs.EvalGlobal|evalAsync)
	if isReturnOutsideFunction(err) {
		r.wrapped = true
		if !r.enter() {
			return
		}
		promise, err = vm.EvalValue(wrapPrefix+src+"\n})()", quickjs.EvalGlobal)
	}
	if err != nil {
		r.failWith(err)
		return
	}
	if !r.enter() {
		promise.Free()
		return
	}
	_, err = r.in.settle.Call(quickjs.UndefinedValue, promise, r.wrapped)
	promise.Free()
	if err != nil {
		r.failWith(err)
		return
	}

	for {
		if !r.enter() || r.settled {
			return
		}
		if _, err := vm.ExecutePendingJobs(); err != nil {
			r.failWith(err)
			return
		}
		if r.settled || r.isStopped() {
			return
		}
		if len(r.pending) == 0 {
			r.fail = &Error{Kind: KindUnsettled, Message: "the program is waiting for a promise that can never settle: no tool call is in flight and the sandbox has no timers or I/O. Make sure every promise you await is resolved or rejected"}
			return
		}
		select {
		case c := <-r.done:
			r.complete(c)
		case <-r.stopped:
			return
		}
		for more := true; more; {
			select {
			case c := <-r.done:
				r.complete(c)
			default:
				more = false
			}
		}
	}
}

// failWith records an error that came out of the VM, unless the run was
// stopped, whose reason is the better explanation.
func (r *run) failWith(err error) {
	if r.isStopped() || r.fail != nil {
		return
	}
	var je *quickjs.Error
	if !errors.As(err, &je) {
		r.fail = &Error{Kind: KindInternal, Message: "the sandbox failed: " + err.Error()}
		return
	}
	r.fail = r.exception(exception{Name: je.Name, Message: je.Message, Stack: je.Stack, raw: je.Error()}, je.LineNumber, je.ColumnNumber)
}

// exception is an error as the prelude describes it.
type exception struct {
	Name     string          `json:"name"`
	Message  string          `json:"message"`
	Stack    string          `json:"stack"`
	Code     string          `json:"code"`
	Tool     string          `json:"tool"`
	Problems json.RawMessage `json:"problems"`
	Thrown   string          `json:"thrown"`
	Kind     Kind            `json:"kind"`
	Size     int             `json:"size"`
	raw      string
}

// exception turns a JavaScript exception into a run error of the right
// kind, with its position in the program as written.
func (r *run) exception(x exception, line, col int) *Error {
	cfg := r.e.cfg
	switch {
	case x.Kind == KindResultSize:
		return limitError(KindResultSize, "the result is %s of JSON; the limit is %s. Return a summary, filter the data in your program, or return one page at a time", formatBytes(int64(x.Size)), formatBytes(int64(cfg.MaxResultBytes)))
	case x.Kind == KindResult:
		return &Error{Kind: KindResult, Name: x.Name, Message: x.Message}
	case x.Name == "InternalError" && x.Message == "out of memory":
		return limitError(KindMemory, "the program used more than its %s heap limit. Process data in smaller pieces, or keep less of it in memory", formatBytes(cfg.MemoryLimit))
	case x.Name == "InternalError" && x.Message == "stack overflow":
		return limitError(KindStack, "the call stack grew past its limit of %d frames; look for unbounded recursion", cfg.MaxStackFrames)
	case x.Name == "InternalError" && x.Message == "interrupted":
		return r.timeoutError()
	}
	e := &Error{Kind: KindRuntime, Name: x.Name, Stack: r.mapStack(x.Stack)}
	switch {
	case x.Name == "SyntaxError" && line > 0:
		e.Kind = KindSyntax
		e.Line, e.Column = r.position(line, col)
	default:
		e.Line, e.Column = r.stackPosition(x.Stack)
	}
	switch {
	case x.Name == "ToolError":
		e.Kind = KindTool
		e.Tool, e.Code, e.Problems = x.Tool, x.Code, x.Problems
		e.Message = fmt.Sprintf("uncaught ToolError from %s (%s): %s. Catch it with try/catch to handle the failure in your program", x.Tool, x.Code, x.Message)
	case x.Thrown != "":
		e.Message = fmt.Sprintf("uncaught exception: the program threw a %s, not an Error: %s", x.Thrown, x.Message)
	case x.Name != "":
		e.Message = x.Name + ": " + x.Message
	case x.raw != "":
		e.Message = "uncaught exception: " + x.raw
	default:
		e.Message = "uncaught exception: " + x.Message
	}
	return e
}

var stackPos = regexp.MustCompile(`<eval>:(\d+):(\d+)`)

// stackPosition returns the program position of the innermost frame of a
// stack trace that lies in the program.
func (r *run) stackPosition(stack string) (int, int) {
	m := stackPos.FindStringSubmatch(stack)
	if m == nil {
		return 0, 0
	}
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2])
	return r.position(line, col)
}

// mapStack rewrites the positions in a stack trace to the program as
// written.
func (r *run) mapStack(stack string) string {
	if stack == "" || (r.smap == nil && !r.wrapped) {
		return stack
	}
	if r.wrapped {
		// The wrapper's closing line is not the program's.
		last := strings.Count(r.src, "\n") + 1
		var kept []string
		for _, l := range strings.SplitAfter(stack, "\n") {
			if m := stackPos.FindStringSubmatch(l); m != nil {
				if n, _ := strconv.Atoi(m[1]); n > last {
					continue
				}
			}
			kept = append(kept, l)
		}
		stack = strings.Join(kept, "")
	}
	return stackPos.ReplaceAllStringFunc(stack, func(s string) string {
		m := stackPos.FindStringSubmatch(s)
		line, _ := strconv.Atoi(m[1])
		col, _ := strconv.Atoi(m[2])
		line, col = r.position(line, col)
		return fmt.Sprintf("<eval>:%d:%d", line, col)
	})
}

// position maps a 1-based position in the evaluated source to the program
// as written: it removes the wrapper and follows the TypeScript source map.
func (r *run) position(line, col int) (int, int) {
	if r.wrapped && line == 1 {
		col = max(col-len(wrapPrefix), 1)
	}
	if l, c, ok := r.smap.original(line, col); ok {
		return l, c
	}
	return line, col
}

func isReturnOutsideFunction(err error) bool {
	var je *quickjs.Error
	return errors.As(err, &je) && je.Name == "SyntaxError" && strings.Contains(je.Message, "return not in a function")
}

// Stats is a snapshot of the pool.
type Stats struct {
	// Size is the number of programs that may run at once.
	Size int
	// Running is the number of programs running now.
	Running int
	// Ready is the number of VMs prepared for the next runs.
	Ready int
}

// Stats returns a snapshot of the pool.
func (e *Executor) Stats() Stats {
	return Stats{Size: cap(e.pool.slots), Running: len(e.pool.slots), Ready: len(e.pool.ready)}
}
