package executor

import (
	"context"
	"sync"
	"time"
)

// scheduler hands out the pool's slots. Runs queue per owner, and each
// slot that frees goes to the waiting owner that holds the fewest, the
// tie going round-robin: no owner holds more than its share while
// another waits, except for slots it held before the other came (runs
// are not preempted).
//
// Long runs — those whose deadline is past the default one — hold at
// most longMax slots together: the others, the reserve, are kept for
// runs within the default deadline, which give their slot back within
// it. Whatever long runs hold, then, a run that waits gets a slot within
// about the default deadline, its owner's fair share permitting. A long
// run that finds every slot it may take held waits, while runs within
// the default deadline behind it may take the reserve.
type scheduler struct {
	mu      sync.Mutex
	size    int
	longMax int
	busy    int
	long    int // slots held by long runs
	held    map[string]int
	queues  map[string][]*waiter
	order   []string // owners with waiters, the next in turn first
	closed  bool
}

type waiter struct {
	owner   string
	long    bool
	grant   chan struct{} // closed when the slot is granted
	granted bool
}

// newScheduler returns a scheduler of size slots, reserve of which long
// runs never take.
func newScheduler(size, reserve int) *scheduler {
	return &scheduler{size: size, longMax: size - reserve, held: map[string]int{}, queues: map[string][]*waiter{}}
}

// errClosed is what acquire reports once the scheduler is closed.
var errClosed = &Error{Kind: KindCanceled, Message: "the executor is shutting down; the run did not start"}

// acquire waits up to wait for a slot for owner's run, long or not. It
// returns the function that gives the slot back.
func (s *scheduler) acquire(ctx context.Context, owner string, long bool, wait time.Duration, busy func() *Error) (func(), *Error) {
	return s.enqueue(ctx, owner, long, wait, busy, false)
}

// reacquire is acquire for a run that gave its slot back while it waited
// outside the pool (see Park): it waits ahead of its owner's runs that
// have not started, and its owner's turn comes by the fair share as for
// any other run.
func (s *scheduler) reacquire(ctx context.Context, owner string, long bool, wait time.Duration, busy func() *Error) (func(), *Error) {
	return s.enqueue(ctx, owner, long, wait, busy, true)
}

func (s *scheduler) enqueue(ctx context.Context, owner string, long bool, wait time.Duration, busy func() *Error, front bool) (func(), *Error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errClosed
	}
	w := &waiter{owner: owner, long: long, grant: make(chan struct{})}
	if len(s.queues[owner]) == 0 {
		s.order = append(s.order, owner)
	}
	if front {
		s.queues[owner] = append([]*waiter{w}, s.queues[owner]...)
	} else {
		s.queues[owner] = append(s.queues[owner], w)
	}
	s.dispatch()
	granted := w.granted
	s.mu.Unlock()
	if granted {
		return s.releaser(owner, long), nil
	}

	timer := time.NewTimer(max(wait, 0))
	defer timer.Stop()
	var fail *Error
	select {
	case <-w.grant:
		s.mu.Lock()
		granted := w.granted
		s.mu.Unlock()
		if !granted {
			return nil, errClosed
		}
		return s.releaser(owner, long), nil
	case <-timer.C:
		fail = busy()
	case <-ctx.Done():
		fail = canceledError(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.granted {
		if s.closed || ctx.Err() != nil {
			s.release(owner, long)
			return nil, fail
		}
		return s.releaser(owner, long), nil // granted as the wait ran out
	}
	s.remove(w)
	if s.closed {
		return nil, errClosed
	}
	return nil, fail
}

// grantable reports whether w could take a free slot. s.mu is held.
func (s *scheduler) grantable(w *waiter) bool {
	return !w.long || s.long < s.longMax
}

// dispatch hands free slots to waiters: each to the first waiter that
// may take it of the owner that holds the fewest, the earliest in turn
// among equals. s.mu is held.
func (s *scheduler) dispatch() {
	for !s.closed && s.busy < s.size {
		best, bestAt := -1, 0
		for i, o := range s.order {
			if best >= 0 && s.held[o] >= s.held[s.order[best]] {
				continue
			}
			for j, w := range s.queues[o] {
				if s.grantable(w) {
					best, bestAt = i, j
					break
				}
			}
		}
		if best < 0 {
			return
		}
		o := s.order[best]
		q := s.queues[o]
		w := q[bestAt]
		q = append(q[:bestAt:bestAt], q[bestAt+1:]...)
		s.order = append(s.order[:best], s.order[best+1:]...)
		if len(q) == 0 {
			delete(s.queues, o)
		} else {
			s.queues[o] = q
			s.order = append(s.order, o) // its next waiter waits for its turn
		}
		s.busy++
		s.held[o]++
		if w.long {
			s.long++
		}
		w.granted = true
		close(w.grant)
	}
}

func (s *scheduler) releaser(owner string, long bool) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.release(owner, long)
			s.mu.Unlock()
		})
	}
}

// release gives a slot back and hands free slots to waiters. s.mu is held.
func (s *scheduler) release(owner string, long bool) {
	s.busy--
	if long {
		s.long--
	}
	if s.held[owner]--; s.held[owner] <= 0 {
		delete(s.held, owner)
	}
	s.dispatch()
}

// remove takes a waiter that gave up out of its queue. s.mu is held.
func (s *scheduler) remove(w *waiter) {
	q := s.queues[w.owner]
	for i, x := range q {
		if x == w {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) > 0 {
		s.queues[w.owner] = q
		return
	}
	delete(s.queues, w.owner)
	for i, o := range s.order {
		if o == w.owner {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

// running returns the number of slots in use, and of those held by long
// runs.
func (s *scheduler) running() (all, long int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busy, s.long
}

// waiting returns the number of acquires that wait for a slot.
func (s *scheduler) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, q := range s.queues {
		n += len(q)
	}
	return n
}

// close refuses every later acquire and wakes the waiters, which fail.
func (s *scheduler) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, q := range s.queues {
		for _, w := range q {
			w.granted = false
			close(w.grant)
		}
	}
	s.queues = map[string][]*waiter{}
	s.order = nil
}
