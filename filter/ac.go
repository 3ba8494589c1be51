package filter

import (
	"slices"
	"strings"
)

// An automaton over many values finds, at each position of a text, every
// value that starts there in one step a byte, whatever the number of
// values and how many of them share their first bytes: an Aho–Corasick
// automaton over the values reversed, walked from the end of the text to
// its start. After the walk has read t[i:] backwards, its state is the
// longest prefix of t[i:] that ends some value, and the values that start
// at i are that state's and those of its chain of dictionary links,
// longest first. Comparing each value that shares a position's first
// bytes cost a comparison a value a position (attack16 J1: 250 values of
// one letter, 8 µs a byte of text).
//
// Nodes are numbered breadth first, so a node's children are the nodes
// first[u] to first[u+1]-1, ordered by label: 21 bytes a node.

// revAC is that automaton over a fixed set of patterns, with ids.
type revAC struct {
	pats   []string // the patterns, sorted, then by id
	ids    []int32
	next   []int32 // entry+1 of the next entry of the same pattern, or 0
	first  []int32 // node → its first child; len(nodes)+1
	label  []byte  // node → the byte of the edge into it
	fail   []int32 // node → its failure link
	dict   []int32 // node → the nearest node on its failure chain that ends a pattern, or 0
	nl     []int32 // node → the nearest node on its chain of outputs (itself first) that ends a pattern with a byte not a letter, or 0
	term   []int32 // node → entry+1 of the first pattern it ends, or 0
	root   [256]int32
	maxLen int
}

// newRevAC builds the automaton over pats (with ids, one each): the trie
// of the reversed patterns from their sorted order (numbered depth first,
// children by label), renumbered breadth first by a stable sort on depth.
func newRevAC(pats []string, ids []int32) *revAC {
	ac := &revAC{}
	rev := make([]string, len(pats))
	order := make([]int, len(pats))
	var buf []byte
	total := 0 // the most nodes the trie can have, less the root
	for i, p := range pats {
		total += len(p)
		buf = buf[:0]
		for j := len(p) - 1; j >= 0; j-- {
			buf = append(buf, p[j])
		}
		rev[i] = string(buf)
		order[i] = i
		ac.maxLen = max(ac.maxLen, len(p))
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := strings.Compare(rev[a], rev[b]); c != 0 {
			return c
		}
		return int(ids[a]) - int(ids[b])
	})
	ac.pats = make([]string, len(pats))
	ac.ids = make([]int32, len(pats))
	ac.next = make([]int32, len(pats))
	for k, o := range order {
		ac.pats[k], ac.ids[k] = pats[o], ids[o]
	}
	// The trie, depth first: each node's parent, label and depth.
	// Sized once at the most they can hold (what acCost counts), not
	// grown by doubling.
	total = min(total+1, int(^uint32(0)>>1))
	dParent, dLabel, dDepth, dTerm := make([]int32, 1, total), make([]byte, 1, total), make([]int32, 1, total), make([]int32, 1, total)
	dParent[0] = -1
	path := []int32{0} // the nodes of the previous pattern, by depth
	prev := ""
	for k, o := range order {
		r := rev[o]
		if k > 0 && r == prev {
			ac.next[k-1] = int32(k + 1)
			continue
		}
		l := 0
		for l < len(r) && l < len(prev) && r[l] == prev[l] {
			l++
		}
		path = path[:l+1]
		for j := l; j < len(r); j++ {
			u := int32(len(dParent))
			dParent = append(dParent, path[j])
			dLabel = append(dLabel, r[j])
			dDepth = append(dDepth, int32(j+1))
			dTerm = append(dTerm, 0)
			path = append(path, u)
		}
		dTerm[path[len(r)]] = int32(k + 1)
		prev = r
	}
	rev = nil
	nodes := int32(len(dParent))
	// Breadth first: by depth, depth first order kept within a depth
	// (which is the order of the paths, as breadth first is).
	count := make([]int32, ac.maxLen+2)
	for _, d := range dDepth {
		count[d+1]++
	}
	for d := 1; d < len(count); d++ {
		count[d] += count[d-1]
	}
	newID := make([]int32, nodes)
	for u, d := range dDepth {
		newID[u] = count[d]
		count[d]++
	}
	ac.first = make([]int32, nodes+1)
	ac.label = make([]byte, nodes)
	ac.fail = make([]int32, nodes)
	ac.dict = make([]int32, nodes)
	ac.nl = make([]int32, nodes)
	ac.term = make([]int32, nodes)
	parent := make([]int32, nodes)
	for u := range nodes {
		v := newID[u]
		ac.label[v] = dLabel[u]
		ac.term[v] = dTerm[u]
		if u > 0 {
			parent[v] = newID[dParent[u]]
		}
	}
	dParent, dLabel, dDepth, dTerm, newID = nil, nil, nil, nil, nil
	for u := range ac.first {
		ac.first[u] = -1
	}
	for v := nodes - 1; v >= 1; v-- {
		ac.first[parent[v]] = v
	}
	ac.first[nodes] = nodes
	for u := nodes - 1; u >= 0; u-- {
		if ac.first[u] < 0 {
			ac.first[u] = ac.first[u+1]
		}
	}
	for c := ac.first[0]; c < ac.first[1]; c++ {
		ac.root[ac.label[c]] = c
	}
	// Failure and dictionary links, parents before children.
	for v := int32(1); v < nodes; v++ {
		p := parent[v]
		if p != 0 {
			ac.fail[v] = ac.step(ac.fail[p], ac.label[v])
		}
		f := ac.fail[v]
		if ac.term[f] != 0 {
			ac.dict[v] = f
		} else {
			ac.dict[v] = ac.dict[f]
		}
		if ac.term[v] != 0 && !lettersOnly(ac.pats[ac.term[v]-1]) {
			ac.nl[v] = v
		} else {
			ac.nl[v] = ac.nl[ac.dict[v]]
		}
	}
	return ac
}

// lettersOnly reports whether a pattern has no ASCII byte but letters:
// such a value counts only as whole words (see wordBounded).
func lettersOnly(p string) bool {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x80 && !isAlpha(c) {
			return false
		}
	}
	return true
}

// child returns u's child by c, or 0.
func (ac *revAC) child(u int32, c byte) int32 {
	if u == 0 {
		return ac.root[c]
	}
	lo, hi := ac.first[u], ac.first[u+1]
	for lo < hi {
		m := int32(uint32(lo+hi) >> 1)
		switch l := ac.label[m]; {
		case l == c:
			return m
		case l < c:
			lo = m + 1
		default:
			hi = m
		}
	}
	return 0
}

// step returns the state after reading c (going backwards) in state u.
func (ac *revAC) step(u int32, c byte) int32 {
	for {
		if v := ac.child(u, c); v != 0 {
			return v
		}
		if u == 0 {
			return 0
		}
		u = ac.fail[u]
	}
}

// out returns the first node of u's chain of outputs (u itself if it
// ends a pattern), or 0.
func (ac *revAC) out(u int32) int32 {
	if ac.term[u] != 0 {
		return u
	}
	return ac.dict[u]
}

// depth is the length of the pattern a node of outputs ends.
func (ac *revAC) depth(u int32) int { return len(ac.pats[ac.term[u]-1]) }

// acStates sets st[j] to the state of the automaton at t[pos[j]:] (pos
// increasing, within t[:end]), reading t[:end] backwards from where each
// position needs: a state depends on the next maxLen bytes only, so the
// walk starts over past a gap longer than that. Each byte of t[:end] is
// read at most once, plus maxLen for each gap.
func acStates[T string | []byte](ac *revAC, t T, end int, pos []int32, st []int32) []int32 {
	st = slices.Grow(st[:0], len(pos))[:len(pos)]
	cur, u := -1, int32(0)
	for j := len(pos) - 1; j >= 0; j-- {
		i := int(pos[j])
		if cur < 0 || cur-i > ac.maxLen {
			cur, u = min(end, i+ac.maxLen), 0
		}
		for cur > i {
			cur--
			u = ac.step(u, t[cur])
		}
		st[j] = u
	}
	return st
}
