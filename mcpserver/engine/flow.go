package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"unsafe"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
)

// tracker is a run's data flow, fed as its calls return: each tool result
// is observed before the program has it, what observing it costs held
// first (the call's results in flight for what it detects, the run's for
// what the flow keeps: observeHeld), so that a result whose observation
// cannot be held fails its call rather than leaving the flow short of a
// value — which would pass the rules and the output filter. A large
// result waits in the flow, parsed, to be indexed as far as an output
// needs (filter's lazy observation).
//
// An observation that panics cannot kill the server, nor leave the flow
// silently short of what the run received: the panic is logged where it
// happened, and every settled after it panics in turn, on the goroutine
// that waits for the flow — a call's (the executor turns it into that
// call's error) or the run's own (execute_code's handler turns it into
// an internal error, with nothing of the run's output).
type tracker struct {
	flow *filter.Flow
	log  *slog.Logger // nil logs nothing

	mu      sync.Mutex
	crashed bool // an observation panicked
}

// errObserveCrashed is the panic of settled after an observation
// panicked.
var errObserveCrashed = errors.New("following the data flow of a tool's result failed (a bug in codecell); the run cannot go on")

// observe records result as received from source, holding data of the
// sources from too, before the call returns it: hold holds what its
// findings cost as they are met, and keep what the flow keeps of it
// (filter.Flow.ObserveHeld). A refusal of either is the
// call's error: the program never has the result. Observed in the
// background while the program read it, a refused result could no longer
// be taken back (issue 19, attack20 N2: one run's 8 calls of 8 MB of
// distinct addresses grew the server by 750 MiB, observed with nothing
// held).
func (t *tracker) observe(source string, result json.RawMessage, from filter.Provenance, hold, keep filter.FindingsHold) error {
	// A copy, since the executor owns result once the call returns; a
	// result waiting in the flow keeps it.
	return t.observeNow(source, string(result), from, hold, keep)
}

// observeNow records data as received from source; a panic is logged
// and makes every later settled panic in turn.
func (t *tracker) observeNow(source string, data string, from filter.Provenance, hold, keep filter.FindingsHold) (err error) {
	defer func() {
		if p := recover(); p != nil {
			t.mu.Lock()
			t.crashed = true
			t.mu.Unlock()
			if t.log != nil {
				// The source and the size, never the value.
				t.log.Error("observing a tool's result panicked", "tool", source, "bytes", len(data), "panic_type", fmt.Sprintf("%T", p), "stack", string(debug.Stack()))
			}
			err = errObserveCrashed
		}
	}()
	// storedProvenance only reads the bytes of data.
	return t.flow.ObserveHeld(source, data, storedProvenance(unsafe.Slice(unsafe.StringData(data), len(data))).Union(from), hold, keep)
}

// settled returns the flow. It panics with errObserveCrashed once an
// observation panicked.
func (t *tracker) settled() *filter.Flow {
	if !t.wait() {
		panic(errObserveCrashed)
	}
	return t.flow
}

// wait reports false once an observation panicked: the flow is short of
// what the run received.
func (t *tracker) wait() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.crashed
}

// checkFlow refuses a call whose arguments carry a value a data-flow rule
// forbids sending to the tool.
func checkFlow(flow *filter.Flow, name string, args json.RawMessage) error {
	err := flow.Check(name, args)
	var fe *filter.FlowError
	if errors.As(err, &fe) {
		return &tools.Error{Code: "policy_violation", Tool: name, Message: fe.Error(), Err: err}
	}
	return err
}

// storedProvenance is the union of the provenance fields in the result of
// a tool that reads what was stored (memories, workspace files): the
// sources the stored data came from. Other results carry none.
func storedProvenance(out json.RawMessage) filter.Provenance {
	var p filter.Provenance
	// Looked for by its tail first: a search anchored on a quote, the
	// commonest byte of JSON, took 0.8 ms of a 1 MB result, 8× as long.
	if !bytes.Contains(out, []byte(`venance"`)) || !bytes.Contains(out, []byte(`"provenance"`)) {
		return p
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "provenance" {
					if b, err := json.Marshal(e); err == nil {
						var q filter.Provenance
						if json.Unmarshal(b, &q) == nil {
							p = p.Union(q)
						}
					}
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	var v any
	if json.Unmarshal(out, &v) == nil {
		walk(v)
	}
	return p
}

// observeResolved tells the flow where the values of the tokens in args
// (a call's arguments before resolveTokens) came from: the sources the
// vault recorded for each token, as if the run had just read the value
// from them, under the token's class. A tool that echoes its arguments
// then returns a value the flow knows: the data-flow rules still stop it
// where its sources may not go, and the outputs hide it as its token did.
// Journal keeps each observation for a resumable run's journal.
func observeResolved(flow *filter.Flow, v *filter.Vault, name string, args json.RawMessage, journal *observations) {
	if flow == nil || v == nil || !bytes.Contains(args, []byte("⟦")) && !bytes.Contains(args, []byte(`\u27e6`)) && !bytes.Contains(args, []byte(`\u27E6`)) {
		return
	}
	var tree any
	if json.Unmarshal(args, &tree) != nil {
		return
	}
	seen := map[string]bool{}
	var walk func(v any)
	var tokens []string
	walk = func(x any) {
		switch x := x.(type) {
		case string:
			for _, t := range filter.FindTokens(x) {
				if !seen[t] {
					seen[t] = true
					tokens = append(tokens, t)
				}
			}
		case map[string]any:
			for k, e := range x {
				walk(k)
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(tree)
	for _, t := range tokens {
		// As resolveTokens left it: held, with every source the shared
		// store knows (a token another instance minted, or learned more
		// sources of, is read through there).
		value, sources, ok := v.Held(t)
		class, isToken := filter.TokenClass(t)
		if !ok || !isToken || value == t {
			continue
		}
		b, err := json.Marshal(map[string]string{string(class): value})
		if err != nil {
			continue
		}
		prov := filter.NewProvenance(sources...)
		// A token minted from the program's own output has no source:
		// the value is still hidden as its token was, from a name no
		// tool has (tool names are category.name).
		source := "token"
		if !prov.IsZero() {
			source = prov.Sources()[0]
		}
		flow.Observe(source, b, prov)
		journal.note(source, b, prov)
	}
}

// resolveTokens turns the tokens in a call's arguments back into their
// values, under the exfiltration rules.
func resolveTokens(ctx context.Context, v *filter.Vault, name string, args json.RawMessage) (json.RawMessage, error) {
	if v == nil || !bytes.Contains(args, []byte("⟦")) {
		return args, nil
	}
	out, err := v.ResolveContext(ctx, args, name)
	var re *filter.RuleError
	var te *filter.TokenError
	switch {
	case errors.As(err, &re):
		return nil, &tools.Error{Code: "policy_violation", Tool: name, Message: re.Error(), Err: err}
	case errors.As(err, &te):
		return nil, &tools.Error{Code: tools.CodeInvalidArguments, Tool: name, Message: te.Error(), Err: err}
	case err != nil:
		return nil, &tools.Error{Code: tools.CodeInvalidArguments, Tool: name, Message: "arguments: " + err.Error(), Err: err}
	}
	return out, nil
}
