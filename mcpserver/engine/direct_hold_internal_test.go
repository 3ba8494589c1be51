package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// askNobody is a Client that can ask nothing.
type askNobody struct{}

func (askNobody) Can(context.Context, string, Capability) error { return nil }
func (askNobody) Sample(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return nil, CannotAsk{Err: context.Canceled}
}
func (askNobody) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return nil, CannotAsk{Err: context.Canceled}
}

// sharedStore is a SharedStore in memory that keeps nothing; put, when
// set, sees the tokens written.
type sharedStore struct {
	put func(tokens ...memory.VaultToken)
}

func (s sharedStore) PutVaultTokens(_ context.Context, tokens ...memory.VaultToken) error {
	if s.put != nil {
		s.put(tokens...)
	}
	return nil
}
func (sharedStore) GetVaultToken(context.Context, string, string, string) (memory.VaultToken, error) {
	return memory.VaultToken{}, memory.ErrNotFound
}
func (sharedStore) DeleteVaultTokens(context.Context, string, string) error { return nil }
func (sharedStore) ReserveQuota(_ context.Context, _ string, _ time.Time, _, n int) (int, error) {
	return n, nil
}
func (sharedStore) PruneShared(context.Context, time.Time) (int64, error) { return 0, nil }

// directEngine is an engine whose one tool, dense.get, answers what
// result holds, and whose shared store calls flushed as a direct call's
// tokens are written — after its answer is filtered, before it is sent.
func directEngine(t *testing.T, result *atomic.Pointer[json.RawMessage], flushed func(e *Engine)) *Engine {
	t.Helper()
	exec, err := executor.New(executor.Config{Isolation: executor.IsolationInProcess, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Close() })
	reg := tools.NewRegistry()
	if err := reg.Register(tools.Tool{Name: "dense.get", Summary: "Get.", Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return *result.Load(), nil
	}}); err != nil {
		t.Fatal(err)
	}
	f, err := filter.New(filter.Config{Compact: true})
	if err != nil {
		t.Fatal(err)
	}
	key, err := filter.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	var e *Engine
	e, err = New(Config{Executor: exec, Registry: reg, Filter: f, Client: askNobody{}, Key: key,
		Shared: sharedStore{put: func(...memory.VaultToken) { flushed(e) }}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// heldFor is what a call holds of the results in flight for result, as
// the registry counts it (tools.HoldDecoded).
func heldFor(result []byte) int64 {
	return tools.DecodedSize(tools.ResultCopies*int64(len(result)), tools.JSONValues(result, 1<<30))
}

// TestDirectCallHeldUntilAnswered (issue 19, attack10 "probed and held"):
// a direct call (server.expose "both") holds its result's bytes in flight
// until its answer is made — filtered, its tokens written — as a
// program's call holds them until its sandbox has the result. The hold
// was given back when the gate returned, and a principal's direct calls
// at once were filtered with nothing held: twelve of a 2.5 MB result
// grew the server by 155–441 MiB. The tokens of a direct call's answer
// are written to the shared store after it is filtered: what the call
// holds then is what it held through the filter.
func TestDirectCallHeldUntilAnswered(t *testing.T) {
	t.Parallel()
	var result atomic.Pointer[json.RawMessage]
	var atFlush atomic.Int64
	atFlush.Store(-1)
	e := directEngine(t, &result, func(e *Engine) { atFlush.Store(e.results.server.inUse()) })
	b := json.RawMessage(`{"owner":"bob@example.com","v":[` + strings.Repeat(`{},`, 1<<18) + `{}]}`)
	result.Store(&b)
	text, failed, err := e.CallTool(t.Context(), tools.Caller{Principal: "bob", Session: "s"}, false, "dense.get", json.RawMessage(`{}`))
	if err != nil || failed || !strings.Contains(text, "⟦email:") {
		t.Fatalf("dense.get: failed %v, %v: %.300s", failed, err, text)
	}
	if held, want := atFlush.Load(), heldFor(b); held < want {
		t.Errorf("the call held %d bytes of results in flight as its answer's tokens were written, after the filter; its result holds %d", held, want)
	}
	if n := e.results.server.inUse(); n != 0 {
		t.Errorf("%d bytes still held after the answer", n)
	}
}

// TestDirectCallHoldCoversItsPeak (issue 19, attack10 "probed and held"):
// what a direct call holds of the results in flight covers the most
// memory its answer takes, in the gate, the data flow and the filter —
// so that the calls the results in flight let through at once take at
// most those bytes. The peak is the live heap at the end of each garbage
// collection, made frequent for the call (GOGC 5): a measure of what is
// live, not of when, unmoved by the machine's load. Results of many
// values, where the peak was 0.6 of the hold; one of many short strings
// took 1.5 times its hold (docs/security.md, not promised), and is not
// tested here.
func TestDirectCallHoldCoversItsPeak(t *testing.T) {
	var result atomic.Pointer[json.RawMessage]
	e := directEngine(t, &result, func(*Engine) {})
	for _, shape := range []struct{ name, json string }{
		{"empty objects", `{"v":[` + strings.Repeat(`{},`, 1<<18) + `{}]}`},
		{"numbers", `{"v":[` + strings.Repeat(`0,`, 1<<18) + `0]}`},
		{"objects of a number", `{"v":[` + strings.Repeat(`{"a":1},`, 1<<17) + `{}]}`},
	} {
		b := json.RawMessage(shape.json)
		result.Store(&b)
		// The least of three: the heap is the process's, and what another
		// goroutine allocates meanwhile (a test's cleanup) is not the
		// call's.
		var base, peak int64
		for i := range 3 {
			runtime.GC()
			base0 := liveHeap()
			old := debug.SetGCPercent(5)
			stop := samplePeak()
			text, failed, err := e.CallTool(t.Context(), tools.Caller{Principal: "bob", Session: fmt.Sprint(shape.name, i)}, false, "dense.get", json.RawMessage(`{}`))
			p := stop() - base0
			debug.SetGCPercent(old)
			if err != nil || failed {
				t.Fatalf("%s: failed %v, %v: %.300s", shape.name, failed, err, text)
			}
			if i == 0 || p < peak {
				base, peak = base0, p
			}
		}
		held := heldFor(b)
		t.Logf("%s: %d bytes; held %d KiB, peak %d KiB over the %d KiB live before", shape.name, len(b), held>>10, peak>>10, base>>10)
		if peak > held {
			t.Errorf("%s: a direct call of %d bytes took %d KiB at its peak, more than the %d KiB it holds of the results in flight", shape.name, len(b), peak>>10, held>>10)
		}
	}
}

// liveHeap is the heap marked live by the last garbage collection.
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// samplePeak notes the live heap at the end of every garbage collection
// until the function it returns is called, which returns the most seen.
func samplePeak() func() int64 {
	var peak atomic.Int64
	var done atomic.Bool
	var arm func()
	arm = func() {
		runtime.SetFinalizer(new([16]byte), func(*[16]byte) {
			if n := liveHeap(); n > peak.Load() {
				peak.Store(n)
			}
			if !done.Load() {
				arm()
			}
		})
	}
	arm()
	return func() int64 {
		runtime.GC()
		done.Store(true)
		return peak.Load()
	}
}

// TestDirectCallFindingsHeld (attack20 N2): what filtering a direct
// call's result costs by its findings is held before it is spent, as a
// run's output's is: a result of 100,000 distinct addresses (2 MB, about
// 150 MB of findings) is refused naming the limit rather than filtered
// outside every hold, and one of 1,000 is answered.
func TestDirectCallFindingsHeld(t *testing.T) {
	t.Parallel()
	var result atomic.Pointer[json.RawMessage]
	e := directEngine(t, &result, func(*Engine) {})
	addresses := func(n int) json.RawMessage {
		var b strings.Builder
		b.WriteString(`{"v":"`)
		for i := range n {
			fmt.Fprintf(&b, "u%d@example.com ", i)
		}
		b.WriteString(`"}`)
		return json.RawMessage(b.String())
	}
	few := addresses(1000)
	result.Store(&few)
	text, failed, err := e.CallTool(t.Context(), tools.Caller{Principal: "bob", Session: "few"}, false, "dense.get", json.RawMessage(`{}`))
	if err != nil || failed || !strings.Contains(text, "⟦email:") {
		t.Fatalf("1,000 addresses: failed %v, %v: %.300s", failed, err, text)
	}
	many := addresses(100000)
	result.Store(&many)
	text, failed, err = e.CallTool(t.Context(), tools.Caller{Principal: "bob", Session: "many"}, false, "dense.get", json.RawMessage(`{}`))
	if err != nil || !failed || !strings.Contains(text, "result_bytes_limit") || !strings.Contains(text, "findings") {
		t.Fatalf("100,000 addresses: failed %v, %v: %.300s", failed, err, text)
	}
	if n := e.results.server.inUse(); n != 0 {
		t.Errorf("%d bytes still held after the answer", n)
	}
}
