package executor

import "sync/atomic"

// callers runs tool calls on goroutines kept between calls. Starting a
// goroutine per call cost a fresh stack, grown again by every call on
// its way to the dispatcher and back (a seventh of a bridged call's CPU
// in process mode); a kept goroutine has its stack grown already.
type callers struct {
	work chan callTask
	quit chan struct{}
	idle atomic.Int32
}

// callTask is one call to run: r.dispatch(id, name, args).
type callTask struct {
	r    *Run
	id   uint32
	name string
	args []byte
}

// maxIdleCallers bounds the goroutines that wait for a call: a burst of
// parallel calls leaves no more than these behind.
const maxIdleCallers = 32

func newCallers() *callers {
	return &callers{work: make(chan callTask), quit: make(chan struct{})}
}

// start runs the call on a waiting goroutine, or on a new one when none
// waits.
func (c *callers) start(t callTask) {
	select {
	case c.work <- t:
	default:
		go c.serve(t)
	}
}

// serve runs t, then the calls handed to it while it waits, until enough
// others wait or the executor closes.
func (c *callers) serve(t callTask) {
	growStack()
	for {
		t.r.dispatch(t.id, t.name, t.args)
		t = callTask{}
		if c.idle.Add(1) > maxIdleCallers {
			c.idle.Add(-1)
			return
		}
		select {
		case t = <-c.work:
			c.idle.Add(-1)
		case <-c.quit:
			c.idle.Add(-1)
			return
		}
	}
}

// close ends the waiting goroutines; a call started later still runs.
func (c *callers) close() { close(c.quit) }

// callStack is about the stack a tool call takes on its way through the
// dispatcher (the engine's gate and its stages) and back.
const callStack = 32 << 10

// growStack grows a new goroutine's stack to hold a call, in one copy
// made while the stack is shallow. Grown by the call itself instead, the
// stack doubled three times from the runtime's 8 KiB, each time deep,
// and the runtime walks and adjusts every frame of a stack it copies: on
// 100 parallel calls, of which all but the 32 kept goroutines start
// fresh ones, that was a fifth of the server's CPU.
//
//go:noinline
func growStack() {
	var b [callStack]byte
	keepStack(b[:])
}

//go:noinline
func keepStack([]byte) {}
