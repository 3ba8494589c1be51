package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
)

// errDirectDeadline ends a direct call that ran past its deadline.
var errDirectDeadline = errors.New("the direct call's deadline passed")

// CallTool makes one call of the catalogue tool name for caller, as
// direct mode does: through the gate, as a run of one call with a data
// flow of its own, and the answer is filtered as a program's result is,
// within the budget. A call that failed is text for the model too
// (failed); err is a fault of the server's.
func (e *Engine) CallTool(ctx context.Context, caller tools.Caller, local bool, name string, args json.RawMessage) (text string, failed bool, err error) {
	sess, err := e.sessions.get(caller.Principal, caller.Session)
	if err != nil {
		return "", false, err
	}
	// One call is one flow: it sees the call's result (the observer),
	// and the filter hides its sensitive values; what it keeps is held
	// until the answer is made.
	// A direct call is in no run, and ends by the longest deadline a run
	// may ask for (attack10 E1: without one, a skills__save of deeply
	// nested code held a parse for as long as its client waited).
	limit := e.exec.Config().MaxTimeout
	run := &Run{Caller: caller, Local: local, vault: sess.vault}
	run.flowKeep = e.results.keepFlow(ctx, run, limit)
	defer run.flowKeep.release()
	flow, err := e.filter.NewFlow(filter.FlowOptions{Rules: e.cfg.Rules, Match: e.reg.MatchName, Keep: run.flowKeep.hold})
	if err != nil {
		return "", false, err
	}
	track := &tracker{flow: flow, log: e.log}
	run.flow = track
	callCtx, cancel := context.WithTimeoutCause(ctx, limit, errDirectDeadline)
	// The result's bytes stay held (inflight.go) until it is filtered
	// and made the answer, as a program's call holds them until its
	// sandbox has the result: filtering costs many times a result's
	// bytes, and 12 direct calls at once of a 2.5 MB result filtered with
	// nothing held grew the server by 750 MiB (issue 19, attack10).
	var held func()
	defer func() {
		if held != nil {
			held()
		}
	}()
	c := &Call{Run: run, Name: name, Args: args, handOff: func(giveBack func()) { held = giveBack }}
	out, err := e.gate.call(callCtx, c)
	if err != nil && context.Cause(callCtx) == errDirectDeadline && ctx.Err() == nil {
		err = tools.Errorf(tools.CodeCanceled, "%s ran past %s, the longest a tool called directly may take (sandbox.max_timeout); call it from execute_code to give it a timeout_ms of its own", name, limit)
	}
	cancel()
	track.settled()
	opts := filter.Options{Vault: sess.vault, Flow: flow}
	defer e.Flush(ctx, sess)
	if err != nil {
		msg := filterText(e.filter, err.Error(), e.budget-64, opts)
		return fmt.Sprintf("%s (%s)", msg, errorCode(err)), true, nil
	}
	// The model sees a direct result as it sees a program's: filtered
	// and within the budget, what filtering it costs by its findings
	// held first as a run's output is (filterhold.go): 3 direct calls of
	// 8 MB of distinct addresses grew the server by 1.3 GiB past their
	// results' holds (attack20 N2).
	holdCtx, cancelHold := context.WithTimeout(ctx, limit)
	defer cancelHold()
	fh, err := e.results.holdFiltering(holdCtx, c, "the result of "+name, int64(len(out)), tools.JSONValues(out, math.MaxInt))
	if err != nil {
		return heldError(name, err).Error() + " (" + codeResultBytesInFlight + ")", true, nil
	}
	defer fh.release()
	opts.Findings = fh.findings
	f, err := e.filter.Apply(filter.Input{Result: out}, opts)
	if err != nil {
		var fe *filter.FindingsError
		if errors.As(err, &fe) {
			return heldError(name, err).Error() + " (" + codeResultBytesInFlight + ")", true, nil
		}
		return "", false, fmt.Errorf("filter %s: %w", name, err)
	}
	return string(f.Limited), false, nil
}
