package engine

import (
	"context"
	"errors"
	"testing"
)

// TestByteBudget: a holder takes at most its share, all holders at most
// the total; a reservation that finds them taken waits until bytes are
// given back, or says which bound it waited for when its context ends.
func TestByteBudget(t *testing.T) {
	b := newByteBudget(4, 3)
	ctx := t.Context()
	ended, cancel := context.WithCancel(ctx)
	cancel()
	for _, step := range []struct {
		holder string
		n      int64
		ctx    context.Context
		want   budgetWait
		ok     bool
	}{
		{"alice", 2, ctx, 0, true},
		{"alice", 1, ctx, 0, true},
		{"alice", 1, ended, waitedShare, false}, // her share of 3 is taken
		{"bob", 1, ctx, 0, true},
		{"bob", 1, ended, waitedTotal, false}, // the total of 4 is taken
	} {
		how, err := b.reserve(step.ctx, step.holder, step.n)
		if (err == nil) != step.ok || (err != nil && (how != step.want || !errors.Is(err, context.Canceled))) {
			t.Fatalf("reserve(%s, %d): %v, %v; want ok %v, wait %v", step.holder, step.n, how, err, step.ok, step.want)
		}
	}
	if got := b.inUse(); got != 4 {
		t.Fatalf("in use %d, want 4", got)
	}
	// Bob waits, and is served once alice gives bytes back.
	done := make(chan error)
	go func() {
		_, err := b.reserve(ctx, "bob", 2)
		done <- err
	}()
	b.give("alice", 2)
	if err := <-done; err != nil {
		t.Fatalf("bob's reservation after alice gave back: %v", err)
	}
	b.give("alice", 1)
	b.give("bob", 3)
	if got := b.inUse(); got != 0 || len(b.held) != 0 {
		t.Fatalf("after every give: in use %d, held %v", got, b.held)
	}
}
