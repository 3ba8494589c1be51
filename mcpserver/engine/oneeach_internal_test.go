package engine

import (
	"context"
	"testing"
)

// TestOneEach: a principal's second skills.save check waits for its first
// and gives up with its context; another principal's does not wait
// (attack10 E1).
func TestOneEach(t *testing.T) {
	var o oneEach
	releaseBob, err := o.acquire(t.Context(), "bob")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	got := make(chan error, 1)
	go func() {
		_, err := o.acquire(ctx, "bob")
		got <- err
	}()
	releaseAlice, err := o.acquire(t.Context(), "alice")
	if err != nil {
		t.Fatalf("alice waited for bob: %v", err)
	}
	releaseAlice()
	cancel()
	if err := <-got; err == nil {
		t.Fatal("bob's second check ran beside his first")
	}
	releaseBob()
	release, err := o.acquire(t.Context(), "bob")
	if err != nil {
		t.Fatalf("bob after his check ended: %v", err)
	}
	release()
	if len(o.held) != 0 {
		t.Errorf("keys left: %v", o.held)
	}
}
