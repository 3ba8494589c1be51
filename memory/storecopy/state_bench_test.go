package storecopy_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/postgres"
	"github.com/codecell/codecell/memory/postgres/pgtest"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/memory/storetest"
	"github.com/codecell/codecell/tools"
)

// BenchmarkSharedState puts the operations a request makes on shared
// state side by side on SQLite and PostgreSQL (the machine's server over
// a Unix socket): a rate-limit reservation, a vault token lookup, a cache
// read and write, and a plan saved and claimed. It reports µs/op.
func BenchmarkSharedState(b *testing.B) {
	ctx := tools.WithCaller(b.Context(), tools.Caller{Principal: "bench"})
	lite, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer lite.Close()
	pg, err := postgres.Open(ctx, postgres.Config{DSN: pgtest.Database(b)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer pg.Close()
	steps := []memory.PlanStep{{Tool: "workspace.write", Args: json.RawMessage(`{"path":"a","data":"1"}`)}}
	var window atomic.Int64
	ops := []struct {
		name string
		prep func(b *testing.B, st storetest.Backend)
		op   func(st storetest.Backend, i int) error
	}{
		{"reserve_quota", nil, func(st storetest.Backend, i int) error {
			// A fresh window now and then, so that the counter is not
			// always spent.
			start := time.UnixMilli(1_700_000_000_000 + window.Add(1)/100*60_000)
			_, err := st.ReserveQuota(ctx, "executions/bench", start, 1000, 10)
			return err
		}},
		{"vault_get", func(b *testing.B, st storetest.Backend) {
			if err := st.PutVaultTokens(ctx, memory.VaultToken{Principal: "bench", Session: "s", Token: "⟦email:01⟧",
				Sealed: make([]byte, 64), Expires: time.Now().Add(time.Hour)}); err != nil {
				b.Fatal(err)
			}
		}, func(st storetest.Backend, i int) error {
			_, err := st.GetVaultToken(ctx, "bench", "s", "⟦email:01⟧")
			return err
		}},
		{"cache_get", func(b *testing.B, st storetest.Backend) {
			if _, err := st.CacheSet(ctx, memory.CacheSetInput{Kind: memory.CacheMemo, Key: "k", Value: make([]byte, 1024), TTL: time.Hour}); err != nil {
				b.Fatal(err)
			}
		}, func(st storetest.Backend, i int) error {
			_, err := st.CacheGet(ctx, memory.CacheMemo, "k")
			return err
		}},
		{"cache_set", nil, func(st storetest.Backend, i int) error {
			_, err := st.CacheSet(ctx, memory.CacheSetInput{Kind: memory.CacheMemo, Key: fmt.Sprint(i % 500), Value: make([]byte, 1024),
				TTL: time.Hour, MaxEntries: 1000})
			return err
		}},
		{"plan_save_claim", nil, func(st storetest.Backend, i int) error {
			id, _, err := st.SavePlan(ctx, memory.SavePlanInput{Steps: steps, TTL: time.Hour})
			if err != nil {
				return err
			}
			_, err = st.ClaimPlan(ctx, id, "c")
			return err
		}},
	}
	for _, o := range ops {
		for _, be := range []struct {
			name string
			st   storetest.Backend
		}{{"sqlite", lite}, {"postgres", pg}} {
			b.Run(o.name+"/"+be.name, func(b *testing.B) {
				if o.prep != nil {
					o.prep(b, be.st)
				}
				b.ResetTimer()
				for i := range b.N {
					if err := o.op(be.st, i); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/op")
			})
		}
	}
}
