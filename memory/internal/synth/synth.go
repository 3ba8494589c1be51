// Package synth makes the synthetic memories that the store's tests and
// benchmarks share, so that figures taken on either backend compare: the
// same words, pseudo-words, distribution and seeds.
package synth

import (
	"math/rand/v2"
	"slices"
	"strings"
)

// Words is a vocabulary of real words for synthetic memories.
var Words = strings.Fields(`deploy server database backup cluster kubernetes node pod service
	latency error timeout retry queue worker cache redis postgres index query migration schema table
	user account login password token session cookie header request response api endpoint route
	build test lint release version branch merge commit review pipeline docker image registry tag
	disk memory cpu network dns certificate tls proxy load balancer firewall port socket thread
	invoice payment billing customer order refund report dashboard metric alert incident outage
	meeting sprint roadmap design document spec ticket bug feature estimate deadline priority team
	python golang rust javascript typescript java compiler runtime library package module dependency
	config file directory path log trace span event stream topic partition consumer producer batch`)

// Vocab returns Words followed by 4000 pronounceable pseudo-words, none of
// which stop reports as a stop word: real text has a long tail of rare
// words, and queries over a tiny vocabulary would match every memory.
func Vocab(stop func(string) bool) []string {
	out := slices.Clone(Words)
	cons, vows := "bcdfghklmnprstvz", "aeiou"
	r := rand.New(rand.NewPCG(3, 3))
	seen := map[string]bool{}
	for len(out) < len(Words)+4000 {
		var b strings.Builder
		for k := 0; k < 2+r.IntN(3); k++ {
			b.WriteByte(cons[r.IntN(len(cons))])
			b.WriteByte(vows[r.IntN(len(vows))])
		}
		w := b.String()
		if !seen[w] && !stop(w) {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// Text returns a deterministic pseudo-sentence of 6 to 15 words drawn
// from vocab with a Zipf distribution, as word frequencies in text are.
func Text(vocab []string, r *rand.Rand) string {
	z := rand.NewZipf(r, 1.1, 2, uint64(len(vocab)-1))
	n := 6 + r.IntN(10)
	w := make([]string, n)
	for i := range w {
		w[i] = vocab[z.Uint64()]
	}
	return strings.Join(w, " ")
}
