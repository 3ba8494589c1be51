package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/tools"
)

// raiseSpy is a stage that records every raise of the call's hold: what
// tools.HoldDecoded and tools.HoldMore ask of resultBytes.
type raiseSpy struct {
	mu     sync.Mutex
	raises []int64
}

func (s *raiseSpy) pass(ctx context.Context, c *Call, next next) (json.RawMessage, error) {
	outer := ctx
	ctx = tools.WithDecodedHolder(ctx, func(ctx context.Context, n int64) error {
		s.mu.Lock()
		s.raises = append(s.raises, n)
		s.mu.Unlock()
		return tools.HoldDecoded(outer, n, 0) // n is already a decoded size
	})
	return next.call(ctx, c)
}

// storeGate is a gate over a real SQLite store's tools with the stages
// that matter here: the handler's caller, and the results in flight of
// l (with spy after them, when given).
func storeGate(t *testing.T, l Limits, spy *raiseSpy) (*gate, *resultBytes, *sqlite.Store) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "codecell.db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := tools.NewRegistry()
	if err := st.Register(reg); err != nil {
		t.Fatal(err)
	}
	g := newGate(reg)
	r := newResultBytes(l)
	g.stages = []stage{binding{g: g}, r}
	if spy != nil {
		g.stages = append(g.stages, spy)
	}
	return g, r, st
}

// TestStoreReadsHeldAsRead (issue 19, attack18 K8): a store tool holds
// each row it reads in the call's results in flight before it reads the
// next, and stops at the bound — the registry held a result's decoded
// size only once the handler had read every row and built the result:
// 32 task_list of 500 tasks at once, every one refused in the end, took
// the server from 207 to 856 MiB. Here a task_list of 200 tasks, each
// with 7,000 numbers of metadata (about 900 KB each once held), under a
// run's bound of 4 MiB, is refused having read a handful of rows, and
// holds nothing once refused; a listing of small tasks passes.
func TestStoreReadsHeldAsRead(t *testing.T) {
	spy := &raiseSpy{}
	g, r, st := storeGate(t, Limits{ResultBytesInFlight: 64 << 20, ResultBytesInFlightPerRun: 4 << 20}, spy)
	bob := tools.Caller{Principal: "bob"}
	ctx := tools.WithCaller(t.Context(), bob)
	meta := json.RawMessage(`{"z":[` + strings.Repeat("0,", 6999) + `0]}`)
	for i := range 200 {
		if _, err := st.AddTask(ctx, memory.TaskInput{Content: fmt.Sprintf("task %d", i), Metadata: meta}); err != nil {
			t.Fatal(err)
		}
	}
	run := &Run{Caller: bob}
	_, err := g.call(t.Context(), &Call{Run: run, Name: "memory.task_list", Args: json.RawMessage(`{"limit": 500}`)})
	if tools.CodeOf(err) != codeResultBytesInFlight || !strings.Contains(err.Error(), "limits.result_bytes_in_flight_per_run") {
		t.Fatalf("task_list of 200 tasks of 7,000 values under 4 MiB a run: %v", err)
	}
	perRow := tools.DecodedSize(tools.ResultCopies*int64(len(meta)), 7000)
	if len(spy.raises) < 2 {
		t.Fatalf("raises %v: the result was held only once built", spy.raises)
	}
	if last := spy.raises[len(spy.raises)-1]; last > 4<<20+2*perRow {
		t.Errorf("the refused raise asked %d bytes: rows were read past the bound of %d (a row holds about %d)", last, 4<<20, perRow)
	}
	if got := r.server.inUse(); got != 0 {
		t.Errorf("%d bytes still held after the refusal", got)
	}
	// An ordinary listing passes, and gives back what it held.
	g2, r2, st2 := storeGate(t, Limits{}, nil)
	for i := range 60 {
		if _, err := st2.AddTask(ctx, memory.TaskInput{Content: fmt.Sprintf("renew certificate %d", i), Tags: []string{"ops"}, Metadata: json.RawMessage(`{"host":"api.example.com","notes":["a","b"]}`)}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := g2.call(t.Context(), &Call{Run: &Run{Caller: bob}, Name: "memory.task_list", Args: json.RawMessage(`{"limit": 500}`)})
	if err != nil || !strings.Contains(string(out), "renew certificate 59") {
		t.Fatalf("an ordinary task_list: %v %.200s", err, out)
	}
	if got := r2.server.inUse(); got != 0 {
		t.Errorf("%d bytes still held after an ordinary call", got)
	}
}

// TestMemoHitsHeld (issue 19, attack18 K9): a memoised hit is held in
// the call's results in flight, as the registry holds a tool's result,
// until the program has it — it was answered before resultBytes and
// outside the registry, and 32 hits at once of a 3.9 MB workspace.read
// grew the server by 236–279 MiB against 62–65 for the same reads made.
// A hit larger than the run may hold is refused, naming the limit.
func TestMemoHitsHeld(t *testing.T) {
	g, r, st := storeGate(t, Limits{}, nil)
	memo := newMemoizer(st, CacheConfig{Memoize: []MemoRule{{Pattern: "workspace.read", TTL: time.Hour}}}.withDefaults(), slog.New(slog.DiscardHandler))
	memo.results = r
	g.stages = []stage{binding{g: g}, memo, r}
	bob := tools.Caller{Principal: "bob"}
	if _, _, err := st.WriteFile(tools.WithCaller(t.Context(), bob), "big.txt", []byte(strings.Repeat("y", 1<<20))); err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"path": "big.txt"}`)
	call := func(g *gate) (*Call, func(), error) {
		var held func()
		c := &Call{Run: &Run{Caller: bob}, Name: "workspace.read", Args: args, handOff: func(giveBack func()) { held = giveBack }}
		_, err := g.call(t.Context(), c)
		return c, held, err
	}
	if c, held, err := call(g); err != nil || c.served == servedCached {
		t.Fatalf("the first read: %v, served %v", err, c.served)
	} else {
		held()
	}
	c, held, err := call(g)
	if err != nil || c.served != servedCached {
		t.Fatalf("the second read: %v, served %v", err, c.served)
	}
	if got := r.server.inUse(); got < tools.ResultCopies<<20 {
		t.Errorf("a memoised hit of 1 MiB holds %d bytes until the program has it", got)
	}
	if held != nil {
		held()
	}
	if got := r.server.inUse(); got != 0 {
		t.Errorf("%d bytes still held once the program has the hit", got)
	}
	// Under a run's bound of 2 MiB, the hit is refused.
	small := newResultBytes(Limits{ResultBytesInFlight: 64 << 20, ResultBytesInFlightPerRun: 2 << 20})
	memo.results = small
	g.stages = []stage{binding{g: g}, memo, small}
	if _, _, err := call(g); tools.CodeOf(err) != codeResultBytesInFlight || !strings.Contains(err.Error(), "memoised") {
		t.Fatalf("a hit of 1 MiB under 2 MiB a run: %v", err)
	}
	if got := small.server.inUse(); got != 0 {
		t.Errorf("%d bytes still held after the refusal", got)
	}
}
