package filter

import (
	"fmt"
	"maps"
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
	ix.find(t, tab, nil, nil, &fs, func(a, b int, id int32) int {
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
		if k%3 != 1 {
			ix.flush() // else crowded values added since are looked up by length
		}
		want := sortFound(refFindAll(&ref, tt, tab))
		got := sortFound(findAll(&ix, tt, tab))
		if !slices.Equal(got, want) {
			t.Fatalf("after %d values %q, in %q: found %v, want %v", k+1, pats[:k+1], text, got, want)
		}
		var taken []foundValue
		var fs findScratch
		ix.find(tt, tab, nil, nil, &fs, func(a, b int, id int32) int {
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
		// In segments (as the decodings of a run), each value found at
		// least once in each segment it is in.
		segs := []int{len(tt) / 3, len(tt)}
		segOf := func(a int) int {
			if a < segs[0] {
				return 0
			}
			return 1
		}
		type segValue struct {
			seg int
			id  int32
		}
		wantSeg, gotSeg := map[segValue]bool{}, map[segValue]bool{}
		for _, m := range want {
			wantSeg[segValue{segOf(m.start), m.id}] = true
		}
		ix.find(tt, tab, segs, nil, &fs, func(a, b int, id int32) int {
			if !wantSeg[segValue{segOf(a), id}] {
				t.Fatalf("in %q: found %d at %d, not there", text, id, a)
			}
			gotSeg[segValue{segOf(a), id}] = true
			return 0
		})
		if len(gotSeg) != len(wantSeg) {
			t.Fatalf("after %d values %q, in %q, by segment: found %v, want %v", k+1, pats[:k+1], text, gotSeg, wantSeg)
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
		st := acStates(ac, tt, len(tt), pos, nil)
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

// refSweepSpans is sweepSpans as it was, over the reference sweeper.
func refSweepSpans(sw *refSweeper, s string, skip []span) []span {
	var out []span
	ref := 0
	for i := 0; i+minSweepLen <= len(s); i++ {
		for ref < len(skip) && skip[ref].end <= i {
			ref++
		}
		if ref < len(skip) && skip[ref].start <= i {
			i = skip[ref].end - 1
			continue
		}
		p := load4(s[i:])
		if !sw.maybe(p) {
			continue
		}
		end := len(s)
		if ref < len(skip) {
			end = skip[ref].start
		}
		if v := sw.at(s, i, end, p); v != "" {
			out = append(out, span{start: i, end: i + len(v), text: sw.values[v].text})
			i += len(v) - 1
		}
	}
	return out
}

// checkSweepSame compares the sweep with the reference on values, s and
// skip.
func checkSweepSame(t *testing.T, f *Filter, values []string, s string, skip []span) {
	t.Helper()
	m := map[string]replacement{}
	for k, v := range values {
		if len(v) >= minSweepLen {
			m[v] = replacement{text: fmt.Sprintf("<%d>", k), class: ClassPassword, action: ActionRedact}
		}
	}
	if len(m) == 0 {
		return
	}
	want := refSweepSpans(newRefSweeper(m), s, skip)
	r := f.newRun(Options{})
	got := r.sweepSpans(newSweeper(m, nil), s, skip, false, nil)
	if !slices.Equal(got, want) {
		t.Fatalf("values %q, %q, skip %v: swept %v, want %v", values, s, skip, got, want)
	}
}

// TestSweepSameAsBefore: the sweep with an automaton replaces what the
// sweep that compared each length replaced, with tokens in the way.
func TestSweepSameAsBefore(t *testing.T) {
	f := newTestFilter(t, Config{})
	r := rand.New(rand.NewPCG(7, 8))
	for range 300 {
		values, s := randomValues(r, 1+r.IntN(40), 6+r.IntN(300))
		var skip []span
		for at := r.IntN(200); at < len(s); at += 1 + r.IntN(200) {
			end := min(len(s), at+r.IntN(12))
			skip = append(skip, span{start: at, end: end})
			at = end
		}
		checkSweepSame(t, f, values, s, skip)
	}
	var values []string
	for l := 5; l < 255; l++ {
		values = append(values, strings.Repeat("a", l)+"b")
	}
	checkSweepSame(t, f, values, strings.Repeat("a", 3000)+"b"+strings.Repeat("a", 300)+"b", []span{{start: 100, end: 104}})
}

// FuzzSweepSameAsBefore compares the two sweeps on arbitrary values (split
// at newlines) and texts, a region skipped where skipAt says.
func FuzzSweepSameAsBefore(f *testing.F) {
	f.Add("aaaaab\naaaaaab\naaaaaaab\naaaaaaaab\naaaaaaaaab\naaaaaaaaaab", "aaaaaaaaaaaaaaaaaaaaaaaaab aaaaaab", uint16(9))
	flt := newTestFilter(f, Config{})
	f.Fuzz(func(t *testing.T, values, s string, skipAt uint16) {
		if len(s) > 1<<14 {
			return
		}
		var skip []span
		if at := int(skipAt) % (len(s) + 1); skipAt != 0 {
			skip = []span{{start: at, end: min(len(s), at+3)}}
		}
		checkSweepSame(t, flt, strings.Split(values, "\n"), s, skip)
	})
}

// BenchmarkIndexOnePrefix measures the index alone on attack16 J1's
// values (250 of one letter, 6 to 255 bytes) over 1 MiB of that letter,
// the receiver taking the longest match at each start as the known-value
// stage does: "before" is the index that looked each length up.
func BenchmarkIndexOnePrefix(b *testing.B) {
	tab := &testTable{}
	var ix valueIndex
	var ref refIndex
	for l := 6; l < 256; l++ {
		tab.pats = append(tab.pats, strings.Repeat("a", l))
		ix.add(tab.pats[l-6], int32(l-6), tab, 250)
		ref.add(tab.pats[l-6], int32(l-6), tab, 250)
	}
	ix.flush()
	t := []byte(strings.Repeat("a", 1<<20))
	b.Run("before", func(b *testing.B) {
		b.SetBytes(int64(len(t)))
		cpu := startCPU()
		for b.Loop() {
			ref.find(t, tab, func(a, e int, id int32) bool { return true })
		}
		cpu.reportMS(b)
	})
	b.Run("after", func(b *testing.B) {
		b.SetBytes(int64(len(t)))
		var fs findScratch
		cpu := startCPU()
		for b.Loop() {
			ix.find(t, tab, nil, nil, &fs, func(a, e int, id int32) int { return e })
		}
		cpu.reportMS(b)
	})
}

// TestLongMatcherSameAsBefore: the matcher of long values answers what
// comparing the whole value at each start answered.
func TestLongMatcherSameAsBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for range 2000 {
		var fulls []string
		for range 1 + r.IntN(3) {
			var b strings.Builder
			for range 1 + r.IntN(12) {
				b.WriteByte("aab"[r.IntN(3)])
			}
			fulls = append(fulls, b.String())
		}
		var text strings.Builder
		for text.Len() < 200 {
			if r.IntN(4) == 0 {
				text.WriteString(fulls[r.IntN(len(fulls))])
			} else {
				text.WriteByte("aab"[r.IntN(3)])
			}
		}
		tt := []byte(text.String())
		var lm longMatcher
		lm.reset()
		for a := range tt {
			for id, full := range fulls {
				if r.IntN(3) == 0 {
					continue // not every start is asked about
				}
				b := a + 1
				if got, want := lm.extend(tt, a, b, int32(id), full), extendLong(tt, a, b, full); got != want {
					t.Fatalf("%q in %q at %d: %d, want %d", full, tt, a, got, want)
				}
			}
		}
	}
}

// TestSearchWordsSameAsBrute: the plain view finds, with or without
// dedupe, the values a brute search finds, letters-only ones as whole
// words only.
func TestSearchWordsSameAsBrute(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for round := range 300 {
		tab := &testTable{}
		var ix valueIndex
		pats, _ := randomValues(r, 1+r.IntN(40), 6+r.IntN(30))
		for k, p := range pats {
			if r.IntN(4) == 0 {
				p = p[:len(p)-1] + "1" // not letters only
			}
			tab.pats = append(tab.pats, p)
			ix.add(p, int32(k), tab, len(pats))
		}
		ix.flush()
		var text strings.Builder
		for text.Len() < 400 {
			switch r.IntN(4) {
			case 0:
				text.WriteString(tab.pats[r.IntN(len(tab.pats))])
			case 1:
				text.WriteString(" ")
			default:
				text.WriteByte("aAb"[r.IntN(3)])
			}
		}
		s := text.String()
		folded, idx := fold(nil, nil, s, true)
		want := map[int32]bool{}
		for id, p := range tab.pats {
			for a := range folded {
				if strings.HasPrefix(string(folded[a:]), p) {
					last := int(idx[a+len(p)-1])
					if wordBounded(s, int(idx[a]), last+1, p) {
						want[int32(id)] = true
					}
				}
			}
		}
		for _, dedupe := range []bool{false, true} {
			v := viewer{plainOnly: true, dedupe: dedupe}
			got := map[int32]bool{}
			v.search(s, nil, []*valueIndex{&ix}, tab, true, func(m knownMatch) matchVerdict {
				got[m.id] = true
				return matchNext
			})
			if !maps.Equal(got, want) {
				t.Fatalf("round %d, dedupe %v, values %q in %q: found %v, want %v", round, dedupe, tab.pats, s, got, want)
			}
		}
	}
}
