package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"github.com/codecell/codecell/tools"
)

// Tool results in flight, bounded in bytes (issue 19, a5). A result from
// outside — an upstream server's message, an API's response body — is
// bounded by its source's max_response_bytes while it is read, but a run
// may have up to sandbox.max_concurrent_calls calls in flight, and many
// runs may: 32 results of 16 MiB each is half a gigabyte for one run. So
// each call of a tool with tools.Tool.MaxResultBytes reserves that many
// bytes, of its run's budget (Limits.ResultBytesInFlightPerRun) and of
// the server's (Limits.ResultBytesInFlight, of which one principal holds
// at most three quarters), before the tool is called, and gives them back
// when the gate hands the result on (or drops it). A call that cannot
// have them waits, within its run's deadline, for other calls' results
// to be handed on; past the deadline it fails with
// codeResultBytesInFlight, naming the limit it waited for.

// Defaults of Limits.ResultBytesInFlight and ResultBytesInFlightPerRun:
// sixteen and eight results at the sources' default max_response_bytes
// (16 MiB).
const (
	DefaultResultBytesInFlight       = 256 << 20
	DefaultResultBytesInFlightPerRun = 128 << 20
)

// codeResultBytesInFlight is the error code of a call that could not
// reserve its result's bytes.
const codeResultBytesInFlight = "result_bytes_limit"

// byteBudget is a number of bytes that holders reserve and give back,
// each holder (a principal) at most each of them. Waiters are woken
// whenever bytes are given back; a waiter is not served in order, which
// is fair enough for reservations of like sizes — except that a holder's
// raises (reservations of calls that have their result in hand) go
// before its fresh reservations (see holding.raise).
type byteBudget struct {
	total, each int64

	mu      sync.Mutex
	used    int64
	pinned  int64 // of used, held until the run ends (a run's budget: its flow's, flowKeep)
	held    map[string]int64
	raising map[string]int // raises waiting, by holder
	changed chan struct{}  // closed, and replaced, when bytes are given back or a raise ends
}

func newByteBudget(total, each int64) *byteBudget {
	return &byteBudget{total: total, each: min(each, total), held: map[string]int64{}, raising: map[string]int{}, changed: make(chan struct{})}
}

// budgetWait says which bound a reservation waited for when its context
// ended: the budget's total, or the holder's share of it — or, for a
// call's (reserveBoth), its run's.
type budgetWait int

const (
	waitedTotal budgetWait = iota
	waitedShare
	waitedRun
)

// reserve takes n bytes for holder, waiting until they are free or ctx
// ends; then it says which bound it waited for. A raise goes before the
// holder's other reservations: while one waits, they wait too.
func (b *byteBudget) reserve(ctx context.Context, holder string, n int64, raise bool) (budgetWait, error) {
	if raise {
		b.mu.Lock()
		b.raising[holder]++
		b.mu.Unlock()
		defer func() {
			b.mu.Lock()
			if b.raising[holder]--; b.raising[holder] <= 0 {
				delete(b.raising, holder)
				close(b.changed)
				b.changed = make(chan struct{})
			}
			b.mu.Unlock()
		}()
	}
	for {
		b.mu.Lock()
		share := b.held[holder]+n > b.each
		if !share && b.used+n <= b.total && (raise || b.raising[holder] == 0) {
			b.used += n
			b.held[holder] += n
			b.mu.Unlock()
			return 0, nil
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			if share {
				return waitedShare, context.Cause(ctx)
			}
			return waitedTotal, context.Cause(ctx)
		}
	}
}

// reserveBoth takes n bytes of a run's budget (nil: a reservation
// outside any run) and of the server's for holder, at once, waiting
// until both have them or ctx ends; then it says which bound it waited
// for. It never holds one while it waits for the other, so that no
// reservation holds up another that holds what it waits for. A raise
// goes before the fresh reservations of its run and of its holder on the
// server, whichever it waits for: a call that raises has given back what
// it held and has its result in hand, and while it waited at its run the
// holder's other runs took its share back (issue 19, attack18: what a
// principal had in hand could reach its runs times
// limits.result_bytes_in_flight_per_run rather than its share).
func reserveBoth(ctx context.Context, run, server *byteBudget, holder string, n int64, raise bool) (budgetWait, error) {
	if raise {
		mark := func(b *byteBudget, key string, d int) {
			b.mu.Lock()
			if b.raising[key] += d; b.raising[key] <= 0 {
				delete(b.raising, key)
				close(b.changed)
				b.changed = make(chan struct{})
			}
			b.mu.Unlock()
		}
		if run != nil {
			mark(run, "", 1)
			defer mark(run, "", -1)
		}
		mark(server, holder, 1)
		defer mark(server, holder, -1)
	}
	for {
		// Locks are taken run first, then server; give takes one.
		var runChanged chan struct{}
		runOK := true
		if run != nil {
			run.mu.Lock()
			runOK = run.used+n <= run.total && (raise || run.raising[""] == 0)
			runChanged = run.changed
		}
		server.mu.Lock()
		share := server.held[holder]+n > server.each
		serverOK := !share && server.used+n <= server.total && (raise || server.raising[holder] == 0)
		if runOK && serverOK {
			server.used += n
			server.held[holder] += n
			if run != nil {
				run.used += n
				run.held[""] += n
			}
		}
		serverChanged := server.changed
		server.mu.Unlock()
		if run != nil {
			run.mu.Unlock()
		}
		if runOK && serverOK {
			return 0, nil
		}
		select {
		case <-runChanged: // nil, never, outside a run
		case <-serverChanged:
		case <-ctx.Done():
			switch {
			case !runOK:
				return waitedRun, context.Cause(ctx)
			case share:
				return waitedShare, context.Cause(ctx)
			}
			return waitedTotal, context.Cause(ctx)
		}
	}
}

// tryReserve takes n bytes for holder if they are free now.
func (b *byteBudget) tryReserve(holder string, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held[holder]+n > b.each || b.used+n > b.total {
		return false
	}
	b.used += n
	b.held[holder] += n
	return true
}

// give gives back n bytes holder reserved.
func (b *byteBudget) give(holder string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.held[holder] -= n; b.held[holder] <= 0 {
		delete(b.held, holder)
	}
	close(b.changed)
	b.changed = make(chan struct{})
}

// inUse is the bytes reserved now.
func (b *byteBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// resultBytes is the stage that reserves a call's result bytes. It comes
// last, right before the tool is called, so that a call answered by a
// stage (planned, refused) or waiting for an approval holds nothing but
// what it answers with — a memoised hit holds its value (holdHit); the
// bytes are given back by gate.call, once every stage has passed the
// result on.
type resultBytes struct {
	server *byteBudget // every run's; holders are principals
	perRun int64
}

func newResultBytes(l Limits) *resultBytes {
	l = l.withDefaults()
	// One principal holds at most three quarters of the server's bytes,
	// as of admission (Limits.MaxInFlight): the rest is the others'.
	return &resultBytes{server: newByteBudget(l.ResultBytesInFlight, max(l.ResultBytesInFlight/4*3, 1)), perRun: l.ResultBytesInFlightPerRun}
}

func (r *resultBytes) pass(ctx context.Context, c *Call, next next) (json.RawMessage, error) {
	if c.Tool == nil {
		return next.call(ctx, c)
	}
	h := r.holdFor(c)
	if n := c.Tool.MaxResultBytes; n > 0 {
		if err := h.raiseFor(ctx, n, reason{of: resultBound, name: c.Name, n: n}); err != nil {
			return nil, err
		}
	}
	// What the result decodes into, counted in values before it is
	// decoded (tools.HoldDecoded): by the tool, of what it read from
	// outside, and by the registry, of every tool's result. Nothing is
	// held while the tool waits for a slot of its own.
	ctx = h.context(ctx, resultDecoded)
	ctx = tools.WithArgsHolder(ctx, h.argsHolder())
	return next.call(ctx, c)
}

// reason says what a raise holds bytes for, for the error of a refusal
// or of a wait. Its text is made only when an error needs it: a raise
// that holds formats nothing — formatting it on every raise was about
// 6% of the gate's CPU on 100 sequential calls (issue 23, speed10).
type reason struct {
	text string
	// of, if set, makes the text from name and n.
	of   func(name string, n int64) string
	name string
	n    int64
}

func (r reason) String() string {
	if r.of != nil {
		return r.of(r.name, r.n)
	}
	return r.text
}

// The reasons of the raises of a call's result and arguments, with the
// call's name and the bytes held.
func resultBound(name string, n int64) string {
	return fmt.Sprintf("a result of %s may hold %d bytes (its source's max_response_bytes, or its store's bound)", name, n)
}

func resultDecoded(name string, n int64) string {
	return fmt.Sprintf("this result of %s decodes into about %d bytes (its bytes and %d a JSON value)", name, n, tools.DecodedValueBytes)
}

func memoBound(name string, n int64) string {
	return fmt.Sprintf("a memoised result of %s may hold %d bytes (cache.max_memo_bytes)", name, n)
}

func argsDecoded(name string, n int64) string {
	return fmt.Sprintf("the arguments of %s decode into about %d bytes to be checked against its schema (their bytes and %d a JSON value): send fewer values in one call", name, n, tools.DecodedValueBytes)
}

func answerDecoded(_ string, n int64) string {
	return fmt.Sprintf("this answer decodes into about %d bytes (its bytes and %d a JSON value)", n, tools.DecodedValueBytes)
}

// holdFor returns what c holds of its run's and the server's result
// bytes, nothing yet, given back once the gate has handed its result on
// — and, for a program's call, once its sandbox has it (c.handOff); the
// run's flow observed it before the gate handed it on (observer).
func (r *resultBytes) holdFor(c *Call) *holding {
	h := &holding{r: r, c: c, run: c.Run.resultBudget(r.perRun), principal: c.Run.Caller.Principal}
	c.held = h
	c.releases = append(c.releases, func() {
		giveBack := h.giveBack
		if c.handOff != nil && c.delivered {
			c.handOff(giveBack)
			return
		}
		giveBack()
	})
	return h
}

// holdHit holds, for c, what reading a memoised result of at most
// maxBytes from the store takes — its bytes ResultCopies times, within
// the bounds of a run and of a principal — before it is read
// (memoize.go), and returns the holding: settle it to what the hit
// holds once read, or give it back on a miss. A hit held nothing, and
// 32 at once of a 3.9 MB workspace.read grew the server by 236–279 MiB
// against 62–65 for the same reads made (issue 19, attack18 K9).
func (r *resultBytes) holdHit(ctx context.Context, c *Call, maxBytes int) (*holding, error) {
	h := r.holdFor(c)
	n := min(tools.ResultCopies*(int64(maxBytes)+4<<10), r.perRun, r.server.each)
	if err := h.raiseFor(ctx, n, reason{of: memoBound, name: c.Name, n: n}); err != nil {
		return nil, err
	}
	return h, nil
}

// settle holds what out, a memoised hit just read, holds while the run's
// flow observes it and its sandbox takes it, as the registry holds a
// tool's result (its bytes ResultCopies times and
// tools.DecodedValueBytes a value): more than holdHit held, or less.
func (h *holding) settle(ctx context.Context, out json.RawMessage) error {
	n := tools.DecodedSize(tools.ResultCopies*int64(len(out)), tools.JSONValues(out, math.MaxInt))
	h.mu.Lock()
	if less := h.held - n; less > 0 {
		h.r.server.give(h.principal, less)
		if h.run != nil {
			h.run.give("", less)
		}
		h.held = n
	}
	h.mu.Unlock()
	size := len(out)
	return h.raiseFor(ctx, n, reason{name: h.c.Name, n: n, of: func(name string, n int64) string {
		return fmt.Sprintf("this memoised result of %s holds about %d bytes (%d copies of its %d bytes and %d a JSON value)", name, n, tools.ResultCopies, size, tools.DecodedValueBytes)
	}})
}

// argsHolder holds, with h, what a call's arguments decode into while
// its tool's schema checks them: 30 calls at once of 2 MB arrays of
// small values decoded into 300–400 MiB held by nothing (attack18 K10).
func (h *holding) argsHolder() tools.DecodedHolder {
	return func(ctx context.Context, n int64) error {
		return h.raiseFor(ctx, n, reason{of: argsDecoded, name: h.c.Name, n: n})
	}
}

// validateHeld checks c's arguments for a stage that does so before the
// call reserves anything (the approver, the planner), holding what they
// decode into while they are checked.
func (r *resultBytes) validateHeld(ctx context.Context, view *tools.View, c *Call) error {
	if r == nil || c.Run == nil {
		return view.ValidateContext(ctx, c.Name, c.Args)
	}
	h := &holding{r: r, c: c, run: c.Run.resultBudget(r.perRun), principal: c.Run.Caller.Principal}
	defer h.giveBack()
	return view.ValidateContext(tools.WithArgsHolder(ctx, h.argsHolder()), c.Name, c.Args)
}

// HoldOutsideRun returns ctx with a tools.DecodedHolder that holds, for
// principal, what an answer read from outside a run decodes into — a
// bridged server's resource or prompt, read by an MCP request (issue 19,
// attack10 E3) — of the same results in flight as the runs' tool results:
// the server's, and principal's share of them (there is no run's). A
// raise waits within the context it is given. what names the request,
// for errors; release gives back what is held, once the answer is sent.
func (e *Engine) HoldOutsideRun(ctx context.Context, principal, what string) (_ context.Context, release func()) {
	h := &holding{r: e.results, c: &Call{Name: what}, principal: principal}
	ctx = h.context(ctx, answerDecoded)
	return ctx, h.giveBack
}

// HoldRead holds n bytes for principal of the same results in flight as
// the runs' tool results (the server's, and principal's share of them),
// for a request that reads them outside any run — a stored result or an
// artifact read as a resource, decompressed, filtered and encoded (issue
// 19, sec19). It waits for them at most the longest a run may take
// (sandbox.max_timeout); what says what the bytes are, for errors.
// release gives them back.
func (e *Engine) HoldRead(ctx context.Context, principal, what string, n int64) (release func(), err error) {
	h := &holding{r: e.results, c: &Call{Name: "resources/read"}, principal: principal}
	ctx, cancel := context.WithTimeout(ctx, e.exec.Config().MaxTimeout)
	defer cancel()
	if err := h.raise(ctx, n, what); err != nil {
		return nil, err
	}
	return h.giveBack, nil
}

// holding is what one call holds of its run's and the server's result
// bytes: its result's bound, raised to what its result decodes into once
// that is counted; given back when the gate hands the result on.
type holding struct {
	r         *resultBytes
	c         *Call       // c.Name names the results, for errors
	run       *byteBudget // nil: held outside a run (HoldOutsideRun)
	principal string

	// pinned says it is held until its run ends (flowKeep): the run's
	// other holds cannot wait for it.
	pinned bool

	mu   sync.Mutex
	held int64
	// what said what the call's last reservation was for, for a
	// reclaim's error; reclaiming is set while one waits.
	what       reason
	reclaiming bool
}

// yield gives back what the call holds while it waits for a slot of its
// tool's (tools.SlotWait), and returns what takes it back, as a raise,
// once it has the slot.
func (h *holding) yield() func(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	n, what := h.held, h.what
	if n == 0 {
		return nil
	}
	h.giveBackLocked()
	return func(ctx context.Context) error {
		h.mu.Lock()
		h.reclaiming = true
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			h.reclaiming = false
			h.mu.Unlock()
		}()
		return h.raiseFor(ctx, n, what)
	}
}

// context returns ctx with the call's tools.DecodedHolder, which raises
// what it holds as the tool reads — raised says, from the call's name and
// the bytes, what for — and its tools.SlotWait.
func (h *holding) context(ctx context.Context, raised func(name string, n int64) string) context.Context {
	ctx = tools.WithDecodedHolder(ctx, func(ctx context.Context, n int64) error {
		return h.raiseFor(ctx, n, reason{of: raised, name: h.c.Name, n: n})
	})
	return tools.WithSlotWait(ctx, h.yield)
}

// raise holds n bytes in all, if more than the call holds already:
// what is a result the call may have, for the error.
func (h *holding) raise(ctx context.Context, n int64, what string) error {
	return h.raiseFor(ctx, n, reason{text: what})
}

// raiseFor is raise, what made into text only for an error.
func (h *holding) raiseFor(ctx context.Context, n int64, what reason) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	more := n - h.held
	if more <= 0 {
		return nil
	}
	r, c := h.r, h.c
	if h.run == nil && n > r.server.each {
		return &tools.Error{Code: codeResultBytesInFlight, Tool: c.Name, Message: fmt.Sprintf(
			"%s, more than the %d bytes of results one principal may have in flight on the server (three quarters of limits.result_bytes_in_flight); lower the source's max_response_bytes, or raise limits.result_bytes_in_flight",
			what.String(), r.server.each)}
	}
	// What the call's arguments hold (argsHeld) is given back only when
	// the call is over: a hold of the same call that needs more than
	// the bounds leave beside it could only wait for itself, until the
	// run's deadline (an llm prompt's findings did).
	args := h.heldForArgs()
	if h.run != nil && (n > r.perRun-h.pinnedByOthers()-args || n > r.server.each-args) {
		kept := ""
		if p := h.pinnedByOthers(); p > 0 {
			kept = fmt.Sprintf(", %d of them kept by the run's data flow until it ends", p)
		}
		if args > 0 {
			kept += fmt.Sprintf(", %d of them held for the call's arguments until it is over", args)
		}
		return &tools.Error{Code: codeResultBytesInFlight, Tool: c.Name, Message: fmt.Sprintf(
			"%s, more than the %d bytes of results one run may have in flight (limits.result_bytes_in_flight_per_run%s) or one principal on the server (three quarters of limits.result_bytes_in_flight); ask for smaller results (a page, fewer fields), lower the source's max_response_bytes, or raise those limits",
			what.String(), min(r.perRun, r.server.each), kept)}
	}
	// A reclaim (yield) goes before fresh reservations as a raise does:
	// the call has its slot, and what it gave back while it waited for
	// it must not be taken by a call that would wait for a slot next.
	raising := h.held > 0 || h.reclaiming
	if h.held > 0 && !h.tryRaise(more) {
		// A call waits holding nothing: calls that reserved their
		// bound and wait to raise it cannot hold up each other. It has
		// its result (or what it read so far) in hand, though, which is
		// no longer counted: so its raise goes before the fresh
		// reservations of its run and its principal, and what calls
		// have in hand while they wait is at most what they held —
		// the bounds — rather than as much as every call of the run
		// could read while the bytes given back were taken again
		// (issue 19: 32 texts of 15 MiB at once grew the server by
		// 1 GiB).
		h.giveBackLocked()
		more = n
	} else if h.held > 0 {
		h.pin(n - h.held)
		h.held = n
		return nil
	}
	if how, err := reserveBoth(ctx, h.run, r.server, h.principal, more, raising); err != nil {
		if how == waitedRun {
			return r.waited(c, false, n, fmt.Sprintf("this run's (limits.result_bytes_in_flight_per_run, %d bytes)", r.perRun), err)
		}
		limit := fmt.Sprintf("the server's (limits.result_bytes_in_flight, %d bytes), held by other runs' calls", r.server.total)
		if how == waitedShare {
			limit = fmt.Sprintf("your share of the server's (three quarters of limits.result_bytes_in_flight, %d bytes), held by your other runs' calls", r.server.each)
		}
		return r.waited(c, h.run == nil, n, limit, err)
	}
	h.pin(n - h.held)
	h.held, h.what = n, what
	return nil
}

// pin counts d more bytes of a pinned holding in its run's pinned
// bytes; the caller holds h.mu.
func (h *holding) pin(d int64) {
	if h.pinned && h.run != nil {
		h.run.mu.Lock()
		h.run.pinned += d
		h.run.mu.Unlock()
	}
}

// pinnedByOthers is what the run's pinned holdings other than h hold;
// the caller holds h.mu.
func (h *holding) pinnedByOthers() int64 {
	if h.run == nil {
		return 0
	}
	h.run.mu.Lock()
	p := h.run.pinned
	h.run.mu.Unlock()
	if h.pinned {
		p -= h.held
	}
	return p
}

// heldForArgs is what the arguments of h's call hold (Call.args), when
// h is another of its holds; the caller holds h.mu.
func (h *holding) heldForArgs() int64 {
	a := h.c.args
	if a == nil || a == h {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held
}

// raiseNow holds n bytes in all, if more than h holds already and they
// are free now; else it refuses at once, what saying what they are for.
func (h *holding) raiseNow(n int64, what string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	more := n - h.held
	if more <= 0 {
		return nil
	}
	if !h.tryRaise(more) {
		return &tools.Error{Code: codeResultBytesInFlight, Tool: h.c.Name, Message: fmt.Sprintf(
			"%s, more than this run's results in flight (limits.result_bytes_in_flight_per_run, %d bytes) and your share of the server's (three quarters of limits.result_bytes_in_flight, %d bytes) have free; ask for smaller results, or await fewer calls at once",
			what, h.r.perRun, h.r.server.each)}
	}
	h.pin(more)
	h.held = n
	return nil
}

// tryRaise takes more bytes of the run's and the server's if they are
// free now.
func (h *holding) tryRaise(more int64) bool {
	if h.run != nil && !h.run.tryReserve("", more) {
		return false
	}
	if !h.r.server.tryReserve(h.principal, more) {
		if h.run != nil {
			h.run.give("", more)
		}
		return false
	}
	return true
}

// giveBack gives back what the call holds.
func (h *holding) giveBack() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.giveBackLocked()
}

func (h *holding) giveBackLocked() {
	if h.held > 0 {
		h.pin(-h.held)
		h.r.server.give(h.principal, h.held)
		if h.run != nil {
			h.run.give("", h.held)
		}
		h.held = 0
	}
}

// waited is the error of a call whose context ended while it waited for
// the bytes of its result under limit; outside, of an answer read
// outside a run.
func (r *resultBytes) waited(c *Call, outside bool, n int64, limit string, cause error) error {
	if outside {
		return &tools.Error{Code: codeResultBytesInFlight, Tool: c.Name, Err: cause, Message: fmt.Sprintf(
			"it ended (%v) while waiting to reserve the %d bytes its answer may hold: the bytes of results in flight reached %s limit; ask again once your other requests and runs are done, or lower the source's max_response_bytes",
			cause, n, limit)}
	}
	return &tools.Error{Code: codeResultBytesInFlight, Tool: c.Name, Err: cause, Message: fmt.Sprintf(
		"the run ended (%v) while this call waited to reserve the %d bytes a result of %s may hold: the bytes of tool results in flight reached %s limit; await fewer calls of large results at once (Promise.all), or ask for smaller results",
		cause, n, c.Name, limit)}
}

// keep holds giveBack until the program's sandbox has the result, or
// until the run ends (endHolds), whichever comes first, and returns the
// function that gives it back once.
func (r *Run) keep(giveBack func()) func() {
	once := sync.OnceFunc(giveBack)
	r.keptMu.Lock()
	defer r.keptMu.Unlock()
	if r.keptEnded {
		once()
		return once
	}
	r.kept = append(r.kept, once)
	return once
}

// endHolds gives back what the run's calls still hold of their results'
// bytes: results the sandbox never took, as the run ended.
func (r *Run) endHolds() {
	r.keptMu.Lock()
	kept := r.kept
	r.kept, r.keptEnded = nil, true
	r.keptMu.Unlock()
	for _, f := range kept {
		f()
	}
}

// resultBudget is the run's budget of result bytes in flight, made on
// first use with total bytes.
func (r *Run) resultBudget(total int64) *byteBudget {
	r.resultsOnce.Do(func() { r.results = newByteBudget(total, total) })
	return r.results
}
