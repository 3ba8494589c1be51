package filter

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// resolveAllPairs is resolve as it was: every match, best first, compared
// with every match kept so far.
func resolveAllPairs(ms []Match) []Match {
	ms = slices.Clone(ms)
	slices.SortStableFunc(ms, func(a, b Match) int {
		switch {
		case a.Confidence != b.Confidence:
			if a.Confidence > b.Confidence {
				return -1
			}
			return 1
		case a.End-a.Start != b.End-b.Start:
			return (b.End - b.Start) - (a.End - a.Start)
		default:
			return a.Start - b.Start
		}
	})
	var kept []Match
	for _, m := range ms {
		if !slices.ContainsFunc(kept, func(k Match) bool { return m.Start < k.End && k.Start < m.End }) {
			kept = append(kept, m)
		}
	}
	slices.SortFunc(kept, func(a, b Match) int { return a.Start - b.Start })
	return kept
}

// TestResolveKeepsWhatAllPairsKept: resolve chooses among each run of
// overlapping matches alone, and keeps exactly what comparing every pair
// kept, on random matches of every density.
func TestResolveKeepsWhatAllPairsKept(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 7))
	for _, span := range []int{20, 200, 2000} {
		for range 300 {
			ms := make([]Match, r.IntN(40))
			for i := range ms {
				start := r.IntN(span)
				ms[i] = Match{Detector: fmt.Sprint(i), Confidence: float64(r.IntN(4)) / 4, Start: start, End: start + 1 + r.IntN(30)}
			}
			want := resolveAllPairs(ms)
			got := resolve(slices.Clone(ms))
			if !slices.Equal(got, want) {
				t.Fatalf("resolve(%v)\n = %v\nwant %v", ms, got, want)
			}
		}
	}
}

// BenchmarkManyValues is text holding nothing but distinct e-mail
// addresses, filtered whole (an artifact read as text): MB/s counts the
// input. Comparing every match with every other kept made 2 MiB of them
// take 23 s and 15 MB tens of minutes.
func BenchmarkManyValues(b *testing.B) {
	f, v := benchFilter(b)
	for _, n := range []int{256 << 10, 2 << 20} {
		var sb strings.Builder
		for i := 0; sb.Len() < n; i++ {
			fmt.Fprintf(&sb, "user%07d@example%d.com\n", i, i%97)
		}
		text := sb.String()
		b.Run(fmt.Sprintf("%dKiB", n>>10), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				f.ApplyText(text, Options{Vault: v, Budget: -1})
			}
		})
	}
}
