package memory

import (
	"context"
	"slices"
	"strings"

	"github.com/codecell/codecell/tools/lexicon"
)

// Recall finds memories worded otherwise than the question by looking,
// beside the query's own words, for words related to them: in general
// English (tools/lexicon's lexicon, from WordNet: "holiday" finds
// "vacation", "paid" finds "salary"), and, when the caller asks for it
// (RecallInput.Expand), terms its model proposes. Related words rank
// memories in a list of their own, fused with the vector and keyword
// lists at a lower weight (FuseLists), so a memory that has the query's
// own words still comes first.

// RelatedTerm is a word a recall looks for beside the query's own, with
// how closely it is related (0 to 1).
type RelatedTerm struct {
	Word   string  `json:"word"`
	Weight float64 `json:"weight"`
}

// Limits of the related words of a query.
const (
	// relatedPerWord is the most related words kept for each query word.
	relatedPerWord = 6
	// relatedMinWeight is the least weight of a related word kept.
	relatedMinWeight = 0.45
	// maxRelated is the most related words of a query.
	maxRelated = 48
	// MaxModelTerms is the most terms taken from the model.
	MaxModelTerms = 24
)

// RelatedWeight is the weight of the related words' list in hybrid
// fusion, beside 1 for the vector and the keyword lists.
const RelatedWeight = 1.0

// Related returns the words related to the content words of a query in
// general English, closest first, each once, without the query's own
// words.
func Related(query string) []RelatedTerm {
	own := map[string]bool{}
	words := QueryWords(query)
	for _, w := range words {
		own[w] = true
		own[stem(w)] = true
	}
	weight := map[string]float64{}
	var order []string
	for _, w := range words {
		n := 0
		for _, r := range lexicon.General(w) {
			if n == relatedPerWord || r.Weight < relatedMinWeight {
				break
			}
			if own[r.Word] || own[stem(r.Word)] || stopwords[r.Word] {
				continue
			}
			if _, seen := weight[r.Word]; !seen {
				order = append(order, r.Word)
			}
			weight[r.Word] = max(weight[r.Word], r.Weight)
			n++
		}
	}
	out := make([]RelatedTerm, len(order))
	for i, w := range order {
		out[i] = RelatedTerm{Word: w, Weight: weight[w]}
	}
	slices.SortStableFunc(out, func(a, b RelatedTerm) int {
		switch {
		case a.Weight > b.Weight:
			return -1
		case a.Weight < b.Weight:
			return 1
		}
		return 0
	})
	if len(out) > maxRelated {
		out = out[:maxRelated]
	}
	return out
}

// expandQuery sets in.Related to the query's related words in general
// English (Related), for a hybrid recall, and adds the terms the
// caller's model proposed (in.Terms) to the query itself: they are
// chosen for this question, so they rank as its own words do, in the
// vector and the keyword lists.
func expandQuery(in *RecallInput) {
	in.Related = nil
	if in.Mode == ModeHybrid {
		in.Related = Related(in.Query)
	}
	if len(in.Terms) == 0 {
		return
	}
	seen := map[string]bool{}
	for _, w := range QueryWords(in.Query) {
		seen[stem(w)] = true
	}
	var add []string
	for _, t := range in.Terms {
		var ws []string
		for _, w := range QueryWords(t) {
			if !seen[stem(w)] {
				seen[stem(w)] = true
				ws = append(ws, w)
			}
		}
		if len(ws) > 0 && len(add) < MaxModelTerms {
			add = append(add, strings.Join(ws, " "))
		}
	}
	if len(add) > 0 {
		in.Query += "\n" + strings.Join(add, ", ")
	}
	// A related word the model named counts as the model's.
	in.Related = slices.DeleteFunc(in.Related, func(r RelatedTerm) bool { return seen[stem(r.Word)] })
}

// RelatedText is the text a backend's keyword search looks for in the
// related words' list: the related words, space-separated; "" when
// there are none.
func (in RecallInput) RelatedText() string {
	ws := make([]string, len(in.Related))
	for i, r := range in.Related {
		ws[i] = r.Word
	}
	return strings.Join(ws, " ")
}

// Expander proposes terms related to a recall's query: the caller's
// model, asked through the programs' llm runtime (memory.recall's
// expand). Its calls count against the caller's llm budgets.
type Expander interface {
	ExpandQuery(ctx context.Context, query string) ([]string, error)
}
