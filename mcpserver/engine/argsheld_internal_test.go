package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

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
