package executor

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestSchedulerShares hands out the slots of a full pool as they free: to
// the waiting owner that holds the fewest, in turn, never by arrival.
func TestSchedulerShares(t *testing.T) {
	t.Parallel()
	s := newScheduler(3)
	busy := func() *Error { return &Error{Kind: KindBusy} }
	type grant struct {
		owner   string
		release func()
	}
	grants := make(chan grant, 7)
	acquire := func(owner string) {
		release, fail := s.acquire(context.Background(), owner, time.Minute, busy)
		if fail != nil {
			t.Errorf("%s: %v", owner, fail)
			return
		}
		grants <- grant{owner, release}
	}
	queued := s.waiting
	// a holds the whole pool and queues three more runs; then b and c
	// queue two each.
	for range 3 {
		acquire("a")
	}
	held := []grant{<-grants, <-grants, <-grants}
	for i, owner := range []string{"a", "a", "a", "b", "b", "c", "c"} {
		go acquire(owner)
		for queued() < i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	var order []string
	for len(order) < 7 {
		held[0].release()
		g := <-grants
		order = append(order, g.owner)
		held = append(held[1:], g)
	}
	if got := strings.Join(order, ""); got != "bcabcaa" {
		t.Errorf("slots went to %s, want bcabcaa", got)
	}
}

// TestSchedulerClose fails the runs that wait, and every later one.
func TestSchedulerClose(t *testing.T) {
	t.Parallel()
	s := newScheduler(1)
	busy := func() *Error { return &Error{Kind: KindBusy} }
	release, fail := s.acquire(context.Background(), "a", time.Minute, busy)
	if fail != nil {
		t.Fatal(fail)
	}
	defer release()
	failed := make(chan *Error)
	go func() {
		_, fail := s.acquire(context.Background(), "b", time.Minute, busy)
		failed <- fail
	}()
	for s.waiting() < 1 {
		time.Sleep(time.Millisecond)
	}
	s.close()
	if fail := <-failed; fail != errClosed {
		t.Errorf("waiter got %v", fail)
	}
	if _, fail := s.acquire(context.Background(), "c", time.Minute, busy); fail != errClosed {
		t.Errorf("after close: %v", fail)
	}
}
