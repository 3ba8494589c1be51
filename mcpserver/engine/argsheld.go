package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/codecell/codecell/tools"
)

// What a call's arguments cost the server, held (issue 19, attack25 F7).
// The executor holds a call's arguments as their bytes, within the run's
// heap; the server's path makes copies of them that nothing held — token
// resolution's rewrite, the data-flow rules' parse and folded views, the
// tool's own decoding and what it sends — and four runs of one principal
// posting 30 MB strings grew the server by 0.9–1 GiB. So a call of large
// arguments holds argsCopies of their bytes of its run's and the
// server's results in flight (its principal's share), from the stage
// that first copies them until the call is over, waiting within the
// run's deadline as a result's bytes do; the schema's decoding of them is
// held besides, on the call's result hold (argsHolder).

const (
	// argsCopies is how many copies of its arguments' bytes a call holds
	// while it is in the gate: the arguments, the data-flow check's
	// parse and its folded view, and the tool's decoding of them.
	argsCopies = 4
	// argsHeldFrom is the size of arguments from which a call holds
	// them: below it, what a run's calls in flight copy is a few MiB at
	// most (sandbox.max_concurrent_calls of them), and a call of small
	// arguments, the most common, takes no lock for it.
	argsHeldFrom = 64 << 10
)

// argsHeld is the stage that holds what a call's arguments cost the
// server, before the stages that copy them (dataFlow on).
type argsHeld struct{ results *resultBytes }

func (a argsHeld) pass(ctx context.Context, c *Call, next next) (json.RawMessage, error) {
	size := int64(len(c.Args))
	if size < argsHeldFrom || a.results == nil || c.Run == nil {
		return next.call(ctx, c)
	}
	r := a.results
	n := argsCopies * size
	// What the call holds besides, later, of the same budgets: its
	// result's bound, and its arguments decoded for the schema. Past
	// what one run or one principal may hold, it could only wait for
	// itself: refused now.
	besides := size
	if c.Tool != nil {
		besides = max(besides, c.Tool.MaxResultBytes)
	}
	if limit := min(r.perRun, r.server.each); n+besides > limit {
		return nil, &tools.Error{Code: codeResultBytesInFlight, Tool: c.Name, Message: fmt.Sprintf(
			"the arguments of %s are %s, and the server holds about %s while it checks and passes them on (%d copies) beside %s for the call's result and their decoding: more than one run may have in flight (limits.result_bytes_in_flight_per_run) or one principal on the server (three quarters of limits.result_bytes_in_flight), %s; send less in one call (a page of the data, or several calls)",
			c.Name, formatSize(size), formatSize(n), argsCopies, formatSize(besides), formatSize(limit))}
	}
	h := &holding{r: r, c: c, run: c.Run.resultBudget(r.perRun), principal: c.Run.Caller.Principal}
	if err := h.raise(ctx, n, fmt.Sprintf("the arguments of %s (%s) take the server about %s while it checks and passes them on", c.Name, formatSize(size), formatSize(n))); err != nil {
		return nil, err
	}
	defer h.giveBack()
	c.args = h
	return next.call(ctx, c)
}
