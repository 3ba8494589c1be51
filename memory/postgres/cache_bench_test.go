package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/postgres"
	"github.com/codecell/codecell/memory/postgres/pgtest"
	"github.com/codecell/codecell/tools"
)

// BenchmarkCacheSet measures one memoised result's write (CacheSet of a
// 1 KiB value) in a cache of 10k and 50k entries of 1 KiB, under the
// bound: issue 19, third round L4 (every write summed every value).
// Reproduce with
//
//	go test -tags sqlite_fts5 -run '^$' -bench CacheSet -count 3 ./memory/postgres/
func BenchmarkCacheSet(b *testing.B) {
	for _, n := range []int{10_000, 50_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			st, err := postgres.Open(b.Context(), postgres.Config{DSN: pgtest.Database(b), MaxConns: 4}, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			now := time.Now()
			if _, err := st.Pool().Exec(b.Context(), `INSERT INTO cache_entries (principal, kind, key, value, created_at, expires_at)
				SELECT 'p' || (i % 100), $1, 'k' || i, convert_to(repeat('x', 1024), 'UTF8'), $2, $3 FROM generate_series(1, $4) AS i`,
				memory.CacheMemo, now.UnixMilli(), now.Add(time.Hour).UnixMilli(), n); err != nil {
				b.Fatal(err)
			}
			if _, err := st.Pool().Exec(b.Context(), `VACUUM ANALYZE cache_entries`); err != nil {
				b.Fatal(err)
			}
			value := make([]byte, 1<<10)
			ctx := tools.WithCaller(b.Context(), tools.Caller{Principal: "bench"})
			i := 0
			start := time.Now()
			for b.Loop() {
				if _, err := st.CacheSet(ctx, memory.CacheSetInput{Kind: memory.CacheMemo, Key: fmt.Sprint("m", i%1000), Value: value, TTL: time.Hour}); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(i), "us/set")
		})
	}
}
