package filter

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// testTable is a valueTable over a slice of patterns.
type testTable struct{ pats, fulls []string }

func (tt *testTable) pattern(id int32) string { return tt.pats[id] }
func (tt *testTable) full(id int32) string {
	if int(id) < len(tt.fulls) {
		return tt.fulls[id]
	}
	return ""
}

type foundValue struct {
	start, end int
	id         int32
}

// findAll returns what ix.find reports of t, every match wanted.
func findAll(ix *valueIndex, t []byte, tab valueTable) []foundValue {
	var got []foundValue
	var fs findScratch
	ix.find(t, tab, nil, &fs, func(a, b int, id int32) int {
		got = append(got, foundValue{a, b, id})
		return 0
	})
	return got
}

func refFindAll(ix *refIndex, t []byte, tab valueTable) []foundValue {
	var got []foundValue
	ix.find(t, tab, func(a, b int, id int32) bool {
		got = append(got, foundValue{a, b, id})
		return true
	})
	return got
}

func sortFound(f []foundValue) []foundValue {
	slices.SortFunc(f, func(x, y foundValue) int {
		if x.start != y.start {
			return x.start - y.start
		}
		if x.end != y.end {
			return y.end - x.end
		}
		return int(x.id - y.id)
	})
	return f
}

// bestOf returns the longest match at each start (then the lowest id):
// what the known-value stage keeps.
func bestOf(f []foundValue) []foundValue {
	var out []foundValue
	for _, m := range sortFound(slices.Clone(f)) {
		if n := len(out); n > 0 && out[n-1].start == m.start {
			continue
		}
		out = append(out, m)
	}
	return out
}

// checkIndexSame adds pats (one at a time, searching t after each of the
// adds in searchAt) to both indexes and compares what they find: every
// match, and the best one a start when the receiver takes the first.
func checkIndexSame(t *testing.T, pats []string, text string, searchAt map[int]bool) {
	t.Helper()
	tab := &testTable{}
	var ix valueIndex
	var ref refIndex
	tt := []byte(text)
	for k, p := range pats {
		tab.pats = append(tab.pats, p)
		ix.add(p, int32(k), tab, len(pats))
		ref.add(p, int32(k), tab, len(pats))
		if !searchAt[k] && k != len(pats)-1 {
			continue
		}
		want := sortFound(refFindAll(&ref, tt, tab))
		got := sortFound(findAll(&ix, tt, tab))
		if !slices.Equal(got, want) {
			t.Fatalf("after %d values %q, in %q: found %v, want %v", k+1, pats[:k+1], text, got, want)
		}
		var taken []foundValue
		var fs findScratch
		ix.find(tt, tab, nil, &fs, func(a, b int, id int32) int {
			m := foundValue{a, b, id}
			if n := len(taken); n > 0 && taken[n-1].start == a {
				if p := taken[n-1]; b > p.end || (b == p.end && id < p.id) {
					taken[n-1] = m
				}
				return b
			}
			taken = append(taken, m)
			return b
		})
		if w := bestOf(want); !slices.Equal(sortFound(taken), w) {
			t.Fatalf("after %d values %q, in %q: took %v, want %v", k+1, pats[:k+1], text, taken, w)
		}
	}
}

// randomValues returns n values over a small alphabet, many of them
// sharing their first 8 bytes, of lengths 6 to maxLen, and a text
// built of them and noise.
func randomValues(r *rand.Rand, n, maxLen int) ([]string, string) {
	alpha := "aab"
	heads := []string{"aaaaaaaa", "aaaaaaab", "abababab"}
	seen := map[string]bool{}
	var pats []string
	for len(pats) < n {
		var b strings.Builder
		if r.IntN(4) > 0 {
			b.WriteString(heads[r.IntN(len(heads))])
		}
		l := 6 + r.IntN(maxLen-5)
		for b.Len() < l {
			b.WriteByte(alpha[r.IntN(len(alpha))])
		}
		p := b.String()[:l]
		if !seen[p] {
			seen[p] = true
			pats = append(pats, p)
		}
	}
	var text strings.Builder
	for text.Len() < 600 {
		if r.IntN(3) == 0 {
			text.WriteString(pats[r.IntN(len(pats))])
		} else {
			text.WriteByte(alpha[r.IntN(len(alpha))])
		}
	}
	return pats, text.String()
}

// TestIndexSameAsBefore: the index with automata finds what the index
// that looked each length up found, on values of few heads and many
// lengths, added between searches.
func TestIndexSameAsBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 300 {
		pats, text := randomValues(r, 1+r.IntN(60), 6+r.IntN(40))
		searchAt := map[int]bool{}
		for range 4 {
			searchAt[r.IntN(len(pats))] = true
		}
		t.Run(fmt.Sprint(round), func(t *testing.T) { checkIndexSame(t, pats, text, searchAt) })
	}
	// attack16 J1's values, and the same with one of each length twice.
	var pats []string
	for l := 6; l < 256; l++ {
		pats = append(pats, strings.Repeat("a", l))
	}
	checkIndexSame(t, pats, strings.Repeat("a", 2000)+"b"+strings.Repeat("a", 300), map[int]bool{3: true, 4: true, 100: true})
}

// FuzzIndexSameAsBefore compares the two indexes on arbitrary values
// (split at newlines) and texts.
func FuzzIndexSameAsBefore(f *testing.F) {
	f.Add("aaaaaa\naaaaaaa\naaaaaaaa\naaaaaaaaa\naaaaaaaaaa\naaaaaaaaaaa\naaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaabaaaaaaaaaaa")
	f.Add("abcdefgh12\nabcdefgh123\nabcdefgh1234\nabcdefgh12345\nabcdefgh123456\nbcdefgh1", "xxabcdefgh123456abcdefgh12")
	f.Fuzz(func(t *testing.T, values, text string) {
		seen := map[string]bool{}
		var pats []string
		for _, v := range strings.Split(values, "\n") {
			if len(v) >= minKnownLen && len(v) <= maxPatternLen && !seen[v] && len(pats) < 300 {
				seen[v] = true
				pats = append(pats, v)
			}
		}
		if len(pats) == 0 || len(text) > 1<<14 {
			return
		}
		checkIndexSame(t, pats, text, map[int]bool{len(pats) / 2: true})
	})
}

// TestAutomatonStates: a walk that starts over past a gap finds the
// state a walk over the whole text finds.
func TestAutomatonStates(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 200 {
		pats, text := randomValues(r, 1+r.IntN(30), 6+r.IntN(30))
		ids := make([]int32, len(pats))
		for i := range ids {
			ids[i] = int32(i)
		}
		ac := newRevAC(pats, ids)
		tt := []byte(text)
		whole := make([]int32, len(tt)+1)
		for i := len(tt) - 1; i >= 0; i-- {
			whole[i] = ac.step(whole[i+1], tt[i])
		}
		var pos []int32
		for i := range tt {
			if r.IntN(20) == 0 {
				pos = append(pos, int32(i))
			}
		}
		st := ac.states(tt, len(tt), pos, nil)
		for j, p := range pos {
			if st[j] != whole[p] {
				t.Fatalf("state at %d: %d, want %d", p, st[j], whole[p])
			}
		}
		// And its outputs are the patterns that start there, longest first.
		for i := range tt {
			var got, want []string
			for u := ac.out(whole[i]); u != 0; u = ac.dict[u] {
				got = append(got, ac.pats[ac.term[u]-1])
			}
			for _, p := range pats {
				if strings.HasPrefix(text[i:], p) {
					want = append(want, p)
				}
			}
			slices.SortFunc(want, func(a, b string) int { return len(b) - len(a) })
			if !slices.Equal(got, want) {
				t.Fatalf("at %d of %q: %q, want %q", i, text, got, want)
			}
		}
	}
}
