package search

// scratch is what one ranking works in, one slot per document, kept in
// Index.pool between searches so that a search allocates none of it.
type scratch struct {
	acc              []float64 // score accumulators
	matched, related []uint8   // query words matched, related words matched
	found, head      []bool
	touched          []int32
	best             []candidate
}

// scratchFor returns a cleared scratch for n documents; put it back in
// ix.pool when done.
func (ix *Index) scratchFor(n int) *scratch {
	sc, _ := ix.pool.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	if cap(sc.acc) < n {
		sc.acc = make([]float64, n)
		sc.matched = make([]uint8, n)
		sc.related = make([]uint8, n)
		sc.found = make([]bool, n)
		sc.head = make([]bool, n)
	}
	sc.acc, sc.matched, sc.related = sc.acc[:n], sc.matched[:n], sc.related[:n]
	sc.found, sc.head = sc.found[:n], sc.head[:n]
	clear(sc.acc)
	clear(sc.matched)
	clear(sc.related)
	clear(sc.found)
	clear(sc.head)
	sc.touched, sc.best = sc.touched[:0], sc.best[:0]
	return sc
}

// candidate is a document with its score by the query's words alone.
type candidate struct {
	doc   int32
	score float64
}

// worse reports whether a ranks after b: a lower score, or the same
// score and a later document.
func worse(a, b candidate) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.doc > b.doc
}

// pushBest adds c to h, a heap of at most k candidates whose root is
// the worst of them, dropping the worst when h is full: what stays is
// the best k of all those pushed.
func pushBest(h []candidate, c candidate, k int) []candidate {
	return pushTop(h, c, k, worse)
}

// pushTop adds x to h, a heap of at most k values whose root is the
// worst of them (worse(a, b): a ranks after b), dropping the worst when
// h is full: what stays is the best k of all those pushed. k > 0.
func pushTop[T any](h []T, x T, k int, worse func(a, b T) bool) []T {
	if len(h) < k {
		h = append(h, x)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !worse(h[i], h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		return h
	}
	if !worse(h[0], x) {
		return h
	}
	h[0] = x
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && worse(h[l], h[m]) {
			m = l
		}
		if r < len(h) && worse(h[r], h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	return h
}
