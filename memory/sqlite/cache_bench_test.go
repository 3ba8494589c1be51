package sqlite

import (
	"fmt"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// BenchmarkCacheSet measures one memoised result's write (CacheSet of a
// 1 KiB value) in a cache of 10k and 50k entries of 1 KiB, under the
// bound: issue 19, third round L4 (every write summed every value).
// Reproduce with
//
//	go test -tags sqlite_fts5 -run '^$' -bench CacheSet -count 3 ./memory/sqlite/
func BenchmarkCacheSet(b *testing.B) {
	for _, n := range []int{10_000, 50_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			s := openTest(b, Config{})
			value := make([]byte, 1<<10)
			now := time.Now()
			tx, err := s.w.BeginTx(b.Context(), nil)
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				if _, err := tx.Exec(`INSERT INTO cache_entries (principal, kind, key, value, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
					fmt.Sprint("p", i%100), memory.CacheMemo, fmt.Sprint("k", i), value, now.UnixMilli(), now.Add(time.Hour).UnixMilli()); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			ctx := tools.WithCaller(b.Context(), tools.Caller{Principal: "bench"})
			i := 0
			start := time.Now()
			for b.Loop() {
				if _, err := s.CacheSet(ctx, memory.CacheSetInput{Kind: memory.CacheMemo, Key: fmt.Sprint("m", i%1000), Value: value, TTL: time.Hour}); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(i), "us/set")
		})
	}
}
