package search

import (
	"math"
	"slices"
)

// Pseudo-relevance feedback (RM3): the words most distinctive of the
// first pass's best documents, weighed by how well each document
// scored, join the query for a second pass. Off while prfWeight is 0.
var (
	// prfDocs is how many of the first pass's documents give words.
	prfDocs = 5
	// prfTerms is how many words join the query.
	prfTerms = 10
	// prfWeight is the weight of the best feedback word beside a query
	// word (1); the others in proportion.
	prfWeight = 0.0
	// prfRerank, when above 0, keeps the second pass to the first pass's
	// best prfRerank documents.
	prfRerank = 0
	// prfFind lets a feedback word find a document alone.
	prfFind = false
	// prfSameCat keeps feedback to the documents of the best hit's
	// category.
	prfSameCat = false
	// prfLowOnly gives feedback only when the best hit's confidence is
	// not high.
	prfLowOnly = false
	// prfSoft weighs documents by exp of their score relative to the
	// best (a softmax) rather than in proportion.
	prfSoft = false
	// prfPrecise takes feedback words (and co-occurrences) from a
	// document's name, summary, first sentence and intent only.
	prfPrecise = false
)

// fwdTerm is one term of a document's forward list: its id
// (index.vocab) and its BM25F weight in the document.
type fwdTerm struct {
	id int32
	w  float32
}

// feedback returns the words to add to qa from the documents first
// ranked best, and their weights.
func (c *index) feedback(first []scored, qa query) []extraTerm {
	if len(first) == 0 || c.fwd == nil {
		return nil
	}
	if prfLowOnly && first[0].conf == High {
		return nil
	}
	own := map[string]bool{}
	for _, t := range qa.terms {
		own[t] = true
	}
	for t := range qa.lx.Related {
		own[t] = true
	}
	n := min(prfDocs, len(first))
	top := first[0].score
	rel := map[int32]float64{}
	for i := 0; i < n; i++ {
		s := first[i]
		if prfSameCat && c.docs[s.doc].cat != c.docs[first[0].doc].cat {
			continue
		}
		p := s.score / top
		if prfSoft {
			p = math.Exp(4 * (s.score/top - 1))
		}
		var sum float64
		for _, ft := range c.fwd[s.doc] {
			sum += float64(ft.w)
		}
		if sum == 0 {
			continue
		}
		for _, ft := range c.fwd[s.doc] {
			rel[ft.id] += p * float64(ft.w) / sum
		}
	}
	type tw struct {
		t string
		w float64
	}
	var cands []tw
	for id, w := range rel {
		t := c.vocab[id]
		if own[t] {
			continue
		}
		cands = append(cands, tw{t, w})
	}
	slices.SortFunc(cands, func(a, b tw) int {
		switch {
		case a.w > b.w:
			return -1
		case a.w < b.w:
			return 1
		}
		if a.t < b.t {
			return -1
		}
		return 1
	})
	if len(cands) > prfTerms {
		cands = cands[:prfTerms]
	}
	if len(cands) == 0 {
		return nil
	}
	out := make([]extraTerm, 0, len(cands))
	for _, c := range cands {
		out = append(out, extraTerm{term: c.t, w: prfWeight * c.w / cands[0].w, cat: -1})
	}
	return out
}

// extraTerm is a term ranking weighs beside the query's own: w is its
// weight, and cat, when not -1, the one category whose documents it
// counts in.
type extraTerm struct {
	term string
	w    float64
	cat  int32
}

// Feedback on the category: the first pass's best prfCatDocs documents
// vote for their categories by score, and each hit is raised by up to
// prfCatBoost by its category's share of the vote (source selection by
// the top documents, as federated search does). Off while 0.
var (
	prfCatBoost = 0.0
	prfCatDocs  = 10
)

// byCategoryVote reorders first by its categories' votes and keeps the
// best limit.
func (c *index) byCategoryVote(first []scored, limit int) []scored {
	if len(first) == 0 {
		return first
	}
	vote := map[int32]float64{}
	best := 0.0
	for i, s := range first {
		if i == prfCatDocs {
			break
		}
		vote[c.docs[s.doc].cat] += s.score
		best = max(best, vote[c.docs[s.doc].cat])
	}
	out := slices.Clone(first)
	for i := range out {
		out[i].score *= 1 + prfCatBoost*vote[c.docs[out[i].doc].cat]/best
	}
	slices.SortStableFunc(out, func(a, b scored) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	return trimScored(out, limit)
}
