package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/codecell/codecell/tools"
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
		for _, r := range neighbours(w) {
			if own[r.Word] || own[stem(r.Word)] || stopwords[r.Word] {
				continue
			}
			if _, seen := weight[r.Word]; !seen {
				order = append(order, r.Word)
			}
			weight[r.Word] = max(weight[r.Word], r.Weight)
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

// expandPrompt asks the model for terms related to a recall's query.
const expandPrompt = `A person keeps short notes and now asks the question below. List words and short phrases that a note answering it may use but the question does not: synonyms, related terms, the specific things it may name. Answer with a JSON array of at most 12 strings and nothing else.

Question: `

// recall is memory.recall's handler: Recall, after asking the caller's
// model for related terms when in.Expand is set. A model that cannot be
// asked (no llm runtime, a client without sampling, a spent budget) or
// answers nothing usable leaves the recall to the query alone, and the
// result says why; a cancelled run ends the recall.
func (ts ToolSet) recall(ctx context.Context, in RecallInput) (RecallResult, error) {
	in.Terms = nil
	var exp *Expansion
	if in.Expand && strings.TrimSpace(in.Query) != "" {
		exp = &Expansion{Terms: []string{}}
		terms, err := ts.expandTerms(ctx, in.Query)
		switch {
		case ctx.Err() != nil:
			return RecallResult{}, context.Cause(ctx)
		case err != nil:
			exp.Error = err.Error()
		case len(terms) == 0:
			exp.Error = "the model proposed no terms"
		default:
			exp.Terms = terms
			in.Terms = terms
		}
	}
	out, err := ts.Memories.Recall(ctx, in)
	if err != nil {
		return out, err
	}
	out.Expansion = exp
	return out, nil
}

// expandTerms asks the caller's model, through the llm.call tool, for
// terms related to query.
func (ts ToolSet) expandTerms(ctx context.Context, query string) ([]string, error) {
	if ts.Models == nil {
		return nil, errors.New("no model to ask: this server has no llm runtime")
	}
	args, err := json.Marshal(map[string]any{"prompt": expandPrompt + Clip(query, 2000), "maxTokens": 300, "temperature": 0})
	if err != nil {
		return nil, err
	}
	raw, err := ts.Models.Call(ctx, "llm.call", args)
	if err != nil {
		var te *tools.Error
		if errors.As(err, &te) {
			if te.Code == tools.CodeUnknownTool {
				return nil, errors.New("no model to ask: llm.call is not available to this caller")
			}
			return nil, fmt.Errorf("%s: %s", te.Code, te.Message)
		}
		return nil, fmt.Errorf("asking the model: %w", err)
	}
	var ans struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("asking the model: %w", err)
	}
	return ParseTerms(ans.Text), nil
}

// ParseTerms reads the terms of a model's answer: a JSON array of
// strings (also inside prose or a code fence), else one term per line
// or comma. At most MaxModelTerms, each at most 64 bytes, each once.
func ParseTerms(text string) []string {
	var raw []string
	if i, j := strings.IndexByte(text, '['), strings.LastIndexByte(text, ']'); i >= 0 && j > i {
		var arr []any
		if json.Unmarshal([]byte(text[i:j+1]), &arr) == nil {
			for _, v := range arr {
				if s, ok := v.(string); ok {
					raw = append(raw, s)
				}
			}
		}
	}
	if raw == nil {
		raw = strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == ',' || r == ';' })
	}
	seen := map[string]bool{}
	var out []string
	for _, t := range raw {
		t = strings.TrimSpace(t)
		// A list's marks: "- ", "* ", "1. ", "2) ", quotes.
		if i := strings.IndexAny(t, ".)"); i > 0 && i <= 3 && strings.Trim(t[:i], "0123456789") == "" {
			t = t[i+1:]
		}
		t = strings.TrimSpace(strings.Trim(strings.TrimSpace(t), "-*•\"'`"))
		if t == "" || len(t) > 64 || seen[strings.ToLower(t)] {
			continue
		}
		seen[strings.ToLower(t)] = true
		out = append(out, t)
		if len(out) == MaxModelTerms {
			break
		}
	}
	return out
}
