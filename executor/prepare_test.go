package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codecell/codecell/executor"
)

// earlyResult is a result large enough to be handed early (Call.Prepare):
// n, and rows of filler.
func earlyResult(n int) json.RawMessage {
	var b strings.Builder
	fmt.Fprintf(&b, `{"n":%d,"rows":[`, n)
	for i := range 2000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"row-%d","text":"%s"}`, i, strings.Repeat("x", 40))
	}
	b.WriteString("]}")
	return json.RawMessage(b.String())
}

// TestPreparedResults: a result handed early (Call.Prepare) is built in
// the sandbox while the dispatcher still decides, and the program has it
// only once the call returns it. The program awaits util.echo, answered
// only after util.big's result was handed early (the two results reach
// the sandbox in that order), and reads whether util.big's promise had
// settled by then: it must not have, whatever util.big then returns —
// the result handed early, another one, or an error (the data flow's
// refusal, issue 19, attack20 N2).
func TestPreparedResults(t *testing.T) {
	t.Parallel()
	prepared, other := earlyResult(1), earlyResult(2)
	broken := prepared[:len(prepared)-1]
	cases := []struct {
		name string
		// answer is what util.big returns once the program says so.
		answer func() (json.RawMessage, error)
		want   string
	}{
		{"confirmed", func() (json.RawMessage, error) { return prepared, nil }, `[false,1]`},
		{"replaced", func() (json.RawMessage, error) { return other, nil }, `[false,2]`},
		{"refused", func() (json.RawMessage, error) {
			return nil, &codedError{code: "result_bytes_limit", tool: "util.big", msg: "the run's data flow cannot follow it"}
		}, `[false,"result_bytes_limit"]`},
		{"small", func() (json.RawMessage, error) { return json.RawMessage(`{"n":3}`), nil }, `[false,3]`},
		// Not JSON: built in vain early, and refused as any such result.
		{"broken", func() (json.RawMessage, error) { return broken, nil }, `[false,"tool_failed"]`},
	}
	eachMode(t, func(t *testing.T, mode executor.Isolation) {
		e := newExecutor(t, mode, executor.Config{PoolSize: 1, Timeout: 20 * time.Second})
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				handed, release := make(chan struct{}), make(chan struct{})
				d := caller(func(ctx context.Context, c executor.Call) (json.RawMessage, error) {
					switch c.Name {
					case "util.big":
						out := prepared
						switch tc.name {
						case "small":
							out = json.RawMessage(`{"n":3}`)
						case "broken":
							out = broken
						}
						c.Prepare(out)
						close(handed)
						select {
						case <-release:
						case <-ctx.Done():
							return nil, ctx.Err()
						}
						return tc.answer()
					case "util.echo":
						select {
						case <-handed:
						case <-ctx.Done():
							return nil, ctx.Err()
						}
						return c.Args, nil
					case "util.release":
						close(release)
						return json.RawMessage(`{}`), nil
					}
					return nil, &codedError{code: "unknown_tool", tool: c.Name, msg: "unknown tool"}
				})
				res := e.Run(t.Context(), executor.Request{
					Code: `let settled = false;
const big = util.big({}).then(v => { settled = true; return v.n }, e => { settled = true; return e.code });
await util.echo({});
const before = settled;
await util.release({});
return [before, await big];`,
					Dispatcher: d,
					Functions:  executor.NewLayout([]executor.Function{{Name: "util.big"}, {Name: "util.echo"}, {Name: "util.release"}}),
				})
				wantOK(t, res, tc.want)
				if c := res.Calls[0]; c.Tool != "util.big" || c.OK != (tc.name != "refused") {
					t.Errorf("call traced as %+v", c)
				}
			})
		}
		// The VM is whole after each.
		wantOK(t, run(t, e, "1 + 1"), "2")
	})
}

// TestPreparedResultsAwaitedTogether: results handed early while the VM
// waits for other calls too are built early only within a small share of
// the heap. Six calls awaited together each hand 2 MB early; the first
// returns once all have, each other one when the program asks for it
// (util.next), so that it reads them one at a time. Between the first
// and the others the program needs 10 MiB of its 16 MiB heap: built early
// without a bound, the results still pending would hold that room.
func TestPreparedResultsAwaitedTogether(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"n":1,"rows":[`)
	for i := range 40000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"t":"%s"}`, i, strings.Repeat("y", 32))
	}
	b.WriteString("]}")
	big := json.RawMessage(b.String())
	const n = 6
	eachMode(t, func(t *testing.T, mode executor.Isolation) {
		e := newExecutor(t, mode, executor.Config{PoolSize: 1, MemoryLimit: 16 << 20, Timeout: time.Minute, MaxTimeout: time.Minute})
		var handed sync.WaitGroup
		handed.Add(n)
		all := make(chan struct{})
		go func() { handed.Wait(); close(all) }()
		turns := make([]chan struct{}, n)
		for i := range turns {
			turns[i] = make(chan struct{})
		}
		close(turns[0])
		var nexts atomic.Int32
		d := caller(func(ctx context.Context, c executor.Call) (json.RawMessage, error) {
			if c.Name == "util.next" {
				close(turns[nexts.Add(1)])
				return json.RawMessage(`{}`), nil
			}
			c.Prepare(big)
			handed.Done()
			for _, ch := range []<-chan struct{}{all, turns[c.Seq]} {
				select {
				case <-ch:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return big, nil
		})
		res := e.Run(t.Context(), executor.Request{
			Code: fmt.Sprintf(`const ps = Array.from({length: %d}, () => util.big({}).then(v => v.n));
const got = [await ps[0]];
const room = "z".repeat(10 << 20).length;
for (let i = 1; i < ps.length; i++) {
  await util.next({});
  got.push(await ps[i]);
}
return [room, got];`, n),
			Dispatcher: d,
			Functions:  executor.NewLayout([]executor.Function{{Name: "util.big"}, {Name: "util.next"}}),
		})
		wantOK(t, res, fmt.Sprintf("[%d,[1,1,1,1,1,1]]", 10<<20))
	})
}
