package filter

import (
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// TestFoldMapAt: the offsets a foldMap gives, chunk by chunk, are those a
// map of every folded byte gives, in texts of several chunks whose runes
// (those the fold lengthens, spaces it drops, bytes that are not UTF-8)
// straddle the chunks' ends.
func TestFoldMapAt(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 19))
	pieces := []string{"a", "B", " ", "ß", "ΐ", "\u3000", "日", "😀", "\xe6\x97", "\x80", "\xff", "İ", "ﬃ", "\n"}
	for round := range 12 {
		var b strings.Builder
		n := 1 + r.IntN(5*foldChunk)
		for b.Len() < n {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		s := b.String()
		folded, idx := fold(nil, nil, s, true)
		var fm, fmb foldMap
		fm.reset()
		fmb.reset()
		// In order, and at random: a window is refolded when it changes.
		at := make([]int, 0, len(folded)+200)
		for a := range folded {
			at = append(at, a)
		}
		for range 200 {
			at = append(at, r.IntN(len(folded)))
		}
		for _, a := range at {
			if got := fm.at(s, nil, a); got != int(idx[a]) {
				t.Fatalf("round %d: at(%d) = %d, want %d", round, a, got, idx[a])
			}
			if got := fmb.at("", []byte(s), a); got != int(idx[a]) {
				t.Fatalf("round %d, bytes: at(%d) = %d, want %d", round, a, got, idx[a])
			}
		}
	}
}

// TestSearchOffsetsUnmapped: a match at the end of a long text costs no
// map of every folded byte to its offset — 4 bytes a folded byte, up to
// 12 a byte of the text: 25 MB of output ending in a known password took
// the server more than a GiB (attack28 T8, T8+). What a search allocates
// past its fold (held in a buffer as large as it needs) is a few chunks.
func TestSearchOffsetsUnmapped(t *testing.T) {
	const value = "Weißbier-Geheimnis-2024"
	for _, fill := range []string{"ab", "ΐ"} {
		tab := &testTable{pats: []string{string(foldString(value))}}
		var ix valueIndex
		ix.add(tab.pats[0], 0, tab, 1)
		ix.flush()
		s := strings.Repeat(fill, (4<<20)/len(fill)) + " " + value
		v := viewer{plainOnly: true}
		v.folded = make([]byte, 0, maxFoldGrowth*len(s))
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		found := 0
		v.search(s, nil, []*valueIndex{&ix}, tab, true, func(m knownMatch) matchVerdict {
			if s[m.start:m.end] != value {
				t.Errorf("%q…: match %q", fill, s[m.start:m.end])
			}
			found++
			return matchNext
		})
		runtime.ReadMemStats(&m1)
		if found != 1 {
			t.Fatalf("%q…: %d matches, want 1", fill, found)
		}
		alloc := m1.TotalAlloc - m0.TotalAlloc
		t.Logf("%q… (%d bytes): the search allocated %d bytes past its fold", fill, len(s), alloc)
		if alloc > uint64(len(s))/8 {
			t.Errorf("%q… (%d bytes): the search allocated %d bytes past its fold: a map of the whole text's offsets", fill, len(s), alloc)
		}
	}
}
