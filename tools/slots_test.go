package tools_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
)

func TestDefaultShare(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]int{0: 1, 1: 1, 2: 1, 3: 2, 4: 3, 8: 6, 16: 12} {
		if got := tools.DefaultShare(n); got != want {
			t.Errorf("DefaultShare(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestSlotsShare: a principal that holds its share waits, another gets a
// slot at once, and a released slot serves the one waiting.
func TestSlotsShare(t *testing.T) {
	t.Parallel()
	s := tools.NewSlots(4, 0)
	alice := tools.WithCaller(t.Context(), tools.Caller{Principal: "alice"})
	bob := tools.WithCaller(t.Context(), tools.Caller{Principal: "bob"})
	var held []func()
	for range 3 {
		release, _, err := s.Acquire(alice)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	short, cancel := context.WithTimeout(alice, 50*time.Millisecond)
	defer cancel()
	if _, atShare, err := s.Acquire(short); !errors.Is(err, context.DeadlineExceeded) || !atShare {
		t.Fatalf("alice's fourth: %v, at her share %v", err, atShare)
	}
	releaseBob, _, err := s.Acquire(bob)
	if err != nil {
		t.Fatalf("bob: %v", err)
	}
	// Every slot is taken: bob's second waits, not at his share, until
	// alice releases one.
	got := make(chan error, 1)
	go func() {
		release, _, err := s.Acquire(bob)
		if err == nil {
			release()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("bob's second did not wait: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	held[0]()
	held[0]() // twice is once
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	releaseBob()
	for _, r := range held[1:] {
		r()
	}
	// All free again: a principal takes its share at once.
	for range 3 {
		if _, _, err := s.Acquire(bob); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSlotsYieldWhileWaiting: a call that waits for a slot gives back
// what it holds of the results in flight (SlotWait) before it waits, and
// takes it back once it has the slot; when it cannot, Acquire returns
// the holder's error and the slot is free again (issue 19, sec19).
func TestSlotsYieldWhileWaiting(t *testing.T) {
	s := tools.NewSlots(1, 1)
	ctx := tools.WithCaller(context.Background(), tools.Caller{Principal: "bob"})
	release, _, err := s.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	yielded := make(chan struct{})
	var reclaimed int
	refuse := errors.New("the share is held")
	wctx := tools.WithSlotWait(ctx, func() func(context.Context) error {
		close(yielded)
		return func(context.Context) error { reclaimed++; return refuse }
	})
	done := make(chan error, 1)
	go func() {
		_, _, err := s.Acquire(wctx)
		done <- err
	}()
	<-yielded // it gave back what it held before it waited
	release()
	if err := <-done; !errors.Is(err, refuse) || reclaimed != 1 {
		t.Fatalf("Acquire after the reclaim was refused: %v (reclaimed %d times)", err, reclaimed)
	}
	// The slot it took for the reclaim is free again; a call that gets a
	// slot at once yields nothing.
	r2, _, err := s.Acquire(tools.WithSlotWait(ctx, func() func(context.Context) error {
		t.Error("yielded though a slot was free")
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	r2()
}
