package engine

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/codecell/codecell/memory/sqlite"
)

// quotaFunc is a quotaStore made of a function.
type quotaFunc func(ctx context.Context, key string, start time.Time, limit, n int) (int, error)

func (f quotaFunc) ReserveQuota(ctx context.Context, key string, start time.Time, limit, n int) (int, error) {
	return f(ctx, key, start, limit, n)
}

// TestSharedRateLimits: two limiters on one store stand for two
// instances; a principal's limit holds over both together.
func TestSharedRateLimits(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "codecell.db")
	open := func() *sqlite.Store {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	stores := []*sqlite.Store{open(), open()}
	clock := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	down := quotaFunc(func(context.Context, string, time.Time, int, int) (int, error) {
		return 0, errors.New("database down")
	})
	tests := []struct {
		name      string
		lim       Limits
		stores    []quotaStore // one per instance; nil: not shared
		requests  int          // alternating between the instances
		wantOK    int
		wantRetry time.Duration // of the first refusal
	}{
		{
			name: "shared, one at a time", lim: Limits{ExecutionsPerMinute: 10, ExecutionBurst: 10},
			stores: []quotaStore{stores[0], stores[1]}, requests: 30, wantOK: 10, wantRetry: time.Minute,
		},
		{
			name: "shared, in batches", lim: Limits{ExecutionsPerMinute: 600, ExecutionBurst: 64},
			stores: []quotaStore{stores[0], stores[1]}, requests: 100, wantOK: 64, wantRetry: 6400 * time.Millisecond,
		},
		{
			name: "per instance", lim: Limits{ExecutionsPerMinute: 10, ExecutionBurst: 10},
			stores: []quotaStore{nil, nil}, requests: 30, wantOK: 20,
		},
		{
			name: "store down: per instance", lim: Limits{ExecutionsPerMinute: 10, ExecutionBurst: 10},
			stores: []quotaStore{down, down}, requests: 30, wantOK: 20,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ls []*Limiter
			for _, st := range tt.stores {
				l := newLimiter(tt.lim)
				if st != nil {
					l.shared = newSharedQuota(st, discardLogger())
					l.shared.now = func() time.Time { return clock }
				}
				ls = append(ls, l)
			}
			principal := "p-" + tt.name
			ok := 0
			var retry time.Duration
			for i := range tt.requests {
				r := ls[i%len(ls)].AllowExecution(t.Context(), principal, false)
				if r == nil {
					ok++
				} else if retry == 0 {
					retry = r.retryAfter
				}
			}
			if ok != tt.wantOK {
				t.Errorf("%d executions allowed over %d instances, want %d", ok, len(ls), tt.wantOK)
			}
			if tt.wantRetry != 0 && retry != tt.wantRetry {
				t.Errorf("retry after %s, want %s (the window's end)", retry, tt.wantRetry)
			}
		})
	}

	t.Run("the next window starts afresh", func(t *testing.T) {
		l := newLimiter(Limits{ToolCallsPerMinute: 60, ToolCallBurst: 2})
		l.shared = newSharedQuota(stores[0], discardLogger())
		now := clock
		l.shared.now = func() time.Time { return now }
		for i, want := range []bool{true, true, false} {
			if got := l.allowToolCall(t.Context(), "edge", false) == nil; got != want {
				t.Fatalf("call %d allowed: %v, want %v", i, got, want)
			}
		}
		now = now.Add(2 * time.Second)
		if r := l.allowToolCall(t.Context(), "edge", false); r != nil {
			t.Errorf("in the next window: %v", r)
		}
		l.shared.sweep()
		if n := len(l.shared.held); n != 1 {
			t.Errorf("%d reservations held after a sweep, want the current one", n)
		}
		now = now.Add(time.Hour)
		l.shared.sweep()
		if n := len(l.shared.held); n != 0 {
			t.Errorf("%d reservations held after their window, want 0", n)
		}
	})
}

func TestSharedWindow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		perMinute, burst int
		window           time.Duration
		quota, batch     int
	}{
		{600, 60, 6 * time.Second, 60, 3},        // the default executions
		{6000, 1000, 10 * time.Second, 1000, 62}, // the default tool calls
		{6000, 10, time.Second, 100, 6},          // a window of at least a second
		{1, 5, 5 * time.Minute, 5, 1},
	}
	for _, tt := range tests {
		w, q := sharedWindow(tt.perMinute, tt.burst)
		if w != tt.window || q != tt.quota || batchOf(q) != tt.batch {
			t.Errorf("%d/min burst %d: window %s quota %d batch %d, want %s %d %d", tt.perMinute, tt.burst, w, q, batchOf(q), tt.window, tt.quota, tt.batch)
		}
	}
}

// BenchmarkAllowExecution: what a rate-limit check costs, per instance
// (a bucket in memory) and shared (reservations from a SQLite store, in
// batches of a sixteenth of the window).
func BenchmarkAllowExecution(b *testing.B) {
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(b.TempDir(), "codecell.db")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for _, shared := range []bool{false, true} {
		name := map[bool]string{false: "per instance", true: "shared"}[shared]
		b.Run(name, func(b *testing.B) {
			l := newLimiter(Limits{ExecutionsPerMinute: 1 << 30, ExecutionBurst: 1 << 20})
			if shared {
				l.shared = newSharedQuota(st, discardLogger())
			}
			for b.Loop() {
				if r := l.AllowExecution(context.Background(), "bench", false); r != nil {
					b.Fatal(r)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "µs/check")
		})
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
