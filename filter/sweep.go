package filter

import (
	"slices"
	"strings"
)

// A value acted on in one place is replaced everywhere: a password under
// "password" is hidden in a log line too, and a card number found once is
// hidden where it sits inside a longer run of digits. The sweeper finds
// every such value (minSweepLen bytes or more) in one pass over each
// string: a bit filter on the first four bytes of the values (about 64
// bits per value) tells, at each position, whether any can start there.

type sweeper struct {
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
	// crowd holds the prefixes with more than crowdLimit lengths, or a
	// value longer than maxPatternLen: their values are found by ac, in
	// one step a byte, not compared at each position the prefix occurs
	// (attack16 J1's class).
	crowd map[uint32]bool
	ac    *revAC
	pos   []int32 // scratch: crowded positions, and the states there
	st    []int32
}

func load4(s string) uint32 {
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

func (sw *sweeper) hash(p uint32) uint32 { return (p * 2654435761) >> sw.shift }

func (sw *sweeper) maybe(p uint32) bool {
	h := sw.hash(p)
	return sw.bits[h/64]&(1<<(h%64)) != 0
}

// room, when set, is asked for what the automaton of the values of
// crowded prefixes costs (acCost) before it is built: refused, newSweeper
// returns nil.
func newSweeper(values map[string]replacement, room func(n int) bool) *sweeper {
	logBits := uint32(10)
	for logBits < 20 && 1<<logBits < 64*len(values) {
		logBits++
	}
	sw := &sweeper{
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
	var acPats []string
	var acIDs []int32
	acBytes := 0
	for i := 0; i < len(sw.sorted); {
		j := i + 1
		for j < len(sw.sorted) && sw.sorted[j][:4] == sw.sorted[i][:4] {
			j++
		}
		sw.byPrefix[load4(sw.sorted[i])] = [2]int32{int32(i), int32(j)}
		lengths := 0
		for a := i; a < j; a++ {
			if a == i || len(sw.sorted[a]) != len(sw.sorted[a-1]) {
				lengths++
			}
		}
		if lengths > crowdLimit || len(sw.sorted[i]) > maxPatternLen {
			if sw.crowd == nil {
				sw.crowd = map[uint32]bool{}
			}
			sw.crowd[load4(sw.sorted[i])] = true
			for a := i; a < j; a++ {
				acPats = append(acPats, sw.sorted[a])
				acIDs = append(acIDs, int32(a))
				acBytes += len(sw.sorted[a])
			}
		}
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
	if len(acPats) > 0 {
		if room != nil && !room(acCost(acBytes, len(acPats))) {
			return nil
		}
		sw.ac = newRevAC(acPats, acIDs)
	}
	return sw
}

// at returns the longest value that occurs at s[i:] and ends at or before
// end, or "".
func (sw *sweeper) at(s string, i, end int, p uint32) string {
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

// sweepText replaces in s every value the run acted on, outside the
// tokens and markers s already holds.
func (r *run) sweepText(sw *sweeper, s string, inKey bool) string {
	if len(s) < minSweepLen {
		return s
	}
	skip := r.ownTokens(r.skip[:0], s)
	r.skip = skip
	spans := r.sweepSpans(sw, s, skip, inKey, r.spans[:0])
	r.spans = spans
	return assemble(s, spans)
}

// sweepSpans appends the replacements of the values the run acted on
// that occur in s outside the regions in skip (ordered, not
// overlapping).
func (r *run) sweepSpans(sw *sweeper, s string, skip []span, inKey bool, out []span) []span {
	if sw.ac != nil {
		// Between the regions of skip, a gap at a time.
		g0 := 0
		for k := 0; k <= len(skip); k++ {
			g1 := len(s)
			if k < len(skip) {
				g1 = skip[k].start
			}
			if g0 < g1 {
				out = r.sweepGap(sw, s, g0, g1, inKey, out)
			}
			if k < len(skip) {
				g0 = max(g0, skip[k].end)
			}
		}
		return out
	}
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
			rep := sw.values[v]
			out = append(out, span{start: i, end: i + len(v), text: rep.text})
			r.record(rep.class, rep.conf, "repeat", rep.action, inKey)
			i += len(v) - 1
		}
	}
	return out
}

// sweepGap appends the replacements of the values the run acted on that
// occur in s[g0:g1], with the automaton: the positions of a chunk where a
// crowded prefix occurs are given their states by a walk backwards from
// g1 (or as far as the longest value), then the chunk is swept forwards,
// taking the longest value at each position as sweepSpans does.
func (r *run) sweepGap(sw *sweeper, s string, g0, g1 int, inKey bool, out []span) []span {
	chunk := max(findChunk, sw.ac.maxLen)
	for i := g0; i+minSweepLen <= g1; {
		c1 := min(g1-minSweepLen+1, i+chunk)
		sw.pos = sw.pos[:0]
		for p := i; p < c1; p++ {
			if q := load4(s[p:]); sw.maybe(q) && sw.crowd[q] {
				sw.pos = append(sw.pos, int32(p))
			}
		}
		if len(sw.pos) > 0 {
			sw.st = acStates(sw.ac, s, g1, sw.pos, sw.st)
		}
		k, p := 0, i
		for ; p < c1; p++ {
			q := load4(s[p:])
			if !sw.maybe(q) {
				continue
			}
			var v string
			if sw.crowd[q] {
				for int(sw.pos[k]) < p {
					k++
				}
				if u := sw.ac.out(sw.st[k]); u != 0 {
					v = sw.ac.pats[sw.ac.term[u]-1]
				}
			} else {
				v = sw.at(s, p, g1, q)
			}
			if v != "" {
				rep := sw.values[v]
				out = append(out, span{start: p, end: p + len(v), text: rep.text})
				r.record(rep.class, rep.conf, "repeat", rep.action, inKey)
				p += len(v) - 1
			}
		}
		i = p
	}
	return out
}

// sweepNode sweeps every string, key and number in n.
func (r *run) sweepNode(sw *sweeper, n *node) {
	r.rewriteNode(n, func(s string, inKey bool) string { return r.sweepText(sw, s, inKey) })
}

// rewriteNode replaces every string, key and number in n by what text
// makes of it, keeping r.path at the value being rewritten. Keys of
// allowed fields, and everything under them, are left alone; a number
// that text changes (a card number among the digits of a longer one)
// becomes a string.
func (r *run) rewriteNode(n *node, text func(s string, inKey bool) string) {
	switch n.kind {
	case kindObject:
		changed := false
		for i := range n.kids {
			key := n.kids[i].key
			if len(r.f.allowFields) > 0 && r.f.allowFields[normalizeField(key)] {
				continue
			}
			if k := text(key, true); k != key {
				n.kids[i].key = k
				changed = true
			}
			r.path = append(r.path, seg{key: n.kids[i].key, isKey: true})
			r.rewriteNode(&n.kids[i], text)
			r.path = r.path[:len(r.path)-1]
		}
		if changed {
			uniqueKeys(n.kids)
		}
	case kindArray:
		for i := range n.kids {
			r.path = append(r.path, seg{index: i})
			r.rewriteNode(&n.kids[i], text)
			r.path = r.path[:len(r.path)-1]
		}
	case kindString:
		n.str = text(n.str, false)
	case kindNumber:
		if s := text(n.str, false); s != n.str {
			*n = node{kind: kindString, str: s, key: n.key}
		}
	}
}
