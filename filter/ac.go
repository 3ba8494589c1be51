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
// first[u] to first[u+1]-1, ordered by label: 17 bytes a node.

// revAC is that automaton over a fixed set of patterns, with ids.
type revAC struct {
	pats   []string // the patterns, sorted, then by id
	ids    []int32
	next   []int32 // entry+1 of the next entry of the same pattern, or 0
	first  []int32 // node → its first child; len(nodes)+1
	label  []byte  // node → the byte of the edge into it
	fail   []int32 // node → its failure link
	dict   []int32 // node → the nearest node on its failure chain that ends a pattern, or 0
	term   []int32 // node → entry+1 of the first pattern it ends, or 0
	root   [256]int32
	maxLen int
}

// newRevAC builds the automaton over pats (with ids, one each).
func newRevAC(pats []string, ids []int32) *revAC {
	ac := &revAC{}
	order := make([]int, len(pats))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := strings.Compare(pats[a], pats[b]); c != 0 {
			return c
		}
		return int(ids[a]) - int(ids[b])
	})
	ac.pats = make([]string, len(pats))
	ac.ids = make([]int32, len(pats))
	ac.next = make([]int32, len(pats))
	for k, o := range order {
		ac.pats[k], ac.ids[k] = pats[o], ids[o]
		ac.maxLen = max(ac.maxLen, len(pats[o]))
	}
	// A trie of the reversed patterns, its edges kept as (parent, label,
	// child) to be numbered breadth first.
	type edge struct {
		parent, child int32
		label         byte
	}
	kids := map[uint64]int32{}
	var edges []edge
	nodes := int32(1)
	tterm := []int32{0}
	for k, p := range ac.pats {
		if k > 0 && ac.pats[k-1] == p {
			ac.next[k-1] = int32(k + 1)
			continue
		}
		u := int32(0)
		for j := len(p) - 1; j >= 0; j-- {
			key := uint64(u)<<8 | uint64(p[j])
			c, ok := kids[key]
			if !ok {
				c = nodes
				nodes++
				kids[key] = c
				edges = append(edges, edge{parent: u, child: c, label: p[j]})
				tterm = append(tterm, 0)
			}
			u = c
		}
		tterm[u] = int32(k + 1)
	}
	kids = nil
	slices.SortFunc(edges, func(a, b edge) int {
		if a.parent != b.parent {
			return int(a.parent - b.parent)
		}
		return int(a.label) - int(b.label)
	})
	// Children of each trie node: edges[off[u]:off[u+1]].
	off := make([]int32, nodes+1)
	for _, e := range edges {
		off[e.parent+1]++
	}
	for u := int32(1); u <= nodes; u++ {
		off[u] += off[u-1]
	}
	// Breadth-first numbering.
	ac.first = make([]int32, nodes+1)
	ac.label = make([]byte, nodes)
	ac.fail = make([]int32, nodes)
	ac.dict = make([]int32, nodes)
	ac.term = make([]int32, nodes)
	parent := make([]int32, nodes)
	queue := make([]int32, 1, nodes) // trie nodes by their new number
	queue[0] = 0
	nextID := int32(1)
	for nu := int32(0); nu < int32(len(queue)); nu++ {
		u := queue[nu]
		ac.first[nu] = nextID
		ac.term[nu] = tterm[u]
		for _, e := range edges[off[u]:off[u+1]] {
			ac.label[nextID] = e.label
			parent[nextID] = nu
			queue = append(queue, e.child)
			nextID++
		}
	}
	ac.first[nodes] = nodes
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
	}
	return ac
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

// bytes estimates the automaton's memory.
func (ac *revAC) bytes() int { return 17*len(ac.label) + 24*len(ac.pats) + 1024 }

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
