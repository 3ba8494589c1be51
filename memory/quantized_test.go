package memory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// synthWords is a vocabulary for synthetic memories.
var synthWords = strings.Fields(`deploy server database backup cluster kubernetes node pod service
	latency error timeout retry queue worker cache redis postgres index query migration schema table
	user account login password token session cookie header request response api endpoint route
	build test lint release version branch merge commit review pipeline docker image registry tag
	disk memory cpu network dns certificate tls proxy load balancer firewall port socket thread
	invoice payment billing customer order refund report dashboard metric alert incident outage
	meeting sprint roadmap design document spec ticket bug feature estimate deadline priority team
	python golang rust javascript typescript java compiler runtime library package module dependency
	config file directory path log trace span event stream topic partition consumer producer batch`)

// synthVocab is synthWords followed by 4000 pronounceable pseudo-words:
// real text has a long tail of rare words, and queries over a tiny
// vocabulary would match every memory.
var synthVocab = func() []string {
	out := slices.Clone(synthWords)
	cons, vows := "bcdfghklmnprstvz", "aeiou"
	r := rand.New(rand.NewPCG(3, 3))
	seen := map[string]bool{}
	for len(out) < len(synthWords)+4000 {
		var b strings.Builder
		for k := 0; k < 2+r.IntN(3); k++ {
			b.WriteByte(cons[r.IntN(len(cons))])
			b.WriteByte(vows[r.IntN(len(vows))])
		}
		w := b.String()
		if !seen[w] && !stopwords[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}()

// synthText returns a deterministic pseudo-sentence of words drawn from
// synthVocab with a Zipf distribution, as word frequencies in text are.
func synthText(r *rand.Rand) string {
	z := rand.NewZipf(r, 1.1, 2, uint64(len(synthVocab)-1))
	n := 6 + r.IntN(10)
	w := make([]string, n)
	for i := range w {
		w[i] = synthVocab[z.Uint64()]
	}
	return strings.Join(w, " ")
}

func fillSynthetic(tb testing.TB, s *Store, n int, seed uint64) {
	tb.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	ctx := tb.Context()
	batch := make([]RememberInput, 0, 500)
	for i := 0; i < n; i++ {
		batch = append(batch, RememberInput{Layer: Layers[i%3], Content: synthText(r), Tags: []string{fmt.Sprintf("t%d", i%7)}})
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
func quantizedRecallAt10(tb testing.TB, s *Store, queries int, f Filter) float64 {
	tb.Helper()
	r := rand.New(rand.NewPCG(99, 3))
	ctx := tb.Context()
	var sum float64
	for q := 0; q < queries; q++ {
		text := synthText(r)
		exact, err := s.Recall(ctx, RecallInput{Query: text, Mode: ModeVector, Exact: true, Filter: f})
		if err != nil {
			tb.Fatal(err)
		}
		approx, err := s.Recall(ctx, RecallInput{Query: text, Mode: ModeVector, Filter: f})
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
	rec := quantizedRecallAt10(t, s, 30, Filter{})
	t.Logf("binary-code recall@10 vs exact, 3000 memories: %.3f", rec)
	if rec < 0.95 {
		t.Fatalf("recall@10 of the binary-code pass is %.3f, want >= 0.95", rec)
	}
	// With a filter the pass widens until enough candidates pass.
	recF := quantizedRecallAt10(t, s, 10, Filter{Layers: []Layer{Semantic}, Tags: []string{"t3"}})
	t.Logf("filtered recall@10: %.3f", recF)
	if recF < 0.9 {
		t.Fatalf("filtered recall@10 is %.3f, want >= 0.9", recF)
	}
}
