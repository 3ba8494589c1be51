package executor

import "sync/atomic"

// runners runs VM jobs on goroutines kept between jobs. A job on a fresh
// goroutine grew its 8 KiB stack again on every run — the engine is C
// transpiled to Go, and deep — which cost a sandbox worker about a
// twentieth of its CPU per trivial run (runtime.copystack); a kept
// goroutine has its stack grown already. Like callers, for tool calls.
type runners struct {
	work chan func()
	quit chan struct{}
	idle atomic.Int32
}

// maxIdleRunners bounds the goroutines that wait for a job: root jobs
// come one at a time to a VM, and nested ones are rare.
const maxIdleRunners = 4

func newRunners() *runners {
	return &runners{work: make(chan func()), quit: make(chan struct{})}
}

// start runs job on a waiting goroutine, or on a new one when none waits.
func (k *runners) start(job func()) {
	select {
	case k.work <- job:
	default:
		go k.serve(job)
	}
}

// serve runs job, then the jobs handed to it while it waits, until enough
// others wait or close is called.
func (k *runners) serve(job func()) {
	for {
		job()
		job = nil
		if k.idle.Add(1) > maxIdleRunners {
			k.idle.Add(-1)
			return
		}
		select {
		case job = <-k.work:
			k.idle.Add(-1)
		case <-k.quit:
			k.idle.Add(-1)
			return
		}
	}
}

// close ends the waiting goroutines; a job started later still runs.
func (k *runners) close() { close(k.quit) }
