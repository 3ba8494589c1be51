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
