package executor_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/codecell/codecell/executor"
)

// TestPin: a pinned run's Math.random, Date.now(), new Date() and Date()
// are the pin's, the same on every run with the same pin, and differ with
// another seed; Seq numbers the calls in the order the program made them.
func TestPin(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode executor.Isolation) {
		e := newExecutor(t, mode, executor.Config{PoolSize: 1})
		now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
		code := `const r = [Math.random(), Math.random()];
			return {r, now: Date.now(), iso: new Date().toISOString(), later: new Date(0).getTime(), str: typeof Date(), inst: new Date() instanceof Date}`
		run := func(seed uint64) map[string]any {
			res := e.Run(t.Context(), executor.Request{Code: code, Pin: &executor.Pin{Seed: seed, Now: now}})
			if res.Error != nil {
				t.Fatal(res.Error)
			}
			var v map[string]any
			if err := json.Unmarshal(res.Value, &v); err != nil {
				t.Fatal(err)
			}
			return v
		}
		a, b, c := run(42), run(42), run(43)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("same pin, different runs:\n%s\n%s", ja, jb)
		}
		if a["r"].([]any)[0] == c["r"].([]any)[0] {
			t.Errorf("another seed, the same random number %v", a["r"])
		}
		if r := a["r"].([]any); r[0] == r[1] || r[0].(float64) < 0 || r[0].(float64) >= 1 {
			t.Errorf("random numbers %v", r)
		}
		if a["now"].(float64) != float64(now.UnixMilli()) || a["iso"] != "2026-07-28T12:00:00.000Z" || a["later"].(float64) != 0 || a["str"] != "string" || a["inst"] != true {
			t.Errorf("clock %s", ja)
		}
		// Without a pin the clock is the real one.
		res := e.Run(t.Context(), executor.Request{Code: "Date.now()"})
		var real float64
		_ = json.Unmarshal(res.Value, &real)
		if time.Since(time.UnixMilli(int64(real))) > time.Hour {
			t.Errorf("unpinned Date.now() = %v", real)
		}

		var seqs []int
		seq := caller(func(ctx context.Context, c executor.Call) (json.RawMessage, error) {
			seqs = append(seqs, c.Seq)
			return json.RawMessage("1"), nil
		})
		wantOK(t, e.Run(t.Context(), executor.Request{Code: "await tools.call('a.b', {}); await tools.call('a.b', {}); return 1", Dispatcher: seq}), "1")
		if len(seqs) != 2 || seqs[0] != 0 || seqs[1] != 1 {
			t.Errorf("seqs %v", seqs)
		}
	})
}
