// Package search ranks the tools of a registry against a natural-language
// or identifier query, for the search_tools MCP tool.
//
// Ranking is BM25F over weighted fields: the tool's name, its category,
// summary, input parameter names, output property names, and its
// description with parameter descriptions. A tool's group (Tool.Group)
// counts with its category; a deprecated tool ranks lower. Two signals
// favour the tools that say just what was asked among many that mention
// the same words, as large APIs have: a summary close to the query, and
// a short name the query covers. Text is split into words at
// identifier boundaries (getUser, get_user and "get user" match alike),
// lower-cased, stripped of stop words and lightly stemmed; query words also
// match common synonyms (list/get/fetch/find/search, create/add,
// delete/remove, ...) at a lower weight. Names also index their plural
// words as written and their pairs of words, so "which pull requests"
// prefers list_pull_requests to a tool whose text mentions pull and
// request apart. Two signals come from the tools' own metadata: a
// question ("which …", "who …", "how many …") asks to read, so tools that
// are not read-only rank lower for it, and an action ranks tools whose
// verb has the opposite sense lower ("give access" is not
// revoke_permission, "stop sharing" not share_file) and read-only ones
// too. A hit carries what reading deeper
// would cost — the size and estimated tokens of the tool's signature and
// full page, rendered by a Docs (package vfs provides it; search does not
// import it, keeping tools/ below vfs) — and the shape of the tool's
// output, and its text at the requested detail level.
//
// A caller searches the tools of its own view of the registry
// (tools.View): the global tools, its own, within its toolset. Each view's
// index is built on first use and kept with the view.
//
// Package search does not render tool documentation (package vfs) or speak
// MCP (package mcpserver).
package search

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/codecell/codecell/tools"
)

// Detail is how much of each hit to return.
type Detail string

// Detail levels, from least to most.
const (
	DetailName      Detail = "name"      // name, output shape and costs
	DetailSummary   Detail = "summary"   // + one-line summary and read-only/destructive hints
	DetailSignature Detail = "signature" // + the TypeScript declaration (level 2)
	DetailFull      Detail = "full"      // + the full Markdown page (level 3) instead of the declaration
)

// Limits on results.
const (
	DefaultLimit = 5
	MaxLimit     = 50
)

// ErrInvalidQuery is wrapped by every error Search returns for a query the
// caller can fix.
var ErrInvalidQuery = errors.New("invalid search query")

// Query is one search.
type Query struct {
	// Text is what to look for: words, a tool name or an identifier.
	Text string
	// Category, when set, keeps hits to that category.
	Category string
	// Limit is the most hits to return: DefaultLimit when 0, at most MaxLimit.
	Limit int
	// Detail is the level of each hit; DetailSummary when empty.
	Detail Detail
	// Caller is who searches: only the tools in its view are ranked.
	Caller tools.Caller
}

// Hit is one ranked tool.
type Hit struct {
	Name  string  `json:"name"`
	Score float64 `json:"score"`
	// Summary and the hints are set from DetailSummary up.
	Summary     string `json:"summary,omitempty"`
	ReadOnly    bool   `json:"readOnly,omitempty"`
	Destructive bool   `json:"destructive,omitempty"`
	// Signature is the .d.ts at DetailSignature; Full the .md at DetailFull.
	Signature string `json:"signature,omitempty"`
	Full      string `json:"full,omitempty"`
	// Output is the one-line shape of the tool's result.
	Output string `json:"output"`
	// Cost is what reading the tool's deeper levels would take.
	Cost Costs `json:"cost"`
}

// Costs are the sizes of a tool's signature and full page, and where to
// read them.
type Costs struct {
	Signature     tools.Cost `json:"signature"`
	SignaturePath string     `json:"signature_path"`
	Full          tools.Cost `json:"full"`
	FullPath      string     `json:"full_path"`
}

// Docs renders what a hit shows beyond the tool's own fields, as one
// caller reads it: the tree path and content of a tool's declaration
// (level 2) and of its full page (level 3), and the one-line shape of its
// result; names are qualified. A *vfs.FS is one (vfs.FS.For gives a
// caller's).
type Docs interface {
	Signature(name string) (path string, content []byte, ok bool)
	Full(name string) (path string, content []byte, ok bool)
	Output(name string) (string, bool)
}

// PageDocs is a Docs that documents more than the registry's tools:
// pages a caller must find as readily as a tool, such as the built-in
// pages of the programs' runtime (a *vfs.FS has runtime/plan.md on dry
// runs). Search ranks them with the caller's tools. Each page is given as
// a tools.Tool that is not registered: its Name, which Signature and Full
// know it by, its Summary, and what else to index as its Description;
// a name without a dot is its own category and short name.
type PageDocs interface {
	Docs
	Pages() []*tools.Tool
}

// Index searches a registry, each caller within its own view of it
// (tools.View). It is safe for concurrent use.
type Index struct {
	reg  *tools.Registry
	docs func(tools.Caller) Docs
	pool sync.Pool // *[]float64 score accumulators
}

// New returns an index over reg whose hits take their signatures, pages,
// costs and output shapes from docs(caller), which must render the same
// registry as the caller sees it. A caller's index is built on its first
// search and kept on its tools.View, so it is rebuilt only when what the
// caller sees changes, and callers who share a view share it.
func New(reg *tools.Registry, docs func(tools.Caller) Docs) *Index {
	return &Index{reg: reg, docs: docs}
}

// current returns the index of c's view, with the pages of its docs
// (PageDocs).
func (ix *Index) current(c tools.Caller) *index {
	v := ix.reg.View(c)
	return v.Memo(ix, func(v *tools.View) any {
		ts := v.List()
		if p, ok := ix.docs(c).(PageDocs); ok {
			ts = append(slices.Clip(ts), p.Pages()...)
		}
		return build(ts, v.Version())
	}).(*index)
}

// Search ranks the tools against q and returns the best hits, best first.
// Ties are broken by name. An empty Text with a Category lists that
// category by name.
func (ix *Index) Search(q Query) ([]Hit, error) {
	detail := q.Detail
	switch detail {
	case "":
		detail = DetailSummary
	case DetailName, DetailSummary, DetailSignature, DetailFull:
	default:
		return nil, fmt.Errorf("%w: detail %q: want name, summary, signature or full", ErrInvalidQuery, q.Detail)
	}
	limit := q.Limit
	switch {
	case limit < 0:
		return nil, fmt.Errorf("%w: limit %d is negative", ErrInvalidQuery, limit)
	case limit == 0:
		limit = DefaultLimit
	case limit > MaxLimit:
		limit = MaxLimit
	}
	text := strings.TrimSpace(q.Text)
	if text == "" && q.Category == "" {
		return nil, fmt.Errorf("%w: give words to search for, or a category to list", ErrInvalidQuery)
	}
	c := ix.current(q.Caller)
	docs := ix.docs(q.Caller)
	var cat int32 = -1
	if q.Category != "" {
		i, ok := c.catID[q.Category]
		if !ok {
			return nil, fmt.Errorf("%w: no category %q", ErrInvalidQuery, q.Category)
		}
		cat = i
	}
	var ranked []scored
	if text == "" {
		for i, d := range c.docs {
			if d.cat == cat {
				ranked = append(ranked, scored{doc: int32(i)})
			}
		}
		if len(ranked) > limit {
			ranked = ranked[:limit]
		}
	} else {
		ranked = ix.rank(c, text, cat, limit)
	}
	hits := make([]Hit, 0, len(ranked))
	for _, r := range ranked {
		hits = append(hits, hit(docs, c.docs[r.doc].tool, r.score, detail))
	}
	return hits, nil
}

func hit(docs Docs, t *tools.Tool, score float64, detail Detail) Hit {
	h := Hit{Name: t.Name, Score: math.Round(score*1000) / 1000}
	sigPath, sig, sigOK := docs.Signature(t.Name)
	fullPath, full, fullOK := docs.Full(t.Name)
	if sigOK && fullOK {
		h.Cost = Costs{Signature: tools.CostOf(len(sig)), SignaturePath: sigPath, Full: tools.CostOf(len(full)), FullPath: fullPath}
	}
	h.Output, _ = docs.Output(t.Name)
	if detail == DetailName {
		return h
	}
	h.Summary = t.Summary
	h.ReadOnly = t.Annotations.ReadOnly
	h.Destructive = t.Annotations.Destructive
	switch detail {
	case DetailSignature:
		h.Signature = string(sig)
	case DetailFull:
		h.Full = string(full)
	}
	return h
}

type scored struct {
	doc   int32
	score float64
}

// rank scores every document that shares a term with the query and keeps
// the best limit of them.
func (ix *Index) rank(c *index, text string, cat int32, limit int) []scored {
	qa := analyze(text)
	qterms := distinct(qa.terms)
	weights := map[string]float64{}
	for _, t := range qa.terms {
		weights[t] = 1
	}
	// The query's own words' synonyms, not theirs in turn: ranging over
	// weights while adding to it would reach some of those, at random.
	for _, t := range qterms {
		for _, s := range synonyms[t] {
			if _, ok := weights[s]; !ok {
				weights[s] = synonymWeight
			}
		}
	}
	for _, f := range qa.forms {
		weights[f] = formWeight
	}
	for _, b := range bigrams(qa.terms) {
		weights[b] = bigramWeight
	}
	accp, _ := ix.pool.Get().(*[]float64)
	if accp == nil || len(*accp) < len(c.docs) {
		a := make([]float64, len(c.docs))
		accp = &a
	}
	acc := (*accp)[:len(c.docs)]
	matched := make([]uint8, len(c.docs))
	var touched []int32
	for t, w := range weights {
		for _, p := range c.postings[t] {
			if cat >= 0 && c.docs[p.doc].cat != cat {
				continue
			}
			if acc[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			acc[p.doc] += w * p.weight
			if w == 1 && matched[p.doc] < 255 {
				matched[p.doc]++
			}
		}
	}
	// Documents that match more of the query's own words rank higher: the
	// coordination factor of classic retrieval models.
	exact := 0
	for _, w := range weights {
		if w == 1 {
			exact++
		}
	}
	out := make([]scored, 0, len(touched))
	for _, d := range touched {
		s := acc[d]
		if exact > 0 {
			s *= 0.5 + 0.5*float64(matched[d])/float64(exact)
		}
		doc := &c.docs[d]
		if qa.question && qa.polarity == 0 && !doc.readOnly {
			s *= questionFactor
		}
		if qa.polarity != 0 && doc.polarity == -qa.polarity {
			s *= oppositeFactor
		}
		if qa.polarity != 0 && doc.readOnly {
			s *= actionFactor
		}
		if doc.tool.Deprecated {
			s *= deprecatedFactor
		}
		j := jaccard(qterms, doc.summary)
		s *= 1 + summaryBoost*j*j
		if n := len(doc.name); n > 0 {
			s *= 1 + nameBoost*float64(overlap(qterms, doc.name))/float64(n)
		}
		out = append(out, scored{doc: d, score: s})
		acc[d] = 0
	}
	ix.pool.Put(accp)
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return c.docs[out[i].doc].tool.Name < c.docs[out[j].doc].tool.Name
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// distinct returns the distinct terms of ts, sorted.
func distinct(ts []string) []string {
	out := slices.Clone(ts)
	slices.Sort(out)
	return slices.Compact(out)
}

// jaccard is |a ∩ b| / |a ∪ b| of two sorted sets of distinct terms.
func jaccard(a, b []string) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	both := overlap(a, b)
	return float64(both) / float64(len(a)+len(b)-both)
}

// overlap is |a ∩ b| of two sorted sets of distinct terms.
func overlap(a, b []string) int {
	both, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			both++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return both
}

// Fields and their BM25F weights and length normalization.
const (
	fieldName = iota
	fieldCategory
	fieldSummary
	fieldParams
	fieldOutput
	fieldText
	numFields
)

var (
	fieldWeight = [numFields]float64{fieldName: 4, fieldCategory: 1.5, fieldSummary: 2.5, fieldParams: 1.2, fieldOutput: 0.5, fieldText: 0.8}
	fieldB      = [numFields]float64{fieldName: 0.3, fieldCategory: 0.3, fieldSummary: 0.6, fieldParams: 0.5, fieldOutput: 0.5, fieldText: 0.75}
)

const k1 = 1.2

type index struct {
	version  uint64
	docs     []doc
	catID    map[string]int32
	postings map[string][]posting
}

type doc struct {
	tool *tools.Tool
	cat  int32
	// readOnly is the tool's annotation; polarity that of the verb its
	// short name starts with (see polarity).
	readOnly bool
	polarity int8
	// summary and name hold the distinct terms of the tool's summary
	// and short name, sorted.
	summary, name []string
}

// posting holds a document's whole BM25F contribution for one term:
// idf × saturated, weighted, length-normalized term frequency.
type posting struct {
	doc    int32
	weight float64
}

func build(ts []*tools.Tool, version uint64) *index {
	ix := &index{version: version, catID: map[string]int32{}, postings: map[string][]posting{}}
	fieldTerms := make([][numFields][]string, len(ts))
	var totalLen [numFields]float64
	for i, t := range ts {
		cat, ok := ix.catID[t.Category()]
		if !ok {
			cat = int32(len(ix.catID))
			ix.catID[t.Category()] = cat
		}
		short := t.ShortName()
		if short == "" {
			short = t.Name // a page (PageDocs)
		}
		nameWords := words(short)
		d := doc{tool: t, cat: cat, readOnly: t.Annotations.ReadOnly}
		if len(nameWords) > 0 {
			d.polarity = polarity[stem(nameWords[0])]
		}
		ix.docs = append(ix.docs, d)
		ft := &fieldTerms[i]
		nameTerms := terms(short)
		ft[fieldName] = append(append(nameTerms, forms(nameWords)...), bigrams(nameTerms)...)
		ft[fieldCategory] = terms(t.Category() + " " + strings.ReplaceAll(t.Group, "/", " "))
		ft[fieldSummary] = terms(t.Summary + " " + t.Title)
		ix.docs[i].summary = distinct(ft[fieldSummary])
		ix.docs[i].name = distinct(nameTerms)
		in := schemaText(t.InputDocument())
		out := schemaText(t.OutputDocument())
		ft[fieldParams] = terms(strings.Join(in.names, " "))
		ft[fieldOutput] = terms(strings.Join(out.names, " "))
		ft[fieldText] = terms(t.Description + " " + strings.Join(in.descriptions, " "))
		for f := range numFields {
			totalLen[f] += float64(len(ft[f]))
		}
	}
	n := float64(len(ts))
	var avg [numFields]float64
	for f := range numFields {
		avg[f] = max(totalLen[f]/max(n, 1), 1)
	}
	// Weighted, normalized term frequencies per document, then idf.
	type tfDoc struct {
		doc int32
		tf  float64
	}
	tfs := map[string][]tfDoc{}
	for i := range ts {
		ft := &fieldTerms[i]
		acc := map[string]float64{}
		for f := range numFields {
			norm := 1 - fieldB[f] + fieldB[f]*float64(len(ft[f]))/avg[f]
			for _, term := range ft[f] {
				acc[term] += fieldWeight[f] / norm
			}
		}
		keys := make([]string, 0, len(acc))
		for term := range acc {
			keys = append(keys, term)
		}
		slices.Sort(keys)
		for _, term := range keys {
			tfs[term] = append(tfs[term], tfDoc{doc: int32(i), tf: acc[term]})
		}
	}
	for term, list := range tfs {
		df := float64(len(list))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		ps := make([]posting, len(list))
		for i, td := range list {
			ps[i] = posting{doc: td.doc, weight: idf * td.tf * (k1 + 1) / (k1 + td.tf)}
		}
		ix.postings[term] = ps
	}
	return ix
}
