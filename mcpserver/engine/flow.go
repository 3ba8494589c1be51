package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"unicode/utf8"
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
	return t.flow.ObserveHeld(source, data, from, hold, keep)
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

// stored is what a result of a store tool carries for the data flow
// (tools.StoredFields): the sources of the stored data it shows, and what
// of that data it gives back encoded, decoded.
type stored struct {
	from    filter.Provenance
	decoded [][]byte
}

// storedOf reads what out, a result of t, carries for the data flow:
// only where t, a store tool, says it puts it — never a "provenance" key
// of the data itself (a memory's metadata, a cached value) nor of another
// tool's result, which named made-up sources beside a crm value and cut
// crm's off a provenance (issue 19, attack21 P1).
func storedOf(t *tools.Tool, out json.RawMessage) stored {
	if t == nil || t.Stored == nil {
		return stored{}
	}
	d := t.Stored.Read(out)
	return stored{from: filter.NewProvenance(d.Sources...), decoded: d.Decoded}
}

// decodedTexts are the texts the flow observes for stored data a result
// gave back encoded: the bytes as UTF-8 text when they are, as a result
// that gives them as text holds them; and when any byte is not ASCII,
// each byte as the character of its value — what a program's atob, or a
// decoder written byte by byte, makes of them. They are texts, not JSON:
// the flow takes one that is not JSON as one string. The first shares
// b's bytes.
func decodedTexts(b []byte) []string {
	var out []string
	if utf8.Valid(b) {
		out = append(out, unsafe.String(unsafe.SliceData(b), len(b)))
	}
	if slices.ContainsFunc(b, func(c byte) bool { return c >= utf8.RuneSelf }) {
		latin := make([]byte, 0, 2*len(b))
		for _, c := range b {
			latin = utf8.AppendRune(latin, rune(c))
		}
		out = append(out, string(latin))
	}
	return out
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
