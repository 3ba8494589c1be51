package memory

import (
	"math"
	"slices"
	"strings"
	"time"
)

// Recall modes.
const (
	ModeHybrid  = "hybrid"
	ModeVector  = "vector"
	ModeKeyword = "keyword"
)

// rrfK is the constant of reciprocal rank fusion (Cormack et al. 2009):
// a result at rank r in a list contributes 1/(rrfK + r).
const rrfK = 60

// RecallInput is a search of the caller's memories.
type RecallInput struct {
	Query string `json:"query"`
	// Layer is a shorthand for Filter.Layers with one layer.
	Layer Layer `json:"layer,omitempty"`
	Filter
	Limit int `json:"limit,omitempty"` // default 10, at most 100
	// Mode is hybrid (default), vector or keyword.
	Mode string `json:"mode,omitempty"`
	// RecencyWeight in [0, 1] blends in how recent a memory is:
	// score = (1-w)·relevance + w·0.5^(age/half-life).
	RecencyWeight float64 `json:"recency_weight,omitempty"`
	// HalfLifeDays is the age at which recency counts half (default 30).
	HalfLifeDays float64 `json:"half_life_days,omitempty"`
	// Exact forces an exact search even on a large store: every vector is
	// scanned and every query word ranks (see RecallResult.CommonWords).
	Exact bool `json:"exact,omitempty"`
	// Expand asks the caller's model for terms related to the query
	// (memory.recall's tool does, through an Expander, and passes them in
	// Terms); backends ignore it.
	Expand bool `json:"expand,omitempty"`
	// Terms are words related to the query that its caller's model
	// proposed; NormalizeRecall adds them to Query.
	Terms []string `json:"-"`
	// Related are the words a hybrid recall looks for beside the query's
	// own, in a list of their own, set by NormalizeRecall: the query's
	// related words in general English (Related).
	Related []RelatedTerm `json:"-"`
}

// Hit is one recalled memory with its scores.
type Hit struct {
	Memory
	// Score orders the results, higher is better. In hybrid mode it is the
	// reciprocal-rank-fusion score scaled to [0, 1] (1: first in both
	// lists); in vector mode the cosine similarity; in keyword mode the
	// BM25 score. Recency, if weighted, is blended in.
	Score float64 `json:"score"`
	// VectorScore is the cosine similarity to the query and VectorRank its
	// rank (1-based) in the vector list, when the memory was in it.
	VectorScore *float64 `json:"vector_score,omitempty"`
	VectorRank  int      `json:"vector_rank,omitempty"`
	// KeywordScore is the BM25 score (higher is better) and KeywordRank
	// its rank in the keyword list, when the memory was in it.
	KeywordScore *float64 `json:"keyword_score,omitempty"`
	KeywordRank  int      `json:"keyword_rank,omitempty"`
	// RelatedRank is its rank in the list of memories that hold words
	// related to the query's (RecallInput.Related), when it was in it.
	RelatedRank int `json:"related_rank,omitempty"`
	// Recency is 0.5^(age/half-life), when recency is weighted.
	Recency *float64 `json:"recency,omitempty"`
}

// RecallResult is the answer of Recall.
type RecallResult struct {
	Results []Hit  `json:"results"`
	Mode    string `json:"mode"`
	// Exact is false when the vector list came from the binary-code pass
	// (large stores) rather than an exact scan.
	Exact bool `json:"exact"`
	// CommonWords are query words left out of the keyword ranking because
	// they occur in so many memories that they hardly tell them apart
	// (large stores only; the vector ranking still uses them). Exact keeps
	// them.
	CommonWords []string `json:"common_words,omitempty"`
	// Expansion is set when the recall asked for expand: the terms the
	// caller's model proposed, or why it could not be asked.
	Expansion *Expansion `json:"expansion,omitempty"`
}

// Expansion is what memory.recall's expand did.
type Expansion struct {
	// Terms are the terms the model proposed, as looked for.
	Terms []string `json:"terms"`
	// Error says why the model could not be asked or answered nothing
	// usable; the recall went on without its terms.
	Error string `json:"error,omitempty"`
}

// Scored is a memory id with the score one retriever gave it.
type Scored struct {
	ID    int64
	Score float64
}

func cmpID(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// NormalizeRecall checks a recall against lim and sets its defaults, as
// Recall does.
func NormalizeRecall(in *RecallInput, lim Limits) error {
	in.Query = strings.TrimSpace(in.Query)
	if in.Query == "" {
		return Invalid("query is empty; describe what to recall")
	}
	if err := validateText("query", in.Query, lim.Defaults().MaxContentBytes, true); err != nil {
		return err
	}
	if in.Layer != "" {
		in.Layers = append(in.Layers, in.Layer)
	}
	if err := in.Filter.Normalize(); err != nil {
		return err
	}
	if in.Limit == 0 {
		in.Limit = 10
	}
	if in.Limit < 1 || in.Limit > 100 {
		return Invalid("limit is %d; it must be between 1 and 100", in.Limit)
	}
	switch in.Mode {
	case "":
		in.Mode = ModeHybrid
	case ModeHybrid, ModeVector, ModeKeyword:
	default:
		return Invalid("mode %q: use hybrid, vector or keyword", Clip(in.Mode, 20))
	}
	if in.RecencyWeight < 0 || in.RecencyWeight > 1 || math.IsNaN(in.RecencyWeight) {
		return Invalid("recency_weight is %v; it must be between 0 and 1", in.RecencyWeight)
	}
	if in.HalfLifeDays == 0 {
		in.HalfLifeDays = 30
	}
	if in.HalfLifeDays <= 0 || math.IsNaN(in.HalfLifeDays) || in.HalfLifeDays > 36500 {
		return Invalid("half_life_days is %v; it must be more than 0 and at most 36500", in.HalfLifeDays)
	}
	expandQuery(in)
	return nil
}

// Fuse merges a vector list and a keyword list, each best first, into
// hits as Recall does: in hybrid mode by reciprocal rank fusion (each list
// contributes 1/(rrfK+rank), scaled so that first place in both lists
// scores 1), else by the list's own score.
// The hits are in no particular order; see SortHits.
func Fuse(mode string, vec, kw []Scored) []Hit {
	return FuseRelated(mode, vec, kw, nil)
}

// FuseRelated is Fuse with the list of memories that hold words related
// to the query's (RecallInput.Related), best first, which counts in
// hybrid mode at RelatedWeight; first place in all three lists scores 1.
func FuseRelated(mode string, vec, kw, related []Scored) []Hit {
	byID := map[int64]*Hit{}
	var order []int64
	get := func(id int64) *Hit {
		h, ok := byID[id]
		if !ok {
			h = &Hit{Memory: Memory{ID: id}}
			byID[id] = h
			order = append(order, id)
		}
		return h
	}
	lists := 0
	if mode == ModeHybrid || mode == ModeVector {
		lists++
	}
	if mode == ModeHybrid || mode == ModeKeyword {
		lists++
	}
	for i, c := range vec {
		h := get(c.ID)
		v := c.Score
		h.VectorScore, h.VectorRank = &v, i+1
		switch mode {
		case ModeHybrid:
			h.Score += 1 / float64(rrfK+i+1)
		case ModeVector:
			h.Score = v
		}
	}
	for i, c := range kw {
		h := get(c.ID)
		v := c.Score
		h.KeywordScore, h.KeywordRank = &v, i+1
		switch mode {
		case ModeHybrid:
			h.Score += 1 / float64(rrfK+i+1)
		case ModeKeyword:
			h.Score = v
		}
	}
	weight := float64(lists)
	if mode == ModeHybrid && len(related) > 0 {
		weight += RelatedWeight
		for i, c := range related {
			h := get(c.ID)
			h.RelatedRank = i + 1
			h.Score += RelatedWeight / float64(rrfK+i+1)
		}
	}
	out := make([]Hit, 0, len(order))
	for _, id := range order {
		h := byID[id]
		if mode == ModeHybrid {
			h.Score = h.Score * float64(rrfK+1) / weight
		}
		out = append(out, *h)
	}
	return out
}

// recencyOf is 0.5^(age/half-life) of a memory of time t.
func recencyOf(now, t time.Time, halfLifeDays float64) float64 {
	halfLife := halfLifeDays * 24 * float64(time.Hour.Milliseconds())
	age := math.Max(0, float64(now.UnixMilli()-t.UnixMilli()))
	return math.Pow(0.5, age/halfLife)
}

// SortHits orders hits best first, ties by id.
func SortHits(hits []Hit) {
	slices.SortFunc(hits, func(a, b Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return cmpID(a.ID, b.ID)
	})
}

// KeywordCommonDocs bounds the work of the keyword ranking on a large
// store (the default of both backends). FTS5 computes BM25 for every
// memory that contains a query word, at about half a microsecond each, so
// a word found in most memories (in 100k synthetic memories, "deploy" is
// in 60k) costs tens of milliseconds while it weighs little: a word's IDF,
// ln((N-n+0.5)/(n+0.5)), falls as the number n of memories holding it
// grows, and FTS5 sets it to almost zero once n > N/2. So a query word
// found in more than KeywordCommonDocs of the caller's memories is left
// out of the keyword ranking and reported in RecallResult.CommonWords,
// unless every word of the query is that common or the search is exact;
// the vector ranking still sees it. The scores of the other words do not
// change: FTS5 computes each word's IDF over the whole index whatever else
// the query holds. Principals with at most KeywordCommonDocs memories are
// always ranked on every word.
const KeywordCommonDocs = 2000

// QueryWords returns the words of a free-text query that keyword recall
// ranks by: tokenized as the hashing embedder does, stop words dropped,
// each once, at most 64.
func QueryWords(text string) []string {
	seen := map[string]bool{}
	var words []string
	for _, w := range tokenize(text) {
		if stopwords[w] || seen[w] {
			continue
		}
		seen[w] = true
		words = append(words, w)
		if len(words) == 64 {
			break
		}
	}
	return words
}

// Recency blends recency into hits as Recall does: score =
// (1-w)·score + w·0.5^(age/half-life), where created gives each hit's
// creation time.
func Recency(hits []Hit, created map[int64]time.Time, now time.Time, w, halfLifeDays float64) {
	for i := range hits {
		t, ok := created[hits[i].ID]
		if !ok {
			continue
		}
		r := recencyOf(now, t, halfLifeDays)
		hits[i].Recency = &r
		hits[i].Score = (1-w)*hits[i].Score + w*r
	}
}
