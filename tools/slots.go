package tools

import (
	"context"
	"sync"
)

// Slots bounds the calls in flight to one resource that principals share,
// such as an upstream MCP server or an HTTP API, and shares them: one
// principal (CallerFrom's) holds at most a share of them, so that a
// principal whose calls hang cannot hold them all and leave the others
// waiting. A call waits for a slot within its context.
type Slots struct {
	total, share int

	mu      sync.Mutex
	inUse   int
	held    map[string]int // principal → slots held
	changed chan struct{}  // closed and replaced when a slot is released
}

// DefaultShare is how many of n slots one principal may hold unless
// configured otherwise: all but a quarter of them, and at least one
// left for the others when n is 2 or more.
func DefaultShare(n int) int {
	if n <= 1 {
		return 1
	}
	return n - max(1, n/4)
}

// NewSlots returns n slots, of which one principal may hold share; a
// share of 0 or less means DefaultShare(n), more than n means n.
func NewSlots(n, share int) *Slots {
	n = max(n, 1)
	if share <= 0 {
		share = DefaultShare(n)
	}
	return &Slots{total: n, share: min(share, n), held: map[string]int{}, changed: make(chan struct{})}
}

// Total returns how many slots there are.
func (s *Slots) Total() int { return s.total }

// Share returns how many one principal may hold.
func (s *Slots) Share() int { return s.share }

// Acquire waits for a slot for the caller in ctx and returns the function
// that releases it; when ctx ends first, it returns ctx's error and
// whether the principal was holding its whole share. A call that must
// wait gives back, while it waits, what it holds of the results in
// flight (WithSlotWait), and takes it back once it has its slot: the
// error is then the holder's when it cannot.
func (s *Slots) Acquire(ctx context.Context) (release func(), atShare bool, err error) {
	p := CallerFrom(ctx).Principal
	var reclaim func(context.Context) error
	for {
		s.mu.Lock()
		if s.inUse < s.total && s.held[p] < s.share {
			s.inUse++
			s.held[p]++
			s.mu.Unlock()
			var once sync.Once
			release = func() { once.Do(func() { s.release(p) }) }
			if reclaim != nil {
				if err := reclaim(ctx); err != nil {
					release()
					return nil, false, err
				}
			}
			return release, false, nil
		}
		atShare = s.held[p] >= s.share
		ch := s.changed
		s.mu.Unlock()
		if reclaim == nil {
			reclaim = yieldForSlot(ctx)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, atShare, ctx.Err()
		}
	}
}

func (s *Slots) release(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inUse--
	if s.held[p]--; s.held[p] <= 0 {
		delete(s.held, p)
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// A SlotWait gives back what a call holds of the results in flight while
// it waits for a slot (Slots.Acquire), and returns what takes it back
// once the call has one. Holding bytes while waiting for a slot closes a
// cycle: the calls that have the slots wait for bytes to hold their
// results (HoldDecoded), and the bytes are held by the calls waiting for
// the slots (issue 19, sec19: one principal's 24 direct calls of 2.5 MB
// waited on each other until their deadline). The engine installs one
// for each call it makes, beside its DecodedHolder.
type SlotWait func() (reclaim func(context.Context) error)

type slotWaitKey struct{}

// WithSlotWait returns ctx with w, which Slots.Acquire calls before it
// waits.
func WithSlotWait(ctx context.Context, w SlotWait) context.Context {
	return context.WithValue(ctx, slotWaitKey{}, w)
}

// yieldForSlot gives back what the call of ctx holds, and returns what
// takes it back (a no-op without a SlotWait).
func yieldForSlot(ctx context.Context) func(context.Context) error {
	if w, _ := ctx.Value(slotWaitKey{}).(SlotWait); w != nil {
		if reclaim := w(); reclaim != nil {
			return reclaim
		}
	}
	return func(context.Context) error { return nil }
}
