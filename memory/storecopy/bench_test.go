package storecopy_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/internal/synth"
	"github.com/codecell/codecell/memory/postgres"
	"github.com/codecell/codecell/memory/postgres/pgtest"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/memory/storecopy"
	"github.com/codecell/codecell/tools"
)

// Benchmarks of the two stores side by side, on the same data. Reproduce
// with
//
//	make bench-store
//
// or, for another size, CODECELL_BENCH_MEMORIES=10000 make bench-store.
//
// BenchmarkStores builds a SQLite store of 100k synthetic memories with
// memory/bench_test.go's generator (the same vocabulary, Zipf-distributed
// words, seed, layers and tags), copies it into PostgreSQL with
// CopyFromSQLite (timed, with its counts and checksums compared), and then
// measures recall on both stores: the same rows, the same queries. On
// PostgreSQL it measures both vector modes on one database: an instance
// with binary codes (backend=postgres) and one with pgvector's HNSW index
// (backend=postgres-pgvector, opened after the copy: its open fills the
// embeddings and builds the index, timed as pgvector-open).

// recaller is the operation measured, on either store.
type recaller interface {
	Recall(ctx context.Context, in memory.RecallInput) (memory.RecallResult, error)
}

func benchSize(b *testing.B) int {
	n := 100_000
	if v := os.Getenv("CODECELL_BENCH_MEMORIES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("CODECELL_BENCH_MEMORIES=%q: want a positive number", v)
		}
	}
	return n
}

func BenchmarkStores(b *testing.B) {
	n := benchSize(b)
	ctx := tools.WithCaller(b.Context(), tools.Caller{Principal: "bench"})
	path := filepath.Join(b.TempDir(), "bench.db")
	lite, err := sqlite.Open(ctx, sqlite.Config{Path: path}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer lite.Close()
	start := time.Now()
	fillSynthetic(b, ctx, lite, n, 42)
	b.Logf("built a SQLite store of %d memories in %s", n, time.Since(start).Round(time.Second))

	dsn := pgtest.Database(b)
	pg, err := postgres.Open(ctx, postgres.Config{DSN: dsn, Vectors: postgres.VectorsCodes}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer pg.Close()

	b.Run(fmt.Sprintf("migrate/n=%d", n), func(b *testing.B) {
		if b.N > 1 {
			b.Skip("runs once: -benchtime 1x")
		}
		rep, err := storecopy.CopyFromSQLite(ctx, pg, path, storecopy.CopyOptions{})
		var out strings.Builder
		rep.WriteTable(&out)
		b.Logf("memory migrate of %d memories:\n%s", n, out.String())
		if err != nil {
			b.Fatal(err)
		}
		var rows int64
		for _, t := range rep.Tables {
			if t.Compared {
				rows += t.TargetRows
			}
		}
		verified := 0.0
		if rep.Verified() {
			verified = 1
		}
		b.ReportMetric(rep.Duration.Seconds(), "s")
		b.ReportMetric(float64(rows), "rows")
		b.ReportMetric(float64(rows)/rep.Duration.Seconds(), "rows/s")
		b.ReportMetric(verified, "verified")
	})

	stores := []struct {
		name string
		s    recaller
	}{{"sqlite", lite}, {"postgres", pg}}
	if pgtest.HasExtension(b, "vector") {
		var pgv *postgres.Store
		b.Run(fmt.Sprintf("pgvector-open/n=%d", n), func(b *testing.B) {
			if b.N > 1 {
				b.Skip("runs once: -benchtime 1x")
			}
			start := time.Now()
			if pgv, err = postgres.Open(ctx, postgres.Config{DSN: dsn, Vectors: postgres.VectorsPgvector}, nil); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(time.Since(start).Seconds(), "s")
		})
		if pgv != nil {
			defer pgv.Close()
			// A second instance asking the index for more candidates.
			ef, err := postgres.Open(ctx, postgres.Config{DSN: dsn, Vectors: postgres.VectorsPgvector, EfSearch: 100}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer ef.Close()
			stores = append(stores, struct {
				name string
				s    recaller
			}{"postgres-pgvector", pgv}, struct {
				name string
				s    recaller
			}{"postgres-pgvector-ef100", ef})
		}
	} else {
		b.Log("pgvector is not installed on this machine's PostgreSQL (run .ci/pgvector): backend=postgres-pgvector left out")
	}
	for _, st := range stores {
		b.Run(fmt.Sprintf("recall/backend=%s/n=%d", st.name, n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(5, 5))
			var lat []time.Duration
			for range b.N {
				lat = lat[:0]
				for q := 0; q < 200; q++ {
					text := synthText(r)
					t0 := time.Now()
					if _, err := st.s.Recall(ctx, memory.RecallInput{Query: text}); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
			}
			b.ReportMetric(ms(percentile(lat, 0.5)), "p50-ms")
			b.ReportMetric(ms(percentile(lat, 0.95)), "p95-ms")
		})
		// Keyword recall alone, where the two stores differ most (BM25
		// over FTS5 against ts_rank_cd over a GIN index).
		b.Run(fmt.Sprintf("keyword/backend=%s/n=%d", st.name, n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(5, 5))
			var lat []time.Duration
			for range b.N {
				lat = lat[:0]
				for q := 0; q < 50; q++ {
					text := synthText(r)
					t0 := time.Now()
					if _, err := st.s.Recall(ctx, memory.RecallInput{Query: text, Mode: memory.ModeKeyword}); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
			}
			b.ReportMetric(ms(percentile(lat, 0.5)), "p50-ms")
			b.ReportMetric(ms(percentile(lat, 0.95)), "p95-ms")
		})
		// Vector recall alone: the binary-code pass or the HNSW index.
		b.Run(fmt.Sprintf("vector/backend=%s/n=%d", st.name, n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(5, 5))
			var lat []time.Duration
			for range b.N {
				lat = lat[:0]
				for q := 0; q < 100; q++ {
					text := synthText(r)
					t0 := time.Now()
					if _, err := st.s.Recall(ctx, memory.RecallInput{Query: text, Mode: memory.ModeVector}); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
			}
			b.ReportMetric(ms(percentile(lat, 0.5)), "p50-ms")
			b.ReportMetric(ms(percentile(lat, 0.95)), "p95-ms")
		})
		b.Run(fmt.Sprintf("recall@10/backend=%s/n=%d", st.name, n), func(b *testing.B) {
			for range b.N {
				rec, exactP50, approxP50 := recallAt10(b, ctx, st.s, 100)
				b.ReportMetric(rec, "recall@10")
				b.ReportMetric(ms(exactP50), "exact-p50-ms")
				b.ReportMetric(ms(approxP50), "vector-p50-ms")
			}
		})
	}
}

// recallAt10 compares vector recall the default way (the binary-code
// pass or the HNSW index, above ExactSearchLimit memories) with the exact scan on queries
// drawn like the data, as memory/quantized_test.go's quantizedRecallAt10
// does, and returns the mean recall@10 and both median latencies.
func recallAt10(tb testing.TB, ctx context.Context, s recaller, queries int) (float64, time.Duration, time.Duration) {
	tb.Helper()
	r := rand.New(rand.NewPCG(99, 3))
	var sum float64
	var exactLat, approxLat []time.Duration
	for q := 0; q < queries; q++ {
		text := synthText(r)
		t0 := time.Now()
		exact, err := s.Recall(ctx, memory.RecallInput{Query: text, Mode: memory.ModeVector, Exact: true})
		if err != nil {
			tb.Fatal(err)
		}
		exactLat = append(exactLat, time.Since(t0))
		t0 = time.Now()
		approx, err := s.Recall(ctx, memory.RecallInput{Query: text, Mode: memory.ModeVector})
		if err != nil {
			tb.Fatal(err)
		}
		approxLat = append(approxLat, time.Since(t0))
		if !exact.Exact {
			tb.Fatal("the exact recall says it was not exact")
		}
		var want []int64
		for _, h := range exact.Results {
			want = append(want, h.ID)
		}
		hit := 0
		for _, h := range approx.Results {
			if slices.Contains(want, h.ID) {
				hit++
			}
		}
		if len(want) > 0 {
			sum += float64(hit) / float64(len(want))
		}
	}
	return sum / float64(queries), percentile(exactLat, 0.5), percentile(approxLat, 0.5)
}

func percentile(ds []time.Duration, p float64) time.Duration {
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	return sorted[int(p*float64(len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// synthVocab is the generator memory's benchmarks use (memory/internal/synth),
// without package memory's stop words, so that the figures compare with
// memory's BenchmarkRecall.
var synthVocab = synth.Vocab(stopword)

// stopword reports whether package memory drops w as a stop word: the
// hashing embedder gives a stop word alone no feature at all.
func stopword(w string) bool {
	v, err := memory.NewHashEmbedder(memory.DefaultDimensions).Embed(context.Background(), []string{w})
	if err != nil {
		panic(err)
	}
	return !slices.ContainsFunc(v[0], func(x float32) bool { return x != 0 })
}

func synthText(r *rand.Rand) string { return synth.Text(synthVocab, r) }

func fillSynthetic(tb testing.TB, ctx context.Context, s *sqlite.Store, n int, seed uint64) {
	tb.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	batch := make([]memory.RememberInput, 0, 500)
	for i := 0; i < n; i++ {
		batch = append(batch, memory.RememberInput{Layer: memory.Layers[i%3], Content: synthText(r), Tags: []string{fmt.Sprintf("t%d", i%7)}})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := s.RememberBatch(ctx, batch); err != nil {
				tb.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// TestStopwordProbe: the probe finds package memory's stop words and
// only them, so that the vocabulary is memory's.
func TestStopwordProbe(t *testing.T) {
	for w, want := range map[string]bool{"the": true, "here": true, "were": true, "deploy": false, "bebe": false, "kubernetes": false} {
		if got := stopword(w); got != want {
			t.Errorf("stopword(%q) = %v, want %v", w, got, want)
		}
	}
}
