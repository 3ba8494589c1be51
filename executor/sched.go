package executor

import (
	"context"
	"sync"
	"time"
)

// scheduler hands out the pool's slots. A run gets one at once while one
// is free and nobody waits. Otherwise runs queue per owner, and each slot
// that frees goes to the waiting owner that holds the fewest, the tie
// going round-robin: no owner holds more than its share while another
// waits, except for slots it held before the other came (runs are not
// preempted).
type scheduler struct {
	mu     sync.Mutex
	size   int
	busy   int
	held   map[string]int
	queues map[string][]*waiter
	order  []string // owners with waiters, the next in turn first
	closed bool
}

type waiter struct {
	owner   string
	grant   chan struct{} // closed when the slot is granted
	granted bool
}

func newScheduler(size int) *scheduler {
	return &scheduler{size: size, held: map[string]int{}, queues: map[string][]*waiter{}}
}

// errClosed is what acquire reports once the scheduler is closed.
var errClosed = &Error{Kind: KindCanceled, Message: "the executor is shutting down; the run did not start"}

// acquire waits up to wait for a slot for owner. It returns the function
// that gives the slot back.
func (s *scheduler) acquire(ctx context.Context, owner string, wait time.Duration, busy func() *Error) (func(), *Error) {
	return s.enqueue(ctx, owner, wait, busy, false)
}

// reacquire is acquire for a run that gave its slot back while it waited
// outside the pool (see Park): it waits ahead of its owner's runs that
// have not started, and its owner's turn comes by the fair share as for
// any other run.
func (s *scheduler) reacquire(ctx context.Context, owner string, wait time.Duration, busy func() *Error) (func(), *Error) {
	return s.enqueue(ctx, owner, wait, busy, true)
}

func (s *scheduler) enqueue(ctx context.Context, owner string, wait time.Duration, busy func() *Error, front bool) (func(), *Error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errClosed
	}
	if s.busy < s.size && len(s.order) == 0 {
		s.take(owner)
		s.mu.Unlock()
		return s.releaser(owner), nil
	}
	w := &waiter{owner: owner, grant: make(chan struct{})}
	if len(s.queues[owner]) == 0 {
		s.order = append(s.order, owner)
	}
	if front {
		s.queues[owner] = append([]*waiter{w}, s.queues[owner]...)
	} else {
		s.queues[owner] = append(s.queues[owner], w)
	}
	s.mu.Unlock()

	timer := time.NewTimer(wait)
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
		return s.releaser(owner), nil
	case <-timer.C:
		fail = busy()
	case <-ctx.Done():
		fail = canceledError(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.granted {
		if s.closed || ctx.Err() != nil {
			s.release(owner)
			return nil, fail
		}
		return s.releaser(owner), nil // granted as the wait ran out
	}
	s.remove(w)
	if s.closed {
		return nil, errClosed
	}
	return nil, fail
}

func (s *scheduler) take(owner string) {
	s.busy++
	s.held[owner]++
}

func (s *scheduler) releaser(owner string) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.release(owner)
			s.mu.Unlock()
		})
	}
}

// release gives a slot back and hands free slots to waiters. s.mu is held.
func (s *scheduler) release(owner string) {
	s.busy--
	if s.held[owner]--; s.held[owner] <= 0 {
		delete(s.held, owner)
	}
	for !s.closed && s.busy < s.size && len(s.order) > 0 {
		best := 0
		for i, o := range s.order {
			if s.held[o] < s.held[s.order[best]] {
				best = i
			}
		}
		o := s.order[best]
		q := s.queues[o]
		w := q[0]
		s.queues[o] = q[1:]
		s.order = append(s.order[:best], s.order[best+1:]...)
		if len(s.queues[o]) == 0 {
			delete(s.queues, o)
		} else {
			s.order = append(s.order, o) // its next waiter waits for its turn
		}
		s.take(o)
		w.granted = true
		close(w.grant)
	}
}

// remove takes a waiter that gave up out of its queue. s.mu is held.
func (s *scheduler) remove(w *waiter) {
	q := s.queues[w.owner]
	for i, x := range q {
		if x == w {
			q = append(q[:i], q[i+1:]...)
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

// running returns the number of slots in use.
func (s *scheduler) running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busy
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
