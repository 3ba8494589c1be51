package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/executor"
)

// gate is a fake tool that waits, parked, until the test opens it: a
// stand-in for a sampling or elicitation request.
type gate struct {
	entered chan string   // receives the run's name once its call waits
	open    chan struct{} // closed to let every waiting call return
}

func newGate() *gate {
	return &gate{entered: make(chan string, 16), open: make(chan struct{})}
}

func (g *gate) dispatcher() caller {
	return func(ctx context.Context, c executor.Call) (json.RawMessage, error) {
		switch c.Name {
		case "util.ask":
			var in struct{ Name string }
			json.Unmarshal(c.Args, &in)
			err := executor.Park(ctx, func() error {
				g.entered <- in.Name
				select {
				case <-g.open:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
			if err != nil {
				return nil, err
			}
			return json.RawMessage(`"yes"`), nil
		}
		return echo.Call(ctx, c)
	}
}

var parkLayout = executor.NewLayout([]executor.Function{{Name: "util.ask"}, {Name: "util.echo"}, {Name: "util.sleep"}})

// TestParkFreesTheSlot: with a pool of one, run A waits parked inside a
// tool call while run B starts and completes; then A resumes and
// completes. The pool grows by one waiting VM (or worker), no more.
func TestParkFreesTheSlot(t *testing.T) {
	eachMode(t, func(t *testing.T, mode executor.Isolation) {
		e := newExecutor(t, mode, executor.Config{PoolSize: 1, MaxWaiting: 1, Timeout: 20 * time.Second, MaxTimeout: 20 * time.Second, QueueWait: 10 * time.Second})
		g := newGate()
		req := func(code string) executor.Request {
			return executor.Request{Code: code, Dispatcher: g.dispatcher(), Functions: parkLayout, Owner: "p"}
		}
		a := make(chan *executor.Result, 1)
		go func() {
			a <- e.Run(context.Background(), req(`const r = await util.ask({name: "A"}); return "A:" + r`))
		}()
		if got := <-g.entered; got != "A" {
			t.Fatalf("entered %q", got)
		}
		waitStats(t, e, func(s executor.Stats) bool { return s.Waiting == 1 && s.Running == 0 })

		// B gets the slot A gave back and completes while A waits.
		wantOK(t, e.Run(context.Background(), req(`return await util.echo({n: 1})`)), `{"n":1}`)
		select {
		case res := <-a:
			t.Fatalf("A ended before it was let go: %+v", res)
		default:
		}

		close(g.open)
		wantOK(t, <-a, `"A:yes"`)
		// A run's slot is free once its VM is reset for the next run,
		// just after its result is delivered.
		waitStats(t, e, func(s executor.Stats) bool { return s.Waiting == 0 && s.Running == 0 })
	})
}

// TestParkBound: past MaxWaiting runs waiting outside the pool, a run
// waits holding its slot, and the pool gives no more runs a start.
func TestParkBound(t *testing.T) {
	eachMode(t, func(t *testing.T, mode executor.Isolation) {
		e := newExecutor(t, mode, executor.Config{PoolSize: 1, MaxWaiting: 2, Timeout: 20 * time.Second, MaxTimeout: 20 * time.Second, QueueWait: 300 * time.Millisecond})
		g := newGate()
		var wg sync.WaitGroup
		results := make([]*executor.Result, 3)
		for i := range 3 {
			name := fmt.Sprint("R", i)
			// Each run starts once the previous one waits: it holds the
			// pool's only slot until then.
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = e.Run(context.Background(), executor.Request{
					Code: fmt.Sprintf(`return await util.ask({name: %q})`, name), Dispatcher: g.dispatcher(), Functions: parkLayout, Owner: "p"})
			}()
			if got := <-g.entered; got != name {
				t.Fatalf("entered %q, want %q", got, name)
			}
		}
		// Two wait outside the pool; the third holds the slot.
		waitStats(t, e, func(s executor.Stats) bool { return s.Waiting == 2 && s.Running == 1 })

		// The third run holds the only slot: another finds the pool busy.
		wantKind(t, e.Run(context.Background(), executor.Request{Code: `1`, Owner: "q"}), executor.KindBusy, "busy")
		close(g.open)
		wg.Wait()
		for _, res := range results {
			wantOK(t, res, `"yes"`)
		}
		waitStats(t, e, func(s executor.Stats) bool { return s.Waiting == 0 && s.Running == 0 })
	})
}

// TestParkDeadline: the deadline keeps running while a run waits outside
// the pool, and the run ends with a timeout when it passes.
func TestParkDeadline(t *testing.T) {
	eachMode(t, func(t *testing.T, mode executor.Isolation) {
		e := newExecutor(t, mode, executor.Config{PoolSize: 1})
		g := newGate()
		res := e.Run(context.Background(), executor.Request{Code: `return await util.ask({name: "A"})`, Timeout: 200 * time.Millisecond,
			Dispatcher: g.dispatcher(), Functions: parkLayout})
		wantKind(t, res, executor.KindTimeout, "deadline")
		waitStats(t, e, func(s executor.Stats) bool { return s.Waiting == 0 && s.Running == 0 })
		wantOK(t, run(t, e, `1 + 1`), `2`)
	})
}

// TestRequestMaxTimeout: a request may raise (or lower) the cap on its
// own deadline, and the timeout message names the cap it ran under.
func TestRequestMaxTimeout(t *testing.T) {
	e := newExecutor(t, executor.IsolationInProcess, executor.Config{Timeout: 50 * time.Millisecond, MaxTimeout: 100 * time.Millisecond})
	for _, tc := range []struct {
		name        string
		timeout     time.Duration
		max         time.Duration
		wantKind    executor.Kind
		wantMessage string
	}{
		{"capped by the config", time.Second, 0, executor.KindTimeout, "up to 100)"},
		// The 200 ms call outlasts the config's 100 ms cap, and ends far
		// within the raised one, however late a loaded machine runs it.
		{"raised by the request", 10 * time.Second, 20 * time.Second, "", ""},
		{"capped by the request", time.Second, 150 * time.Millisecond, executor.KindTimeout, "up to 150)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.Run(t.Context(), executor.Request{Code: `await util.sleep({}); 1`, Timeout: tc.timeout, MaxTimeout: tc.max,
				Dispatcher: dispatcher(func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
					select {
					case <-time.After(200 * time.Millisecond):
						return json.RawMessage(`null`), nil
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}), Functions: parkLayout})
			if tc.wantKind == "" {
				wantOK(t, res, `1`)
				return
			}
			wantKind(t, res, tc.wantKind, tc.wantMessage)
		})
	}
}

// waitStats waits until the pool's stats satisfy ok.
func waitStats(t testing.TB, e *executor.Executor, ok func(executor.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok(e.Stats()) {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v never came", e.Stats())
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkPark measures what parking costs a tool call: a program that
// makes one call which waits in Park (giving its slot back and taking one
// again) against one whose call does not park.
func BenchmarkPark(b *testing.B) {
	for _, mode := range modes {
		e := newExecutor(b, mode, executor.Config{PoolSize: 1})
		for _, park := range []bool{false, true} {
			name := string(mode) + "/plain"
			if park {
				name = string(mode) + "/parked"
			}
			d := caller(func(ctx context.Context, c executor.Call) (json.RawMessage, error) {
				if !park {
					return json.RawMessage(`1`), nil
				}
				err := executor.Park(ctx, func() error { return nil })
				return json.RawMessage(`1`), err
			})
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					res := e.Run(context.Background(), executor.Request{Code: `return await util.ask({})`, Dispatcher: d, Functions: parkLayout})
					if res.Error != nil {
						b.Fatal(res.Error)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/run")
			})
		}
	}
}

// TestParkOutsideARun: a tool call that holds no run (a nil *Run, as a
// call made outside any program) just waits.
func TestParkOutsideARun(t *testing.T) {
	t.Parallel()
	called := false
	var r *executor.Run
	if err := r.Park(func() error { called = true; return nil }); err != nil || !called {
		t.Fatalf("Park on a nil run: called %v, err %v", called, err)
	}
}
