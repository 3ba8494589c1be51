package executor_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/codecell/codecell/executor"
)

// TestMarkCached: a call the dispatcher answers from a cache is marked in
// the run's trace, and only that call.
func TestMarkCached(t *testing.T) {
	t.Parallel()
	eachMode(t, func(t *testing.T, mode executor.Isolation) {
		e := newExecutor(t, mode, executor.Config{PoolSize: 1})
		d := caller(func(ctx context.Context, c executor.Call) (json.RawMessage, error) {
			if string(c.Args) == `{"text":"again"}` {
				c.MarkCached()
			}
			return c.Args, nil
		})
		res := e.Run(context.Background(), executor.Request{Code: `await util.echo({text: "first"}); return (await util.echo({text: "again"})).text`,
			Dispatcher: d, Functions: layout})
		wantOK(t, res, `"again"`)
		if len(res.Calls) != 2 || res.Calls[0].Cached || !res.Calls[1].Cached {
			t.Fatalf("trace %+v: want the second call marked cached", res.Calls)
		}
	})
}
