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
}

func load4(s string) uint32 {
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

func (sw *sweeper) hash(p uint32) uint32 { return (p * 2654435761) >> sw.shift }

func (sw *sweeper) maybe(p uint32) bool {
	h := sw.hash(p)
	return sw.bits[h/64]&(1<<(h%64)) != 0
}

func newSweeper(values map[string]replacement) *sweeper {
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
