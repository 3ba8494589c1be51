package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
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
		how, err := b.reserve(step.ctx, step.holder, step.n, false)
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
		_, err := b.reserve(ctx, "bob", 2, false)
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

// TestHoldingRaiseWaitsHoldingNothing (issue 19, attack9 D7): every call
// reserves its result's bound, then raises it to what its result decodes
// into; calls that each held a part of the run's budget and waited to
// raise it would wait for each other to the run's deadline. A call that
// cannot raise at once gives back what it holds while it waits.
func TestHoldingRaiseWaitsHoldingNothing(t *testing.T) {
	r := newResultBytes(Limits{ResultBytesInFlight: 1000, ResultBytesInFlightPerRun: 100})
	run := newByteBudget(100, 100)
	hold := func() *holding { return &holding{r: r, c: &Call{Name: "x.get"}, run: run, principal: "bob"} }
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a bound for a broken build, not a timing
	defer cancel()
	a, b := hold(), hold()
	for _, h := range []*holding{a, b} {
		if err := h.raise(ctx, 40, "a result"); err != nil {
			t.Fatal(err)
		}
	}
	// Both raise to 70 at once: one of them, having given back its 40,
	// waits until the other has raised and given back.
	raised := make(chan *holding, 2)
	for _, h := range []*holding{a, b} {
		go func() {
			if err := h.raise(ctx, 70, "a result"); err != nil {
				t.Errorf("raise: %v", err)
			}
			h.giveBack()
			raised <- h
		}()
	}
	<-raised
	<-raised
	if run.inUse() != 0 || r.server.inUse() != 0 {
		t.Fatalf("in use after every give: run %d, server %d", run.inUse(), r.server.inUse())
	}
	// A result larger than the run may hold is refused at once.
	if err := a.raise(ctx, 101, "a result"); tools.CodeOf(err) != codeResultBytesInFlight {
		t.Fatalf("a result over the run's bound: %v", err)
	}
}

// TestHoldingOutsideRun (issue 19, attack10 E3): an answer read outside a
// run — a bridged resource or prompt — holds of the server's results in
// flight and the principal's share of them, with no run's budget, and is
// refused past the share, naming limits.result_bytes_in_flight.
func TestHoldingOutsideRun(t *testing.T) {
	e := &Engine{results: newResultBytes(Limits{ResultBytesInFlight: 1000, ResultBytesInFlightPerRun: 100})}
	ctx, release := e.HoldOutsideRun(t.Context(), "bob", "resources/read of upstream x")
	// More than a run may hold: no run here.
	if err := tools.HoldDecoded(ctx, 400, 0); err != nil {
		t.Fatal(err)
	}
	if got := e.results.server.inUse(); got != 400 {
		t.Fatalf("held %d, want 400", got)
	}
	err := tools.HoldDecoded(ctx, 700, 1)
	if tools.CodeOf(err) != codeResultBytesInFlight || !strings.Contains(err.Error(), "limits.result_bytes_in_flight") || !strings.Contains(err.Error(), "resources/read of upstream x") {
		t.Fatalf("past the principal's share (750): %v", err)
	}
	release()
	if got := e.results.server.inUse(); got != 0 {
		t.Fatalf("in use after release: %d", got)
	}
}

// TestRaiseGoesFirst (issue 19): a call waiting to raise its hold has
// its result in hand and holds nothing, so the run's fresh reservations
// wait for it: the bytes it gave back are not taken by another call
// that would read a result of its own meanwhile.
func TestRaiseGoesFirst(t *testing.T) {
	r := newResultBytes(Limits{ResultBytesInFlight: 1000, ResultBytesInFlightPerRun: 100})
	run := newByteBudget(100, 100)
	hold := func() *holding { return &holding{r: r, c: &Call{Name: "x.get"}, run: run, principal: "bob"} }
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a bound for a broken build, not a timing
	defer cancel()
	a, b, c := hold(), hold(), hold()
	if err := a.raise(ctx, 60, "a result"); err != nil {
		t.Fatal(err)
	}
	if err := b.raise(ctx, 40, "a result"); err != nil {
		t.Fatal(err)
	}
	raised := make(chan error, 1)
	go func() { raised <- b.raise(ctx, 70, "a result") }()
	for waiting := false; !waiting; time.Sleep(time.Millisecond) {
		run.mu.Lock()
		waiting = run.raising[""] == 1
		run.mu.Unlock()
	}
	// 40 bytes are free, and c's 30 would fit: it waits all the same.
	short, stop := context.WithTimeout(ctx, 20*time.Millisecond)
	defer stop()
	if err := c.raise(short, 30, "a result"); tools.CodeOf(err) != codeResultBytesInFlight {
		t.Fatalf("a fresh reservation while a raise waits: %v", err)
	}
	a.giveBack()
	if err := <-raised; err != nil {
		t.Fatalf("the raise once a gave back: %v", err)
	}
	if err := c.raise(ctx, 30, "a result"); err != nil {
		t.Fatalf("a fresh reservation once the raise is done: %v", err)
	}
	b.giveBack()
	c.giveBack()
	if run.inUse() != 0 || r.server.inUse() != 0 {
		t.Fatalf("in use after every give: run %d, server %d", run.inUse(), r.server.inUse())
	}
}

// TestRaiseGoesFirstAcrossRuns (issue 19, attack18): a call that waits
// to raise its hold at its run's budget has given back what it held, of
// its run's and of its principal's share of the server's, and has its
// result in hand. Its principal's fresh reservations in other runs
// waited for nothing: they took the share back, and what the principal
// had in hand grew past its share by what each such call had — about
// runs × limits.result_bytes_in_flight_per_run. They wait now, as the
// run's own do.
func TestRaiseGoesFirstAcrossRuns(t *testing.T) {
	r := newResultBytes(Limits{ResultBytesInFlight: 1000, ResultBytesInFlightPerRun: 500}) // bob's share: 750
	runA, runB := newByteBudget(500, 500), newByteBudget(500, 500)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a bound for a broken build, not a timing
	defer cancel()
	a1 := &holding{r: r, c: &Call{Name: "x.get"}, run: runA, principal: "bob"}
	a2 := &holding{r: r, c: &Call{Name: "x.get"}, run: runA, principal: "bob"}
	b1 := &holding{r: r, c: &Call{Name: "x.get"}, run: runB, principal: "bob"}
	if err := a1.raise(ctx, 300, "a result"); err != nil {
		t.Fatal(err)
	}
	if err := a2.raise(ctx, 150, "a result"); err != nil {
		t.Fatal(err)
	}
	// a2 has 150 in hand and raises to 400: its run has 50 free, so it
	// gives back its 150 and waits for a1.
	raised := make(chan error, 1)
	go func() { raised <- a2.raise(ctx, 400, "a result") }()
	for waiting := false; !waiting; time.Sleep(time.Millisecond) {
		runA.mu.Lock()
		waiting = runA.raising[""] == 1
		runA.mu.Unlock()
	}
	// bob's share has 450 free, and b1's fresh 450 would fit beside
	// a1's 300 — but a2 has 150 in hand: b1 waits.
	short, stop := context.WithTimeout(ctx, 20*time.Millisecond)
	defer stop()
	if err := b1.raise(short, 450, "a result"); tools.CodeOf(err) != codeResultBytesInFlight {
		b1.giveBack()
		t.Fatalf("a fresh reservation of another run of the principal while a raise waits: %v", err)
	}
	a1.giveBack()
	if err := <-raised; err != nil {
		t.Fatalf("the raise once a1 gave back: %v", err)
	}
	if err := b1.raise(ctx, 300, "a result"); err != nil {
		t.Fatalf("a fresh reservation once the raise is done: %v", err)
	}
	a2.giveBack()
	b1.giveBack()
	if runA.inUse() != 0 || runB.inUse() != 0 || r.server.inUse() != 0 {
		t.Fatalf("in use after every give: runs %d %d, server %d", runA.inUse(), runB.inUse(), r.server.inUse())
	}
}

// TestRaiseFormatsNothing (issue 23, speed10): what a call's result and
// arguments are held for is text only in an error. Every raise of a
// call's tools.DecodedHolder formatted it, about 6% of the gate's CPU,
// though a raise within what the call holds already, or one that holds,
// refuses nothing; a refusal still says what it was for.
func TestRaiseFormatsNothing(t *testing.T) {
	r := newResultBytes(Limits{ResultBytesInFlight: 100000, ResultBytesInFlightPerRun: 10000})
	c := &Call{Name: "x.get", Run: &Run{Caller: tools.Caller{Principal: "bob"}}}
	h := r.holdFor(c)
	ctx := h.context(t.Context(), resultDecoded)
	args := h.argsHolder()
	if err := tools.HoldDecoded(ctx, 10, 1); err != nil {
		t.Fatal(err)
	}
	held := h.held
	if allocs := testing.AllocsPerRun(100, func() {
		if err := tools.HoldDecoded(ctx, 1, 1); err != nil {
			t.Fatal(err)
		}
		if err := args(ctx, held); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("a raise within what the call holds: %v allocations, want 0", allocs)
	}
	err := tools.HoldDecoded(ctx, 20000, 1)
	if want := "this result of x.get decodes into about"; tools.CodeOf(err) != codeResultBytesInFlight || !strings.Contains(err.Error(), want) {
		t.Errorf("a raise past the run's bound: %v, want a %s saying %q", err, codeResultBytesInFlight, want)
	}
	err = args(ctx, 20000)
	if want := "the arguments of x.get decode into about 20000 bytes"; tools.CodeOf(err) != codeResultBytesInFlight || !strings.Contains(err.Error(), want) {
		t.Errorf("arguments past the run's bound: %v, want a %s saying %q", err, codeResultBytesInFlight, want)
	}
}

// BenchmarkHoldDecoded is what a call's result costs the gate's hold as
// the registry counts it (tools.HoldDecoded): a raise within the run's
// bound, given back.
func BenchmarkHoldDecoded(b *testing.B) {
	r := newResultBytes(Limits{})
	c := &Call{Name: "util.echo", Run: &Run{Caller: tools.Caller{Principal: "bob"}}}
	h := r.holdFor(c)
	ctx := h.context(b.Context(), resultDecoded)
	b.ReportAllocs()
	for b.Loop() {
		if err := tools.HoldDecoded(ctx, 64, 3); err != nil {
			b.Fatal(err)
		}
		h.giveBack()
	}
}
