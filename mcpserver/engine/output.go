package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
)

// A run's own output — the value its program returns and its console
// lines — is held in the results in flight while the filter builds its
// tree and the record, as its calls' results are (inflight.go): of the
// run's budget and its principal's share of the server's, as its bytes
// plus tools.DecodedValueBytes a JSON value, before the tree is built.
// `return new Uint8Array(2000000)` is 2 MB of the VM's heap and reaches
// the server as two million values, which the filter's tree held at
// about 200 bytes each: 414 MiB for one run, counted nowhere (issue 19).
// An output larger than the bounds fails the run with KindResultSize,
// saying how to return less; one that must wait for other runs' results
// waits at most the sandbox's queue wait. Its findings are held too, as
// the filter meets them (filter.FindingBytes a distinct value): 20 MB of distinct
// addresses, held as 60 MB and 1 value, took the filter 1 GiB more
// (attack18 K7). An output whose findings cannot be held fails the run
// the same way.

// outputCopies is the copies of an output's bytes the server holds while
// it filters it: the bytes from the sandbox, the filter's text of them,
// and the full result it encodes (out.Full), beside the tree.
const outputCopies = 3

// smallOutput is the size under which an output's values are not
// counted: it is held as if every second byte made a value, which is
// at most a few hundred KiB, and saves a scan.
const smallOutput = 4 << 10

// holdOutput holds what filtering res — and steps, the writes of its plan
// the record shows, if any — takes for run before its findings,
// and returns the function that gives it back once the record is built
// and the filter.Options.Findings that holds its findings too. When it
// cannot, res fails with the reason, the function gives back nothing and
// the hold is nil.
func (e *Engine) holdOutput(ctx context.Context, run *Run, res *executor.Result, steps json.RawMessage) (func(), filter.FindingsHold) {
	size, values := int64(len(res.Value)+len(steps)), 0
	for _, v := range []json.RawMessage{res.Value, steps} {
		if len(v) <= smallOutput {
			values += len(v)/2 + 1
		} else {
			values += tools.JSONValues(v, math.MaxInt)
		}
	}
	for _, l := range res.Logs {
		size += int64(len(l.Message))
		values++
	}
	if res.Error != nil {
		size += int64(len(res.Error.Message))
		values++
	}
	need := outputCopies*size + int64(values)*tools.DecodedValueBytes
	r := e.results
	bound := min(r.perRun, r.server.each)
	if need > bound {
		fail(res, &executor.Error{Kind: executor.KindResultSize, Message: fmt.Sprintf(
			"the result and console output are %s holding about %d JSON values, which the server holds as about %s while it filters them (%d copies of the bytes and %d bytes a value), more than the %s one run may have in flight (limits.result_bytes_in_flight_per_run, or three quarters of limits.result_bytes_in_flight). Return less: a summary or a page, and bytes as a string (base64 or hex) rather than as an array or a typed array of numbers",
			formatSize(size), values, formatSize(need), outputCopies, tools.DecodedValueBytes, formatSize(bound))})
		return func() {}, nil
	}
	h := &holding{r: r, c: &Call{Name: "the run's output"}, run: run.resultBudget(r.perRun), principal: run.Caller.Principal}
	wait := e.exec.Config().QueueWait
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
	defer cancel()
	if err := h.raise(wctx, need, "the run's output"); err != nil {
		fail(res, &executor.Error{Kind: executor.KindBusy, Message: fmt.Sprintf(
			"the result and console output take about %s while the server filters them, and your other runs' and requests' results in flight held the rest of your share of the server's (limits.result_bytes_in_flight) for %s; run it again once they are done, or return less",
			formatSize(need), wait)})
		return func() {}, nil
	}
	findings := func(n int64) error {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
		defer cancel()
		return h.raise(wctx, need+n, fmt.Sprintf("the result and console output have so many findings (secrets and personal data the filter replaces) that the server holds about %s while it filters them (%d bytes a distinct value, %d a repeat, beside %s for the bytes and values)",
			formatSize(need+n), filter.FindingBytes, filter.RepeatBytes, formatSize(need)))
	}
	return h.giveBack, findings
}

// heldOutput is the error of a run whose output's findings could not be
// held (err, from the filter): the run fails with KindResultSize, saying
// what to return instead.
func heldOutput(err error) *executor.Error {
	msg := err.Error()
	var te *tools.Error
	if errors.As(err, &te) {
		msg = te.Message
	}
	return &executor.Error{Kind: executor.KindResultSize, Message: msg + ". Return less: a summary, counts, or a page of the values, rather than many values the filter must replace one by one"}
}

// fail makes res a failed run's: its value dropped, its error err.
func fail(res *executor.Result, err *executor.Error) {
	res.Status, res.Value, res.Error = executor.StatusError, json.RawMessage("null"), err
}

// formatSize is n bytes for a message: "3.2 MiB".
func formatSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
