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
	s := newScheduler(3, 0)
	busy := func() *Error { return &Error{Kind: KindBusy} }
	type grant struct {
		owner   string
		release func()
	}
	grants := make(chan grant, 7)
	acquire := func(owner string) {
		release, fail := s.acquire(context.Background(), owner, false, time.Minute, busy)
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
	s := newScheduler(1, 0)
	busy := func() *Error { return &Error{Kind: KindBusy} }
	release, fail := s.acquire(context.Background(), "a", false, time.Minute, busy)
	if fail != nil {
		t.Fatal(fail)
	}
	defer release()
	failed := make(chan *Error)
	go func() {
		_, fail := s.acquire(context.Background(), "b", false, time.Minute, busy)
		failed <- fail
	}()
	for s.waiting() < 1 {
		time.Sleep(time.Millisecond)
	}
	s.close()
	if fail := <-failed; fail != errClosed {
		t.Errorf("waiter got %v", fail)
	}
	if _, fail := s.acquire(context.Background(), "c", false, time.Minute, busy); fail != errClosed {
		t.Errorf("after close: %v", fail)
	}
}

// TestSchedulerReserve keeps the reserved slots from long runs: an owner
// whose long runs fill what they may take waits, while runs within the
// default deadline, its own and others', take the reserve.
func TestSchedulerReserve(t *testing.T) {
	t.Parallel()
	s := newScheduler(3, 1)
	busy := func() *Error { return &Error{Kind: KindBusy} }
	type grant struct {
		name    string
		release func()
	}
	grants := make(chan grant, 8)
	acquire := func(name, owner string, long bool) {
		release, fail := s.acquire(context.Background(), owner, long, time.Minute, busy)
		if fail != nil {
			t.Errorf("%s: %v", name, fail)
			return
		}
		grants <- grant{name, release}
	}
	wait := func(n int) {
		t.Helper()
		for s.waiting() != n {
			time.Sleep(time.Millisecond)
		}
	}
	// b's two long runs take the two slots long runs may use; its third
	// waits, though a slot is free.
	acquire("b1", "b", true)
	acquire("b2", "b", true)
	held := map[string]func(){}
	for range 2 {
		g := <-grants
		held[g.name] = g.release
	}
	go acquire("b3", "b", true)
	wait(1)
	if all, long := s.running(); all != 2 || long != 2 {
		t.Fatalf("running %d, long %d; want 2 and 2", all, long)
	}
	// a's run within the deadline takes the reserve at once, ahead of
	// b's waiting long run.
	acquire("a1", "a", false)
	if g := <-grants; g.name != "a1" {
		t.Fatalf("%s got the reserve", g.name)
	} else {
		held[g.name] = g.release
	}
	// b's short run waits behind its long one, then takes the reserve
	// when a gives it back: b's long run still may not.
	go acquire("b4", "b", false)
	wait(2)
	held["a1"]()
	if g := <-grants; g.name != "b4" {
		t.Fatalf("%s got the reserve after a1", g.name)
	} else {
		held[g.name] = g.release
	}
	// A long slot that frees goes to b's waiting long run.
	held["b1"]()
	if g := <-grants; g.name != "b3" {
		t.Fatalf("%s got b1's slot", g.name)
	} else {
		held[g.name] = g.release
	}
	if n := s.waiting(); n != 0 {
		t.Fatalf("%d still wait", n)
	}
	for _, release := range held {
		release()
	}
	if all, long := s.running(); all != 0 || long != 0 {
		t.Fatalf("running %d, long %d after every release", all, long)
	}
}

// TestSchedulerLongWaitsItsTurn: a long run that may not take the
// reserve fails busy after its wait, and gives up its place in turn.
func TestSchedulerLongWaitsItsTurn(t *testing.T) {
	t.Parallel()
	s := newScheduler(2, 1)
	busy := func() *Error { return &Error{Kind: KindBusy} }
	release, fail := s.acquire(context.Background(), "b", true, time.Minute, busy)
	if fail != nil {
		t.Fatal(fail)
	}
	defer release()
	if _, fail := s.acquire(context.Background(), "a", true, 20*time.Millisecond, busy); fail == nil || fail.Kind != KindBusy {
		t.Fatalf("a long run took the reserve: %v", fail)
	}
	if n := s.waiting(); n != 0 {
		t.Fatalf("%d wait after the refusal", n)
	}
	short, fail := s.acquire(context.Background(), "a", false, 0, busy)
	if fail != nil {
		t.Fatalf("a run within the deadline, with no wait: %v", fail)
	}
	short()
}
