package executor_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codecell/codecell/executor"
)

// skills is a fake skill registry: a dispatcher that runs each skill's
// program as a nested run of the calling run, as mcpserver's skills do,
// and answers util.echo itself.
type skills struct {
	e       *executor.Executor
	code    map[string]string
	timeout time.Duration
	// ended receives the result of every nested run.
	ended chan *executor.Result
}

func (s *skills) Call(ctx context.Context, c executor.Call) (json.RawMessage, error) {
	if c.Name == "util.echo" {
		return c.Args, nil
	}
	code, ok := s.code[c.Name]
	if !ok {
		return nil, &codedError{code: "unknown_tool", tool: c.Name, msg: "unknown tool " + c.Name}
	}
	res := s.e.Run(ctx, executor.Request{Code: code, Args: c.Args, Parent: c.Run, Dispatcher: s, Functions: skillLayout, Timeout: s.timeout})
	if s.ended != nil {
		s.ended <- res
	}
	if res.Error != nil {
		return nil, res.Error
	}
	return res.Value, nil
}

var skillLayout = executor.NewLayout([]executor.Function{{Name: "util.echo"}, {Name: "skills.rec"}, {Name: "skills.fan"}, {Name: "skills.leaf"}, {Name: "skills.hog"}, {Name: "skills.spin"}, {Name: "skills.pin"}})

// TestToolCallContext checks what a tool call's context carries: the
// request's values, the run's deadline, and the calling run, which is
// cancelled when the run ends.
func TestToolCallContext(t *testing.T) {
	t.Parallel()
	type key struct{}
	eachMode(t, func(t *testing.T, mode executor.Isolation) {
		e := newExecutor(t, mode, executor.Config{PoolSize: 1})
		var callCtx context.Context
		var call executor.Call
		d := caller(func(ctx context.Context, c executor.Call) (json.RawMessage, error) {
			callCtx, call = ctx, c
			return c.Args, nil
		})
		ctx := context.WithValue(t.Context(), key{}, "principal A")
		started := time.Now()
		wantOK(t, e.Run(ctx, executor.Request{Code: "(await util.echo({x: 1})).x", Dispatcher: d, Functions: layout, Timeout: 3 * time.Second}), "1")
		if v, _ := callCtx.Value(key{}).(string); v != "principal A" {
			t.Errorf("the call's context lost the request's value: %q", v)
		}
		if deadline, ok := callCtx.Deadline(); !ok || deadline.Before(started.Add(3*time.Second)) || deadline.After(time.Now().Add(3*time.Second)) {
			t.Errorf("the call's deadline is %v (set %v), want the run's", deadline, ok)
		}
		if call.Run == nil || executor.RunFrom(callCtx) != call.Run || call.Run.Depth() != 0 {
			t.Errorf("call.Run %v, RunFrom %v", call.Run, executor.RunFrom(callCtx))
		}
		if callCtx.Err() == nil {
			t.Error("the call's context outlives its run")
		}
	})
}

// TestSelfRecursionStopsAtDepth: a skill that calls itself stops at
// MaxDepth with a short error.
func TestSelfRecursionStopsAtDepth(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode executor.Isolation) {
		e := newExecutor(t, mode, executor.Config{PoolSize: 1})
		s := &skills{e: e, code: map[string]string{"skills.rec": "return await skills.rec({})"}}
		res := e.Run(t.Context(), executor.Request{Code: "await skills.rec({})", Dispatcher: s, Functions: skillLayout})
		wantKind(t, res, executor.KindTool, "nested more than 4 deep")
		if n := len(res.Error.Message); n > 2000 {
			t.Errorf("the error is %d bytes: %s", n, res.Error.Message)
		}
		if e.Stats().Nested != 0 {
			t.Errorf("%d nested runs still alive", e.Stats().Nested)
		}
		wantOK(t, run(t, e, "1 + 1"), "2")
	})
}

// TestFanOutStaysWithinBounds runs a skill that calls 20 skills at once,
// each of which calls 20 more: at most MaxNestedRuns nested runs are alive
// at each depth, each with its share of the heap, and all complete.
func TestFanOutStaysWithinBounds(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode executor.Isolation) {
		const width, maxNested = 20, 3
		// 421 runs: a minute or more under -race on a loaded machine, where
		// the engine's instrumented code is tens of times slower. The
		// deadline only keeps a hang from waiting for the test timeout.
		e := newExecutor(t, mode, executor.Config{PoolSize: 1, MaxNestedRuns: maxNested, Timeout: 5 * time.Minute, MaxTimeout: 5 * time.Minute})
		fan := "return (await Promise.all(Array.from({length: 20}, (_, i) => skills.%s({i})))).reduce((a, b) => a + b, 0)"
		s := &skills{e: e, code: map[string]string{
			"skills.fan":  strings.ReplaceAll(fan, "%s", "leaf"),
			"skills.leaf": "return args.i",
		}}
		var most atomic.Int64
		stop := make(chan struct{})
		var sampler sync.WaitGroup
		sampler.Add(1)
		go func() {
			defer sampler.Done()
			for {
				if n := int64(e.Stats().Nested); n > most.Load() {
					most.Store(n)
				}
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Microsecond):
				}
			}
		}()
		res := e.Run(t.Context(), executor.Request{Code: strings.ReplaceAll(fan, "%s", "fan"), Dispatcher: s, Functions: skillLayout})
		close(stop)
		sampler.Wait()
		wantOK(t, res, "3800") // 20 × (0 + 1 + … + 19)
		if m := most.Load(); m > 2*maxNested || m < 2 {
			t.Errorf("%d nested runs alive at once; the bound is %d per depth, 2 depths", m, maxNested)
		}
		_ = width
	})
}

// TestNestedHeapIsShared: a nested run's heap is its root's divided among
// the nested runs of its depth, halved per depth.
func TestNestedHeapIsShared(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode executor.Isolation) {
		e := newExecutor(t, mode, executor.Config{PoolSize: 1, MemoryLimit: 64 << 20, MaxNestedRuns: 4})
		hog := "const a = []; for (let i = 0; i < 12; i++) a.push(new Uint8Array(1 << 20)); return a.length"
		wantOK(t, e.Run(t.Context(), executor.Request{Code: hog}), "12")
		s := &skills{e: e, code: map[string]string{"skills.hog": hog}}
		res := e.Run(t.Context(), executor.Request{Code: "await skills.hog({})", Dispatcher: s, Functions: skillLayout})
		wantKind(t, res, executor.KindTool, "8 MiB heap limit") // 64 MiB / (4 × 2)
	})
}

// TestNestedRunsEndWithTheirRoot cancels a root whose skill loops: the
// skill's run ends too, as canceled.
func TestNestedRunsEndWithTheirRoot(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode executor.Isolation) {
		e := newExecutor(t, mode, executor.Config{PoolSize: 1, Timeout: time.Minute, MaxTimeout: time.Minute})
		s := &skills{e: e, code: map[string]string{"skills.spin": "for (;;) {}"}, ended: make(chan *executor.Result, 1)}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan *executor.Result)
		go func() {
			done <- e.Run(ctx, executor.Request{Code: "await skills.spin({})", Dispatcher: s, Functions: skillLayout})
		}()
		for e.Stats().Nested < 1 {
			time.Sleep(time.Millisecond)
		}
		cancel()
		wantKind(t, <-done, executor.KindCanceled, "cancelled")
		select {
		case res := <-s.ended:
			wantKind(t, res, executor.KindCanceled, "")
		case <-time.After(10 * time.Second):
			t.Fatal("the nested run outlived its root")
		}
		wantOK(t, run(t, e, "1 + 1"), "2")
	})
}

// TestKilledRootTakesItsNestedRuns: a root stuck inside a built-in is
// killed with its worker, and the skill it started, alive in the same
// worker, ends with it.
func TestKilledRootTakesItsNestedRuns(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, executor.IsolationProcess, executor.Config{PoolSize: 1, Timeout: time.Minute, MaxTimeout: time.Minute})
	s := &skills{e: e, code: map[string]string{"skills.spin": "for (;;) {}"}, ended: make(chan *executor.Result, 1)}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan *executor.Result)
	go func() {
		done <- e.Run(ctx, executor.Request{
			// The skill's call goes out when the root first waits, with
			// util.echo's; once echo's result is in, the root is stuck
			// while the skill's run goes on in the same worker.
			Code:       "skills.spin({}); await util.echo({}); " + pinned,
			Dispatcher: s, Functions: skillLayout,
		})
	}()
	for e.Stats().Nested < 1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	wantKind(t, <-done, executor.KindCanceled, "cancelled")
	select {
	case res := <-s.ended:
		wantKind(t, res, executor.KindCanceled, "")
	case <-time.After(10 * time.Second):
		t.Fatal("the nested run outlived its root")
	}
	wantOK(t, run(t, e, "1 + 1"), "2")
}

// TestPinnedNestedRun: a skill stuck inside a built-in ends at its
// deadline, its caller goes on, and the worker that held it is replaced.
func TestPinnedNestedRun(t *testing.T) {
	t.Parallel()
	e := newExecutor(t, executor.IsolationProcess, executor.Config{PoolSize: 1})
	s := &skills{e: e, code: map[string]string{"skills.pin": pinned}, timeout: 100 * time.Millisecond}
	res := e.Run(t.Context(), executor.Request{
		Code:       "try { await skills.pin({}) } catch (e) { return 'caught ' + e.message.slice(0, 7) }",
		Dispatcher: s, Functions: skillLayout,
	})
	wantOK(t, res, `"caught timeout"`)
	wantOK(t, run(t, e, "1 + 1"), "2")
}
