package sqlite

import (
	"github.com/codecell/codecell/memory"

	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/codecell/codecell/memory/internal/synth"
)

// synthVocab is the shared synthetic vocabulary (memory/internal/synth),
// without the stop words that keyword recall drops (QueryWords of a
// lower-case word is the word, or nothing).
var synthVocab = synth.Vocab(func(w string) bool { return len(memory.QueryWords(w)) == 0 })

// synthText returns a deterministic pseudo-sentence drawn from synthVocab.
func synthText(r *rand.Rand) string { return synth.Text(synthVocab, r) }

func fillSynthetic(tb testing.TB, s *Store, n int, seed uint64) {
	tb.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	ctx := tb.Context()
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

// quantizedRecallAt10 compares the binary-code pass with the exact scan on
// queries drawn like the data, and returns the mean recall@10.
func quantizedRecallAt10(tb testing.TB, s *Store, queries int, f memory.Filter) float64 {
	tb.Helper()
	r := rand.New(rand.NewPCG(99, 3))
	ctx := tb.Context()
	var sum float64
	for q := 0; q < queries; q++ {
		text := synthText(r)
		exact, err := s.Recall(ctx, memory.RecallInput{Query: text, Mode: memory.ModeVector, Exact: true, Filter: f})
		if err != nil {
			tb.Fatal(err)
		}
		approx, err := s.Recall(ctx, memory.RecallInput{Query: text, Mode: memory.ModeVector, Filter: f})
		if err != nil {
			tb.Fatal(err)
		}
		if !exact.Exact || approx.Exact {
			tb.Fatalf("exact flags: exact=%v approx=%v", exact.Exact, approx.Exact)
		}
		want := hitIDs(exact)
		hit := 0
		for _, id := range hitIDs(approx) {
			if slices.Contains(want, id) {
				hit++
			}
		}
		sum += float64(hit) / float64(len(want))
	}
	return sum / float64(queries)
}

func TestQuantizedSearch(t *testing.T) {
	s := openTest(t, Config{ExactSearchLimit: 100})
	fillSynthetic(t, s, 3000, 1)
	rec := quantizedRecallAt10(t, s, 30, memory.Filter{})
	t.Logf("binary-code recall@10 vs exact, 3000 memories: %.3f", rec)
	if rec < 0.95 {
		t.Fatalf("recall@10 of the binary-code pass is %.3f, want >= 0.95", rec)
	}
	// With a filter the pass widens until enough candidates pass.
	recF := quantizedRecallAt10(t, s, 10, memory.Filter{Layers: []memory.Layer{memory.Semantic}, Tags: []string{"t3"}})
	t.Logf("filtered recall@10: %.3f", recF)
	if recF < 0.9 {
		t.Fatalf("filtered recall@10 is %.3f, want >= 0.9", recF)
	}
}
