package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
)

// TestArgumentsHeldInTheGate (issue 19, attack25 F7): a call of large
// arguments holds argsCopies of their bytes of its run's results in
// flight while it is in the gate, and gives them back when it is over;
// arguments that could only wait for themselves are refused at once,
// before the tool is called; small ones hold nothing.
func TestArgumentsHeldInTheGate(t *testing.T) {
	t.Parallel()
	r := newResultBytes(Limits{ResultBytesInFlight: 256 << 20, ResultBytesInFlightPerRun: 32 << 20})
	run := &Run{Caller: tools.Caller{Principal: "alice"}}
	reg := tools.NewRegistry()
	var during int64 = -1
	if err := reg.Register(tools.Tool{Name: "x.post", Summary: "A fixture.", InputSchema: json.RawMessage(`{"type": "object", "properties": {"v": {"type": "string"}}}`),
		Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			during = run.resultBudget(r.perRun).inUse()
			return json.RawMessage(`{}`), nil
		}}); err != nil {
		t.Fatal(err)
	}
	g := newGate(reg)
	g.stages = []stage{argsHeld{results: r}}
	args := func(n int) json.RawMessage { return json.RawMessage(`{"v": "` + strings.Repeat("a", n) + `"}`) }

	big := args(1 << 20)
	if _, err := g.call(t.Context(), &Call{Run: run, Name: "x.post", Args: big}); err != nil {
		t.Fatal(err)
	}
	if want := int64(argsCopies * len(big)); during != want {
		t.Errorf("a call of %d bytes of arguments held %d bytes of its run's while its tool ran, want %d", len(big), during, want)
	}
	if n := run.resultBudget(r.perRun).inUse(); n != 0 {
		t.Errorf("%d bytes still held once the call is over", n)
	}

	during = -1
	if _, err := g.call(t.Context(), &Call{Run: run, Name: "x.post", Args: args(argsHeldFrom / 2)}); err != nil || during != 0 {
		t.Errorf("a call of small arguments: %v, held %d", err, during)
	}

	during = -1
	_, err := g.call(t.Context(), &Call{Run: run, Name: "x.post", Args: args(7 << 20)}) // 28 MiB held and 7 decoded: past 32
	if tools.CodeOf(err) != codeResultBytesInFlight || during != -1 || !strings.Contains(err.Error(), "send less in one call") {
		t.Errorf("arguments past the run's results in flight: %v (the tool ran: %v)", err, during != -1)
	}
	if n := run.resultBudget(r.perRun).inUse(); n != 0 {
		t.Errorf("%d bytes held after a refusal", n)
	}
}

// TestNestedArgumentsRefusedAtOnce (issue 19, attack29 T2): a call made
// by another call's handler (tools.CallThrough: api.paginate passing its
// arguments on) cannot wait for what its parent's arguments hold, which
// is given back only once the nested call is over: a hold that could
// only be had that way is refused at once, not waited for until the
// run's deadline.
func TestNestedArgumentsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	r := newResultBytes(Limits{ResultBytesInFlight: 256 << 20, ResultBytesInFlightPerRun: 32 << 20})
	run := &Run{Caller: tools.Caller{Principal: "alice"}}
	reg := tools.NewRegistry()
	g := newGate(reg)
	g.stages = []stage{argsHeld{results: r}, binding{g: g}}
	args := json.RawMessage(`{"v": "` + strings.Repeat("a", 5<<20) + `"}`) // 20 MiB held of 32
	if err := reg.Register(tools.Tool{Name: "x.post", Summary: "A fixture.", InputSchema: json.RawMessage(`{"type": "object", "properties": {"v": {"type": "string"}}}`),
		Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(tools.Tool{Name: "x.forward", Summary: "A helper passing its arguments on.", InputSchema: json.RawMessage(`{"type": "object", "properties": {"v": {"type": "string"}}}`),
		Handler: func(ctx context.Context, a json.RawMessage) (json.RawMessage, error) {
			return tools.CallThrough(ctx, "x.post", a)
		}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := g.call(ctx, &Call{Run: run, Name: "x.forward", Args: args})
	if tools.CodeOf(err) != codeResultBytesInFlight || !strings.Contains(err.Error(), "calls that made it") {
		t.Errorf("a nested call that could only wait for its parent's hold: %v after %s", err, time.Since(start).Round(time.Millisecond))
	}
	if n := run.resultBudget(r.perRun).inUse(); n != 0 {
		t.Errorf("%d bytes held after the refusal", n)
	}
}
