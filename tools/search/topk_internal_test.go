package search

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPushBestKeepsTheBest: the bounded heap keeps what sorting every
// candidate and taking the first k keeps, ties broken by document.
func TestPushBestKeepsTheBest(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 5, 299, 300, 301, 5000} {
		for _, k := range []int{1, 5, 300} {
			all := make([]candidate, n)
			for i := range all {
				// Few distinct scores, so that ties are many.
				all[i] = candidate{doc: int32(i), score: float64(r.IntN(20)) / 4}
			}
			r.Shuffle(n, func(i, j int) { all[i], all[j] = all[j], all[i] })
			var h []candidate
			for _, c := range all {
				h = pushBest(h, c, k)
			}
			want := slices.Clone(all)
			slices.SortFunc(want, func(a, b candidate) int {
				if worse(a, b) {
					return 1
				}
				if worse(b, a) {
					return -1
				}
				return 0
			})
			want = want[:min(k, n)]
			got := slices.Clone(h)
			slices.SortFunc(got, func(a, b candidate) int { return int(a.doc - b.doc) })
			slices.SortFunc(want, func(a, b candidate) int { return int(a.doc - b.doc) })
			if !slices.Equal(got, want) {
				t.Fatalf("n %d, k %d: kept %v, want %v", n, k, got, want)
			}
			if len(h) > 0 {
				for _, c := range h {
					if worse(c, h[0]) {
						t.Fatalf("n %d, k %d: the root %v is not the worst kept (%v)", n, k, h[0], c)
					}
				}
			}
		}
	}
}
