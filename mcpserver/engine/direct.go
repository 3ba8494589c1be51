package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
)

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
	// and the filter hides its sensitive values.
	flow, err := e.filter.NewFlow(filter.FlowOptions{Rules: e.cfg.Rules})
	if err != nil {
		return "", false, err
	}
	track := &tracker{flow: flow, log: e.log}
	run := &Run{Caller: caller, Local: local, vault: sess.vault, flow: track}
	out, err := e.gate.call(ctx, &Call{Run: run, Name: name, Args: args})
	track.settled()
	opts := filter.Options{Vault: sess.vault, Flow: flow}
	defer e.Flush(ctx, sess)
	if err != nil {
		msg := filterText(e.filter, err.Error(), e.budget-64, opts)
		return fmt.Sprintf("%s (%s)", msg, errorCode(err)), true, nil
	}
	// The model sees a direct result as it sees a program's: filtered
	// and within the budget.
	f, err := e.filter.Apply(filter.Input{Result: out}, opts)
	if err != nil {
		return "", false, fmt.Errorf("filter %s: %w", name, err)
	}
	return string(f.Limited), false, nil
}
