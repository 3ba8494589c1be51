package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
)

// What the server filters of what a program sends it — an llm prompt, a
// classified item, the arguments an approval shows, the run's own
// output (output.go) — is held before it is filtered, in the results in
// flight of the run and its principal, as the results of its calls are
// (inflight.go): its bytes and values first, then its findings as the
// filter meets them (filter.Options.Findings: filter.FindingBytes a
// distinct value, filter.RepeatBytes a repeat).
// The run's heap bounds what a program can send, not what filtering it
// costs: one run's 30 llm.call of 1.6 MB of distinct addresses grew the
// server by 2 GiB, every call answered capability_missing (issue 19,
// attack18 K1). Cheap checks — sizes, the client's capability, the llm
// budget — come before any of it.

// textCopies is the copies of a program's text the server holds while it
// filters it: the text, its filtered form, and what it is built into
// (the prompt, the approval's message).
const textCopies = 3

// filterHold is what one filtering of a program's text or JSON holds of
// the results in flight of its run and principal.
type filterHold struct {
	ctx    context.Context
	h      *holding
	shared bool   // h is the call's own (Call.held), given back with it
	base   int64  // its bytes and values, held before filtering
	what   string // what is filtered, for errors: "the prompt"
}

// holdFiltering holds, for call c, what filtering what — size bytes of a
// program's, holding values JSON values (0 for a text) — takes before
// its findings, waiting within ctx as a call's result does; release
// gives it back. A call that holds bytes of its own already (Call.held:
// a runtime tool's, its arguments' decoded size while they were
// checked, gone since) raises that hold: held apart, the filtering could
// wait for its own call's bytes until the run's deadline.
func (r *resultBytes) holdFiltering(ctx context.Context, c *Call, what string, size int64, values int) (*filterHold, error) {
	fh := &filterHold{
		ctx:    ctx,
		h:      c.held,
		shared: c.held != nil,
		base:   textCopies*size + int64(values)*tools.DecodedValueBytes,
		what:   what,
	}
	if fh.h == nil {
		fh.h = &holding{r: r, c: c, run: c.Run.resultBudget(r.perRun), principal: c.Run.Caller.Principal}
	}
	if err := fh.h.raise(ctx, fh.base, fmt.Sprintf("%s is %s, which the server holds as about %s while it filters it (%d copies of the bytes and %d bytes a JSON value)",
		what, formatSize(size), formatSize(fh.base), textCopies, tools.DecodedValueBytes)); err != nil {
		return nil, err
	}
	return fh, nil
}

// findings holds n bytes for the findings beside the bytes and values:
// it is the filter.Options.Findings of the filtering.
func (fh *filterHold) findings(n int64) error {
	need := fh.base + n
	return fh.h.raise(fh.ctx, need, fmt.Sprintf("%s has so many findings (secrets and personal data the filter replaces) that the server holds about %s while it filters them (%d bytes a distinct value, %d a repeat, beside %s for the bytes and values)",
		fh.what, formatSize(need), filter.FindingBytes, filter.RepeatBytes, formatSize(fh.base)))
}

// release gives back what the filtering held, unless the call gives it
// back with its own.
func (fh *filterHold) release() {
	if !fh.shared {
		fh.h.giveBack()
	}
}

// heldError is the error of a filtering for tool that its hold stopped
// (a *filter.FindingsError, or the hold's own): the hold's
// result_bytes_limit *tools.Error, which names the limit.
func heldError(tool string, err error) error {
	var te *tools.Error
	if errors.As(err, &te) {
		return te
	}
	return &tools.Error{Code: codeResultBytesInFlight, Tool: tool, Message: err.Error(), Err: err}
}

// observeHold is what one observation of a call's result by its run's
// data flow holds for its findings (filter.Flow.ObserveHeld): the call's
// own hold (Call.held, what its result's bytes hold), raised as the
// findings are met, or one of its own for a call that holds nothing.
type observeHold struct {
	ctx    context.Context
	h      *holding
	shared bool
	base   int64 // what the call held before
	name   string
}

// holdObserving returns the holds of an observation of c's result of
// size bytes (filter.Flow.ObserveHeld's: its findings', and what the
// flow keeps of it, moved from the call's hold to the run's flowKeep),
// and what gives them back; nils and a no-op without results in flight
// to hold.
func (r *resultBytes) holdObserving(ctx context.Context, c *Call, size int) (findings, keep filter.FindingsHold, release func()) {
	if r == nil {
		return nil, nil, func() {}
	}
	oh := &observeHold{ctx: ctx, h: c.held, shared: c.held != nil, name: c.Name}
	if oh.h == nil {
		oh.h = &holding{r: r, c: c, run: c.Run.resultBudget(r.perRun), principal: c.Run.Caller.Principal}
	}
	oh.h.mu.Lock()
	oh.base = oh.h.held
	oh.h.mu.Unlock()
	if k := c.Run.flowKeep; k != nil {
		keep = k.takeFrom(ctx, oh.h, c.Name, int64(size))
	}
	return oh.findings, keep, oh.release
}

// findings holds n bytes for the findings beside what the call held.
func (oh *observeHold) findings(n int64) error {
	need := oh.base + n
	return oh.h.raise(oh.ctx, need, fmt.Sprintf("the result of %s has so many findings (secrets and personal data the run's data flow follows) that the server holds about %s while it observes them (%d bytes a finding, beside %s for the result itself)",
		oh.name, formatSize(need), filter.RepeatBytes, formatSize(oh.base)))
}

// release gives back what the observation held, unless the call gives
// it back with its own.
func (oh *observeHold) release() {
	if !oh.shared {
		oh.h.giveBack()
	}
}

// observeError is the error of a call whose result the run's data flow
// could not observe: the program does not get the result, since a value
// the flow does not know would pass the rules and the output filter.
func observeError(tool string, err error) error {
	if errors.Is(err, errObserveCrashed) {
		return &tools.Error{Code: tools.CodeToolFailed, Tool: tool, Message: err.Error(), Err: err}
	}
	msg := err.Error()
	var te *tools.Error
	if errors.As(err, &te) {
		msg = te.Message
	}
	return &tools.Error{Code: codeResultBytesInFlight, Tool: tool, Err: err, Message: "the result is not returned, since the run's data flow cannot follow it: " + msg +
		"; ask for less (a page, fewer fields, a filter at the source), or await fewer such calls at once"}
}

// flowKeep holds, for a run, what its data flow keeps of the values its
// calls returned (filter.FlowOptions.Keep: the values, their indexes,
// results waiting to be indexed), of the run's results in flight and its
// principal's share, until the run ends: up to filter.DefaultFlowBytes,
// held by nothing before (issue 19, attack20 N2).
type flowKeep struct {
	ctx    context.Context
	cancel context.CancelFunc
	h      *holding
}

// keepFlow returns run's flowKeep; its holds wait for bytes within ctx
// and at most wait. Release it when the run is over.
func (r *resultBytes) keepFlow(ctx context.Context, run *Run, wait time.Duration) *flowKeep {
	ctx, cancel := context.WithTimeout(ctx, wait)
	return &flowKeep{ctx: ctx, cancel: cancel, h: &holding{r: r, c: &Call{Name: "the data flow"}, run: run.resultBudget(r.perRun), principal: run.Caller.Principal, pinned: true}}
}

// hold is the flow's filter.FlowOptions.Keep, asked where no call's
// observation is (the values found when a result waiting in the flow is
// indexed for an output, a plan's values): it takes the bytes if they
// are free now, and waits for nothing — the run's calls, which hold the
// rest, may be waiting for the flow.
func (k *flowKeep) hold(n int64) error {
	return k.h.raiseNow(n, fmt.Sprintf("the run's data flow keeps about %s of the values its calls returned (their index, for the data-flow rules and the output filter)", formatSize(n)))
}

// takeFrom returns the filter.Flow.ObserveHeld keep of an observation of
// call name's result, whose hold is h: what the flow keeps more is moved
// from h to the run's flowKeep, which holds it until the run ends. The
// call's hold counted the observation's copy of the result and its tree
// (tools.ResultCopies), which are what the flow keeps of it; the call
// keeps at least floor, the result's bytes, for the program's sandbox to
// take. When it holds less than that and what is moved, it is raised
// first, waiting as a call's raise does (holding nothing, and before the
// fresh reservations of its run and principal).
func (k *flowKeep) takeFrom(ctx context.Context, h *holding, name string, floor int64) filter.FindingsHold {
	return func(n int64) error {
		k.h.mu.Lock()
		more := n - k.h.held
		k.h.mu.Unlock()
		if more <= 0 {
			return nil
		}
		h.mu.Lock()
		held := h.held
		h.mu.Unlock()
		if held-floor < more {
			if err := h.raise(ctx, floor+more, fmt.Sprintf("the run's data flow keeps about %s of the values its calls returned (their index, for the data-flow rules and the output filter), %s more for the result of %s",
				formatSize(n), formatSize(more), name)); err != nil {
				return err
			}
		}
		// Moved, not given back and taken again: the bytes stay the
		// run's and its principal's.
		h.mu.Lock()
		defer h.mu.Unlock()
		k.h.mu.Lock()
		defer k.h.mu.Unlock()
		if t := min(n-k.h.held, more, h.held-floor); t > 0 {
			h.held -= t
			h.pin(-t)
			k.h.held += t
			k.h.pin(t)
		}
		return nil
	}
}

// release gives back what the flow held.
func (k *flowKeep) release() {
	k.cancel()
	k.h.giveBack()
}
