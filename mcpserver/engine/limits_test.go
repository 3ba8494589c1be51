package engine

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestAdmissionReserve: one principal takes at most three quarters of
// the places in flight and of the queue; another's request is admitted
// at once while the first one's requests fill what it may take, and the
// first one's waiting request gets the next place it may hold.
func TestAdmissionReserve(t *testing.T) {
	t.Parallel()
	a := newAdmission(4, 4)
	if a.perPrincipal != 3 || a.perQueued != 3 {
		t.Fatalf("shares %d and %d of 4, want 3 and 3", a.perPrincipal, a.perQueued)
	}
	var bob []func()
	for range 3 {
		release, r := a.acquire(t.Context(), "bob", time.Minute)
		if r != nil {
			t.Fatal(r)
		}
		bob = append(bob, release)
	}
	granted := make(chan func(), 3)
	for range 3 {
		go func() {
			release, r := a.acquire(t.Context(), "bob", time.Minute)
			if r != nil {
				t.Error(r)
				return
			}
			granted <- release
		}()
	}
	waitQueued(t, &a, 3)
	if _, r := a.acquire(t.Context(), "bob", time.Minute); r == nil || r.limit != "max_queued" || !strings.Contains(r.message, `"bob" has 3 executions waiting`) {
		t.Fatalf("bob's fourth waiting request: %v", r)
	}
	alice, r := a.acquire(t.Context(), "alice", time.Minute)
	if r != nil {
		t.Fatalf("alice was not admitted beside bob's three: %v", r)
	}
	select {
	case <-granted:
		t.Fatal("bob took a fourth place")
	case <-time.After(20 * time.Millisecond):
	}
	// alice's place frees: bob may not take it, he holds his share.
	alice()
	select {
	case <-granted:
		t.Fatal("bob took alice's place past his share")
	case <-time.After(20 * time.Millisecond):
	}
	// One of bob's frees: his first waiter takes it.
	bob[0]()
	bob[0] = <-granted
	waitQueued(t, &a, 2)
	for _, release := range bob {
		release()
	}
	for range 2 {
		(<-granted)()
	}
	if a.inUse != 0 || len(a.held) != 0 || len(a.queued) != 0 {
		t.Fatalf("after every release: in use %d, held %v, queued %v", a.inUse, a.held, a.queued)
	}
}

// TestAdmissionWaitOut: a request that waits out its time is refused
// with the limit that kept it, and leaves the queue.
func TestAdmissionWaitOut(t *testing.T) {
	t.Parallel()
	a := newAdmission(2, 8)
	release, r := a.acquire(t.Context(), "bob", time.Minute)
	if r != nil {
		t.Fatal(r)
	}
	defer release()
	if _, r := a.acquire(t.Context(), "bob", 10*time.Millisecond); r == nil || r.limit != "max_in_flight" || !strings.Contains(r.message, `"bob" held 1`) {
		t.Fatalf("bob's second request: %v", r)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	other, r := a.acquire(ctx, "alice", time.Minute)
	if r != nil {
		t.Fatalf("alice: %v", r)
	}
	other()
	if n := len(a.waiters); n != 0 || len(a.queued) != 0 {
		t.Fatalf("%d still wait (%v)", n, a.queued)
	}
}

func waitQueued(t *testing.T, a *admission, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a.mu.Lock()
		got := len(a.waiters)
		a.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}
