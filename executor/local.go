package executor

import (
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/codecell/codecell/executor/internal/engine"
)

// sandbox is where the VMs of runs live: this process (localSandbox) or a
// worker process (worker). A root run gets one with its pool slot; a
// nested run uses its root's.
type sandbox interface {
	// start starts r's program. The sandbox reports the program's tool
	// calls, console lines and progress to r, then its outcome with
	// r.deliver, and calls r.ended once the VM is gone.
	start(r *Run, spec *jobSpec) error
	// complete hands r's VM a finished tool call.
	complete(r *Run, c callResult)
	// interrupt asks r's VM to stop.
	interrupt(r *Run)
	// abandon ends r now, when its VM did not stop in time: a worker
	// process is killed with every run in it, unless r is a nested run,
	// whose worker is killed once its root ends; a VM in this process is
	// left to finish on its own goroutine.
	abandon(r *Run)
}

var (
	_ sandbox = (*localSandbox)(nil)
	_ sandbox = (*worker)(nil)
)

// localSandbox runs VMs on goroutines of this process.
type localSandbox struct {
	pool    *vmPool
	runners *runners // the jobs' goroutines
}

func (s *localSandbox) start(r *Run, spec *jobSpec) error {
	in, err := s.pool.take(spec.Layout)
	if err != nil {
		return err
	}
	j := newVMJob(spec, &localHost{r: r})
	r.mu.Lock()
	r.vj = j
	r.mu.Unlock()
	if r.isStopped() {
		j.stop()
	}
	s.runners.start(func() {
		// A VM stuck inside a built-in is stopped by taking its memory
		// away (abandon): this goroutine then panics out of the engine,
		// and the job ends.
		debug.SetPanicOnFault(true)
		out := j.run(in)
		if r.depth > 0 {
			// A nested run leaves its root's tree before its caller
			// has its outcome: the caller may end the root run at once,
			// and a root run ends with none of its nested runs alive.
			r.ended()
			r.deliver(out)
			s.pool.giveBack(in)
			return
		}
		// The outcome first; then the VM is made fresh for the next run
		// (or closed), before the run's slot is free: the next run finds
		// it ready rather than build one.
		r.deliver(out)
		s.pool.giveBack(in)
		r.ended()
	})
	return nil
}

func (s *localSandbox) complete(r *Run, c callResult) {
	r.mu.Lock()
	j := r.vj
	r.mu.Unlock()
	if j != nil {
		j.inbox.push(c)
	} else {
		c.consumed()
	}
}

func (s *localSandbox) interrupt(r *Run) {
	r.mu.Lock()
	j := r.vj
	r.mu.Unlock()
	if j != nil {
		j.stop()
	}
}

// abandon ends r now and kills its VM, which is stuck inside a built-in:
// its goroutine leaves the engine at its next access to the VM's memory,
// which every built-in that runs long makes, and the VM's slot, goroutine
// and memory are free again.
func (s *localSandbox) abandon(r *Run) {
	r.deliver(outcome{status: outLost})
	r.mu.Lock()
	j := r.vj
	r.mu.Unlock()
	if j != nil {
		j.kill()
	}
}

// localHost reports a job's events straight to its run. It holds the
// tool calls the program makes until the VM has nothing else to do: then
// a call that is the only one in flight runs on the VM's goroutine, and
// several run concurrently on goroutines of their own. A program that
// awaits its calls one by one so pays no goroutine hand-off per call.
type localHost struct {
	r     *Run
	calls []heldCall
	// bytes is the bytes of the names and arguments of calls.
	bytes int
}

var _ flusher = (*localHost)(nil)

type heldCall struct {
	id   uint32
	name string
	args []byte
}

// call holds a call until the VM waits, or starts the calls held once
// their arguments pass flushAt.
func (h *localHost) call(id uint32, name, args string) {
	if b := []byte(args); h.r.record(id, name, b) {
		h.calls = append(h.calls, heldCall{id, name, b})
		h.bytes += len(name) + len(b)
	}
	if h.bytes > flushAt {
		h.flush(-1)
	}
}

// flush never lends the job's turn: a call alone runs here, on the VM's
// goroutine, and its result is queued when flush returns.
func (h *localHost) flush(inFlight int) bool {
	h.bytes = 0
	if len(h.calls) == 1 && inFlight == 1 {
		c := h.calls[0]
		h.calls = h.calls[:0]
		h.r.e.calls.Add(1)
		h.r.dispatch(c.id, c.name, c.args)
		return false
	}
	for _, c := range h.calls {
		h.r.e.calls.Add(1)
		h.r.e.callers.start(callTask{h.r, c.id, c.name, c.args})
	}
	clear(h.calls)
	h.calls = h.calls[:0]
	return false
}

// acknowledge does nothing: a result's hold ends as the VM takes it
// (vmJob.complete).
func (h *localHost) acknowledge() {}

func (h *localHost) log(level int, text string) { h.r.onLog(level, text) }
func (h *localHost) progress(message string, f float64) {
	h.r.onProgress(message, f)
}

// vmPool hands out fresh VMs in this process. It keeps up to cap(ready)
// VMs prepared ahead of time by its maintainer goroutine, which also
// closes the VMs that jobs are done with. A VM serves exactly one job.
type vmPool struct {
	prelude *engine.Bytecode
	log     *slog.Logger
	// layout is what the maintainer installs in the VMs it prepares: the
	// layout of the latest run.
	layout atomic.Pointer[Layout]

	ready chan *instance
	// out counts the VMs taken and not given back, which come back
	// ready: the maintainer prepares VMs only for runs beyond them.
	out    atomic.Int32
	retire chan *instance
	wake   chan struct{}
	quit   chan struct{}
	done   chan struct{}
	closed atomic.Bool
}

func newVMPool(size int, prelude *engine.Bytecode, log *slog.Logger) *vmPool {
	p := &vmPool{
		prelude: prelude,
		log:     log,
		ready:   make(chan *instance, size),
		retire:  make(chan *instance, 2*size),
		wake:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	p.layout.Store(emptyLayout)
	go p.maintain()
	return p
}

// maintain keeps the ready queue full and closes retired VMs until quit.
// Preparing comes first: a run waits for a ready VM, while a retired one
// can wait for an idle moment to be closed.
func (p *vmPool) maintain() {
	defer close(p.done)
	backoff := time.Duration(0)
	for {
		for backoff == 0 && len(p.ready)+int(p.out.Load()) < cap(p.ready) {
			select {
			case <-p.quit:
				return
			default:
			}
			in, err := newInstance(p.prelude, p.layout.Load())
			if err != nil {
				// Runs still get VMs, made on demand; try again later.
				p.log.Error("prepare vm", "err", err)
				backoff = min(max(2*backoff, 10*time.Millisecond), time.Second)
				break
			}
			select {
			case p.ready <- in:
			default: // used VMs given back filled it meanwhile
				in.close()
			}
		}
		var retry <-chan time.Time
		if backoff > 0 {
			retry = time.After(backoff)
		}
		select {
		case in := <-p.retire:
			in.close()
		case <-p.wake:
		case <-retry:
			backoff = 0
		case <-p.quit:
			return
		}
	}
}

// giveBack takes back a VM that take returned, once its job is over: it
// is reset for the next run when one is wanted and it has the latest
// layout (instance.reset), and closed otherwise.
func (p *vmPool) giveBack(in *instance) {
	if !p.closed.Load() && len(p.ready) < cap(p.ready) && in.layout == p.layout.Load() && in.resetsCheaply() && in.reset() {
		select {
		case p.ready <- in:
			p.out.Add(-1)
			if p.closed.Load() {
				// Close began meanwhile, and may have drained the queue
				// before this VM arrived.
				p.drain()
			}
			return
		default: // the maintainer filled it meanwhile
		}
	}
	p.out.Add(-1)
	p.discard(in)
}

// take returns a prepared VM with layout installed, or makes one when none
// is ready. VMs prepared with another layout (the catalogue changed) are
// closed, and the maintainer prepares the next ones with layout.
func (p *vmPool) take(layout *Layout) (*instance, error) {
	if p.layout.Load() != layout {
		p.layout.Store(layout)
	}
	for {
		select {
		case in := <-p.ready:
			p.poke()
			if in.layout == layout {
				p.out.Add(1)
				return in, nil
			}
			p.discard(in)
			continue
		default:
		}
		break
	}
	p.poke()
	in, err := newInstance(p.prelude, layout)
	if err == nil {
		p.out.Add(1)
	}
	return in, err
}

// discard hands a used VM to the maintainer to close.
func (p *vmPool) discard(in *instance) {
	if p.closed.Load() {
		in.close() // a job left behind at Close ends
		return
	}
	select {
	case p.retire <- in:
		p.poke()
	default:
		in.close()
	}
	if p.closed.Load() {
		// Close began meanwhile, and may have drained the queue before
		// this VM arrived.
		for {
			select {
			case in := <-p.retire:
				in.close()
			default:
				return
			}
		}
	}
}

func (p *vmPool) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// close stops the maintainer and closes every VM it holds. Jobs in
// progress close their own VMs.
func (p *vmPool) close() {
	p.closed.Store(true)
	close(p.quit)
	<-p.done
	p.drain()
}

// drain closes the VMs ready or retired.
func (p *vmPool) drain() {
	for {
		select {
		case in := <-p.ready:
			in.close()
		case in := <-p.retire:
			in.close()
		default:
			return
		}
	}
}
