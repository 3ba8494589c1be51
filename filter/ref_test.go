package filter

import (
	"slices"
	"strings"
)

// The index and the sweeper as they were before the automata (attack16
// J1), kept as the reference the differential tests and fuzz targets
// compare the new ones with: they look every length of the values that
// share a position's first bytes up there.

// refIndex finds known values (folded, minKnownLen bytes or more) in a
// folded text. Values are ids into a table the caller keeps.
type refIndex struct {
	bits   []uint64 // bit filter over the first 6 bytes
	shift  uint
	n      int
	heads8 map[uint64]int32 // first 8 bytes → group+1, for values of 8 bytes or more
	heads6 map[uint64]int32 // first 6 bytes → group+1, for values of 6 or 7 bytes
	groups []refGroup
	nodes  []refNode
}

// refGroup holds the values of one head and one length: a chain of
// them, and past refGroupChain values a map from pattern to the values that
// have it. At a position of a text, a head's groups are looked at one by
// one (one per length), each in one lookup: comparing every value of a
// head in turn cost k² for k values of one head (attack14 I1's class).
type refGroup struct {
	length int32
	next   int32 // the head's next group+1, or 0
	first  int32 // node+1 of the chain of its values
	n      int32
	byPat  map[string]int32 // pattern → node+1 of the values that have it, chained by same
}

// refGroupChain is the number of values of a group compared one by one.
const refGroupChain = 4

type refNode struct {
	id   int32
	next int32 // node+1 of the group's next value, or 0
	same int32 // node+1 of the next value of the same pattern, once the group has byPat
}

func (ix *refIndex) hash(k6 uint64) uint64 { return (k6 * 0x9E3779B97F4A7C15) >> ix.shift }

func (ix *refIndex) set(k6 uint64) {
	h := ix.hash(k6)
	ix.bits[h/64] |= 1 << (h % 64)
}

// add indexes value id, whose folded form in tab is pat (tab.pattern(id)).
// hint is the number of values about to be added, to size the maps.
func (ix *refIndex) add(pat string, id int32, tab valueTable, hint int) {
	if ix.heads8 == nil {
		ix.heads8, ix.heads6 = make(map[uint64]int32, hint), map[uint64]int32{}
		ix.bits, ix.shift = make([]uint64, 64), 64-12
		for len(ix.bits)*64 < 32*hint && len(ix.bits) < 1<<20 {
			ix.bits = make([]uint64, 2*len(ix.bits))
			ix.shift--
		}
	}
	if ix.n++; ix.n*32 > len(ix.bits)*64 {
		ix.grow()
	}
	heads := ix.heads6
	k := load6s(pat)
	if len(pat) >= 8 {
		heads, k = ix.heads8, load8s(pat)
	}
	g := heads[k]
	for g != 0 && int(ix.groups[g-1].length) != len(pat) {
		g = ix.groups[g-1].next
	}
	if g == 0 {
		ix.groups = append(ix.groups, refGroup{length: int32(len(pat)), next: heads[k]})
		g = int32(len(ix.groups))
		heads[k] = g
	}
	grp := &ix.groups[g-1]
	ix.nodes = append(ix.nodes, refNode{id: id, next: grp.first})
	nd := int32(len(ix.nodes))
	grp.first = nd
	grp.n++
	switch {
	case grp.byPat != nil:
		ix.nodes[nd-1].same = grp.byPat[pat]
		grp.byPat[pat] = nd
	case grp.n > refGroupChain:
		grp.byPat = make(map[string]int32, 2*grp.n)
		for c := grp.first; c != 0; c = ix.nodes[c-1].next {
			p := tab.pattern(ix.nodes[c-1].id)
			ix.nodes[c-1].same = grp.byPat[p]
			grp.byPat[p] = c
		}
	}
	ix.set(k & (1<<48 - 1))
}

// grow doubles the bit filter until it has 32 bits per value.
func (ix *refIndex) grow() {
	for ix.n*32 > len(ix.bits)*64 {
		ix.bits = make([]uint64, 2*len(ix.bits))
		ix.shift--
	}
	for k := range ix.heads8 {
		ix.set(k & (1<<48 - 1))
	}
	for k := range ix.heads6 {
		ix.set(k)
	}
}

// find calls emit for every value that occurs in the folded text t, with
// its bounds in t, until emit returns false.
func (ix *refIndex) find(t []byte, tab valueTable, emit func(start, end int, id int32) bool) bool {
	if ix.n == 0 {
		return true
	}
	for i := 0; i+minKnownLen <= len(t); i++ {
		k6 := load6(t[i:])
		h := ix.hash(k6)
		if ix.bits[h/64]&(1<<(h%64)) == 0 {
			continue
		}
		if i+8 <= len(t) && !ix.findGroups(t, i, ix.heads8[load8s(string(t[i:i+8]))], tab, emit) {
			return false
		}
		if !ix.findGroups(t, i, ix.heads6[k6], tab, emit) {
			return false
		}
	}
	return true
}

// findGroups calls emit for the values of the groups from g on that
// occur at t[i:].
func (ix *refIndex) findGroups(t []byte, i int, g int32, tab valueTable, emit func(start, end int, id int32) bool) bool {
	for ; g != 0; g = ix.groups[g-1].next {
		grp := &ix.groups[g-1]
		end := i + int(grp.length)
		if end > len(t) {
			continue
		}
		w := t[i:end]
		if grp.byPat != nil {
			for nd := grp.byPat[string(w)]; nd != 0; nd = ix.nodes[nd-1].same {
				if !emit(i, end, ix.nodes[nd-1].id) {
					return false
				}
			}
			continue
		}
		for nd := grp.first; nd != 0; nd = ix.nodes[nd-1].next {
			if id := ix.nodes[nd-1].id; tab.pattern(id) == string(w) && !emit(i, end, id) {
				return false
			}
		}
	}
	return true
}

type refSweeper struct {
	bits  []uint64
	shift uint32
	// sorted holds the values ordered by their first four bytes, then
	// longest first; byPrefix maps four bytes to a range of sorted.
	sorted   []string
	byPrefix map[uint32][2]int32
	// sameLen holds, for a value of sorted that begins a run of values of
	// its prefix and length (more than one), those values by text: at a
	// position, one lookup finds the one that may be there. Comparing each
	// in turn cost k² for k values of one prefix (attack14 I1's class).
	sameLen map[int32]map[string]bool
	values  map[string]replacement
}

func (sw *refSweeper) hash(p uint32) uint32 { return (p * 2654435761) >> sw.shift }

func (sw *refSweeper) maybe(p uint32) bool {
	h := sw.hash(p)
	return sw.bits[h/64]&(1<<(h%64)) != 0
}

func newRefSweeper(values map[string]replacement) *refSweeper {
	logBits := uint32(10)
	for logBits < 20 && 1<<logBits < 64*len(values) {
		logBits++
	}
	sw := &refSweeper{
		bits:     make([]uint64, (1<<logBits)/64),
		shift:    32 - logBits,
		sorted:   make([]string, 0, len(values)),
		byPrefix: make(map[uint32][2]int32, len(values)),
		values:   values,
	}
	for v := range values {
		h := sw.hash(load4(v))
		sw.bits[h/64] |= 1 << (h % 64)
		sw.sorted = append(sw.sorted, v)
	}
	slices.SortFunc(sw.sorted, func(a, b string) int {
		if c := strings.Compare(a[:4], b[:4]); c != 0 {
			return c
		}
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	for i := 0; i < len(sw.sorted); {
		j := i + 1
		for j < len(sw.sorted) && sw.sorted[j][:4] == sw.sorted[i][:4] {
			j++
		}
		sw.byPrefix[load4(sw.sorted[i])] = [2]int32{int32(i), int32(j)}
		for a := i; a < j; {
			b := a + 1
			for b < j && len(sw.sorted[b]) == len(sw.sorted[a]) {
				b++
			}
			if b-a > 1 {
				if sw.sameLen == nil {
					sw.sameLen = map[int32]map[string]bool{}
				}
				m := make(map[string]bool, b-a)
				for _, v := range sw.sorted[a:b] {
					m[v] = true
				}
				sw.sameLen[int32(a)] = m
			}
			a = b
		}
		i = j
	}
	return sw
}

// at returns the longest value that occurs at s[i:] and ends at or before
// end, or "".
func (sw *refSweeper) at(s string, i, end int, p uint32) string {
	r, ok := sw.byPrefix[p]
	if !ok {
		return ""
	}
	for a := r[0]; a < r[1]; {
		v := sw.sorted[a]
		n := len(v)
		m, group := sw.sameLen[a]
		if i+n <= end {
			if group {
				if m[s[i:i+n]] {
					return s[i : i+n]
				}
			} else if s[i:i+n] == v {
				return v
			}
		}
		if !group {
			a++
			continue
		}
		a += int32(len(m))
	}
	return ""
}

// extendLong returns the end of a match at t[a:b] of a value whose whole
// folded form is full (when longer than its pattern): past the whole
// value when t holds all of it, else b.
func extendLong(t []byte, a, b int, full string) int {
	if full != "" && len(t)-a >= len(full) && string(t[a:a+len(full)]) == full {
		return a + len(full)
	}
	return b
}
