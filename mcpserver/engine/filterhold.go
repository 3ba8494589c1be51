package engine

import (
	"context"
	"errors"
	"fmt"

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
