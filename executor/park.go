package executor

import (
	"context"
	"sync"
	"time"
)

// hold is a root run's hold on its pool slot. A run holds its slot from
// start to end, except while it waits outside the pool: between the
// first of its tool calls that enters Park and the first that leaves it.
type hold struct {
	mu sync.Mutex
	// release gives the slot back; nil while the run waits outside the
	// pool, and once it has ended.
	release func()
	parked  int  // tool calls of the run's tree inside Park
	out     bool // waiting outside the pool, counted in Executor.waiting
	ended   bool
	// regain lets one tool call at a time take the slot back.
	regain sync.Mutex
}

// Park runs wait, a tool call's wait on something outside the sandbox —
// a person answering an elicitation, a model answering a sampling
// request — without holding one of the pool's slots, so that other runs
// can use it meanwhile. ctx is the tool call's context (see RunFrom);
// outside a run, Park just calls wait.
//
// The first call of a run to enter Park gives the run's slot back; the
// run's VM (its worker process, with process isolation) stays alive
// beside the pool, which so grows by one. The first call to leave Park
// takes a slot again, by the fair share across owners and ahead of its
// owner's runs that have not started, before its result reaches the
// program; calls still parked then wait holding it. At most
// Config.MaxWaiting runs wait outside the pool at once: past that, Park
// calls wait with the slot held.
//
// The run's deadline keeps running while it waits. When the run ends
// meanwhile (deadline, cancellation), Park returns the run's reason once
// wait has returned, and wait should watch ctx to return early.
//
// A program that does not await a parked call can run JavaScript while
// the slot is given back, within its deadline and heap: the CPU that
// runs use is so bounded by PoolSize + MaxWaiting runs, not PoolSize.
func Park(ctx context.Context, wait func() error) error {
	return RunFrom(ctx).Park(wait)
}

// Park is Park for a tool call of r that holds its run (Call.Run) rather
// than a context that carries it; on a nil *Run it just calls wait.
func (r *Run) Park(wait func() error) error {
	if r == nil {
		return wait()
	}
	return r.root.park(wait)
}

func (r *Run) park(wait func() error) error {
	h := &r.hold
	h.mu.Lock()
	h.parked++
	if h.parked == 1 && h.release != nil && r.e.leave() {
		h.release()
		h.release = nil
		h.out = true
	}
	h.mu.Unlock()

	err := wait()

	fail := r.regain()
	h.mu.Lock()
	h.parked--
	h.mu.Unlock()
	if fail != nil {
		return fail
	}
	return err
}

// regain takes a slot for the run again if it waits outside the pool.
// It fails when the run ends first.
func (r *Run) regain() *Error {
	h := &r.hold
	h.regain.Lock()
	defer h.regain.Unlock()
	h.mu.Lock()
	out := h.out
	h.mu.Unlock()
	if !out {
		return nil
	}
	release, fail := r.e.sched.reacquire(r.ctx, r.owner, r.long, time.Until(r.deadline), r.timeoutError)
	h.mu.Lock()
	defer h.mu.Unlock()
	if fail == nil && h.ended {
		release()
		fail = &Error{Kind: KindCanceled, Message: "the run ended while a tool call waited"}
	}
	if fail != nil {
		if r.isStopped() {
			fail = r.reason
		}
		return fail
	}
	h.release = release
	h.out = false
	r.e.rejoin()
	return nil
}

// releaseSlot gives a root run's slot back when it ends, or stops counting
// it among the runs that wait outside the pool.
func (r *Run) releaseSlot() {
	h := &r.hold
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ended = true
	if h.release != nil {
		h.release()
		h.release = nil
	}
	if h.out {
		h.out = false
		r.e.rejoin()
	}
}

// leave counts a run that gives its slot back to wait outside the pool,
// unless Config.MaxWaiting runs already do; the pool grows by a worker.
func (e *Executor) leave() bool {
	for {
		n := e.waiting.Load()
		if n >= int64(e.cfg.MaxWaiting) {
			return false
		}
		if e.waiting.CompareAndSwap(n, n+1) {
			break
		}
	}
	if e.procs != nil {
		e.procs.grow()
	}
	return true
}

// rejoin undoes leave.
func (e *Executor) rejoin() {
	e.waiting.Add(-1)
	if e.procs != nil {
		e.procs.shrink()
	}
}
