package search

import (
	"math"
	"slices"
	"sync"
)

// Co-occurrence within an API: words that the operations of the same
// category use together (NPMI over its operations' words) stand in for
// each other at a low weight, first-order (t and u in the same
// operations) or second-order (t and u each with the same words). Off
// while coocWeight is 0.
var (
	coocWeight = 0.0
	// coocTerms is how many associated words each query word brings.
	coocTerms = 5
	// coocMin is the least NPMI of an association kept.
	coocMin = 0.3
	// coocMinCo is the least number of operations two words must share.
	coocMinCo = 2
	// coocSecond uses second-order associations instead of first-order.
	coocSecond = false
	// coocNeighbours is how many first-order neighbours make a word's
	// profile for second-order associations.
	coocNeighbours = 30
	// coocMaxShare skips a query word that more than this share of a
	// category's operations hold: it says nothing of which.
	coocMaxShare = 0.3
)

// assoc is one association: a word by its vocab id, and its strength.
type assoc struct {
	id int32
	w  float64
}

// coocCache holds first-order neighbours by category and term.
type coocCache struct {
	mu sync.Mutex
	m  map[[2]int32][]assoc
}

// catDF returns in how many of cat's documents term occurs.
func (c *index) catDF(term string, cat int32) int {
	n := 0
	for _, p := range c.postings[term] {
		if c.docs[p.doc].cat == cat {
			n++
		}
	}
	return n
}

// neighbours returns the first-order associations of term id t in cat,
// best first, at most max(coocTerms, coocNeighbours).
func (c *index) neighbours(t int32, cat int32) []assoc {
	key := [2]int32{t, cat}
	c.cooc.mu.Lock()
	if a, ok := c.cooc.m[key]; ok {
		c.cooc.mu.Unlock()
		return a
	}
	c.cooc.mu.Unlock()
	term := c.vocab[t]
	nc := c.catSize[cat]
	co := map[int32]int{}
	dfT := 0
	for _, p := range c.postings[term] {
		if c.docs[p.doc].cat != cat {
			continue
		}
		dfT++
		for _, ft := range c.fwd[p.doc] {
			if ft.id != t {
				co[ft.id]++
			}
		}
	}
	var out []assoc
	for u, k := range co {
		if k < coocMinCo {
			continue
		}
		dfU := c.catDF(c.vocab[u], cat)
		pj := float64(k) / nc
		npmi := math.Log(pj/(float64(dfT)/nc*float64(dfU)/nc)) / -math.Log(pj)
		if pj == 1 {
			npmi = 1
		}
		if npmi >= coocMin {
			out = append(out, assoc{u, npmi})
		}
	}
	sortAssoc(out, c.vocab)
	if n := max(coocTerms, coocNeighbours); len(out) > n {
		out = out[:n]
	}
	c.cooc.mu.Lock()
	if c.cooc.m == nil {
		c.cooc.m = map[[2]int32][]assoc{}
	}
	c.cooc.m[key] = out
	c.cooc.mu.Unlock()
	return out
}

func sortAssoc(a []assoc, vocab []string) {
	slices.SortFunc(a, func(x, y assoc) int {
		switch {
		case x.w > y.w:
			return -1
		case x.w < y.w:
			return 1
		}
		if vocab[x.id] < vocab[y.id] {
			return -1
		}
		return 1
	})
}

// associated returns the words associated with the query's own words in
// each category that holds them, as extra terms of that category.
func (c *index) associated(qa query) []extraTerm {
	if coocWeight == 0 || c.fwd == nil {
		return nil
	}
	own := map[string]bool{}
	for _, t := range qa.terms {
		own[t] = true
	}
	for t := range qa.lx.Related {
		own[t] = true
	}
	best := map[[2]int32]float64{} // (id, cat) → weight
	for _, t := range distinct(qa.terms) {
		id, ok := c.vocabID[t]
		if !ok {
			continue
		}
		cats := map[int32]int{}
		for _, p := range c.postings[t] {
			cats[c.docs[p.doc].cat]++
		}
		for cat, df := range cats {
			if float64(df) > coocMaxShare*c.catSize[cat] {
				continue
			}
			as := c.neighbours(id, cat)
			if coocSecond {
				as = c.second(id, cat, as)
			}
			n := 0
			for _, a := range as {
				if n == coocTerms {
					break
				}
				if own[c.vocab[a.id]] {
					continue
				}
				n++
				k := [2]int32{a.id, cat}
				best[k] = max(best[k], coocWeight*a.w)
			}
		}
	}
	out := make([]extraTerm, 0, len(best))
	for k, w := range best {
		out = append(out, extraTerm{term: c.vocab[k[0]], w: w, cat: k[1]})
	}
	slices.SortFunc(out, func(a, b extraTerm) int {
		if a.cat != b.cat {
			return int(a.cat - b.cat)
		}
		if a.term < b.term {
			return -1
		}
		return 1
	})
	return out
}

// second returns the second-order associations of t in cat: words whose
// own first-order neighbours are t's (the cosine of the two profiles),
// among the neighbours of t's neighbours.
func (c *index) second(t, cat int32, first []assoc) []assoc {
	if len(first) > coocNeighbours {
		first = first[:coocNeighbours]
	}
	prof := map[int32]float64{}
	var norm float64
	for _, a := range first {
		prof[a.id] = a.w
		norm += a.w * a.w
	}
	if norm == 0 {
		return nil
	}
	cands := map[int32]bool{}
	for _, a := range first {
		for _, b := range c.neighbours(a.id, cat) {
			if b.id != t {
				cands[b.id] = true
			}
		}
	}
	var out []assoc
	for u := range cands {
		var dot, nu float64
		for _, b := range c.neighbours(u, cat) {
			nu += b.w * b.w
			dot += prof[b.id] * b.w
		}
		if dot == 0 {
			continue
		}
		cos := dot / math.Sqrt(norm*nu)
		if cos >= coocMin {
			out = append(out, assoc{u, cos})
		}
	}
	sortAssoc(out, c.vocab)
	return out
}
