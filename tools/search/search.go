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
// (tools.View): the global tools, its own, within its toolset. The index
// of the whole catalogue is made once and shared (corpus.go); each view
// ranks the documents it holds with the statistics of those alone, as an
// index of the view by itself would.
//
// Package search does not render tool documentation (package vfs) or speak
// MCP (package mcpserver).
package search

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/lexicon"
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
	// MaxQueryLength bounds a query's text, in characters: a search
	// weighs every word of it against every tool, and a task is said in
	// a few words (issue 19, fourth round, A5: 3.4 MB cost 3 s of CPU).
	MaxQueryLength = 1024
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
	// Match is the share of the query's words the tool matches (0 to 1;
	// a synonym or related word counts half), and Confidence what ranking
	// makes of the hit; both are set for a query with words.
	Match      float64    `json:"match,omitempty"`
	Confidence Confidence `json:"confidence,omitempty"`
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
	pool sync.Pool // *scratch, a ranking's working space

	terms termCache // each tool's terms, kept (snapshot.go)

	// corp is the index of the whole catalogue (corpus.go); syncMu
	// makes it follow the registry one change at a time.
	corp   atomic.Pointer[corpus]
	syncMu sync.Mutex

	// learned is what learning from use taught: term → tool → count;
	// taught the same by tool: tool → term → count.
	mu      sync.RWMutex
	learned map[string]map[string]int
	taught  map[string]map[string]int
	// emb, when set, ranks by embeddings too (SetEmbedder).
	emb Embedder
	log *slog.Logger
}

// New returns an index over reg whose hits take their signatures, pages,
// costs and output shapes from docs(caller), which must render the same
// registry as the caller sees it. The catalogue's index is made on the
// first search and follows the registry's changes, each tool analysed
// once; what a caller's view holds of it is kept on its tools.View.
func New(reg *tools.Registry, docs func(tools.Caller) Docs) *Index {
	ix := &Index{reg: reg, docs: docs}
	ix.terms.reg = reg
	return ix
}

// Search ranks the tools against q and returns the best hits, best first.
// Ties are broken by name. An empty Text with a Category lists that
// category by name.
func (ix *Index) Search(q Query) ([]Hit, error) {
	return ix.SearchContext(context.Background(), q)
}

// SearchContext is Search within ctx, which bounds the embedder's
// requests (SetEmbedder).
func (ix *Index) SearchContext(ctx context.Context, q Query) ([]Hit, error) {
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
	if n := utf8.RuneCountInString(text); n > MaxQueryLength {
		return nil, fmt.Errorf("%w: the query is %d characters, over the limit of %d: say the task in a few words", ErrInvalidQuery, n, MaxQueryLength)
	}
	if text == "" && q.Category == "" {
		return nil, fmt.Errorf("%w: give words to search for, or a category to list", ErrInvalidQuery)
	}
	c := ix.current(q.Caller)
	docs := ix.docs(q.Caller)
	c.mu.RLock()
	var cat int32 = -1
	if q.Category != "" {
		i, ok := c.catID[q.Category]
		if !ok || !c.hasCat(i) {
			c.mu.RUnlock()
			return nil, fmt.Errorf("%w: no category %q", ErrInvalidQuery, q.Category)
		}
		cat = i
	}
	var ranked []scored
	if text == "" {
		for i, d := range c.docs {
			if d.cat == cat && c.has(int32(i)) {
				ranked = append(ranked, scored{doc: int32(i)})
			}
		}
		slices.SortFunc(ranked, func(a, b scored) int {
			if c.before(a.doc, b.doc) {
				return -1
			}
			return 1
		})
		if len(ranked) > limit {
			ranked = ranked[:limit]
		}
	} else if e, _ := ix.embedder(); e != nil {
		lexical := ix.rank(c, text, cat, max(limit, embedDepth))
		c.mu.RUnlock() // not held while the embedder is asked
		ranked = ix.fuseEmbeddings(ctx, c, text, cat, lexical, limit)
		c.mu.RLock()
	} else {
		ranked = ix.rank(c, text, cat, limit)
	}
	found := make([]*tools.Tool, len(ranked))
	for i, r := range ranked {
		found[i] = c.docs[r.doc].tool
	}
	c.mu.RUnlock()
	hits := make([]Hit, 0, len(ranked))
	for i, r := range ranked {
		h := hit(docs, found[i], r.score, detail)
		if text != "" {
			h.Match = math.Round(r.match*100) / 100
			h.Confidence = r.conf
		}
		hits = append(hits, h)
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
	// match is the share of the query's words the tool matches, a
	// related word counting half; conf what ranking makes of it.
	match float64
	conf  Confidence
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
	// The word that says what to do counts by its sense (intentFactor)
	// more than by its letters: "look at a chargeback" is not about views.
	if v := qa.lx.Verb; v != "" && float64(len(qterms)) >= verbSenseTerms && !qa.lx.VerbIsNoun && qa.lx.Class&^lexicon.Act != 0 {
		weights[v] = verbTermWeight
	}
	// Related terms (synonyms, the API verbs a verb stands for) of the
	// query's own words, not theirs in turn.
	for t, w := range qa.lx.Related {
		if _, ok := weights[t]; !ok {
			weights[t] = w
		}
	}
	// Other forms of the query's own words in the index (registrant of
	// register), as synonyms are.
	if variantWeight > 0 {
		for _, t := range qterms {
			for _, u := range c.variantsOf(t) {
				if _, ok := weights[u]; !ok && c.holds(u) {
					weights[u] = variantWeight
				}
			}
		}
	}
	// Words related in general English, below the vocabulary's. They
	// reorder the tools the query's words find, and find none alone.
	general := map[string]bool{}
	if generalWeight > 0 {
		for t, w := range qa.lx.General {
			if _, ok := weights[t]; !ok {
				weights[t] = generalWeight * w
				general[t] = true
			}
		}
	}
	for _, f := range qa.forms {
		weights[f] = formWeight
	}
	for _, b := range bigrams(qa.terms) {
		weights[b] = bigramWeight
	}
	// A query that names a category ("upload a file to stripe") means
	// its tools.
	named := map[int32]bool{}
	for name, id := range c.catID {
		if !c.hasCat(id) {
			continue
		}
		// As the query's words are: stemmed ("stripe" is strip).
		if t := terms(name); len(t) == 1 && slices.Contains(qterms, t[0]) || slices.Contains(qterms, name) {
			named[id] = true
			if len(t) == 1 {
				// "My asana profile" asks about a profile, in Asana.
				qa.lx.Compound = slices.DeleteFunc(slices.Clone(qa.lx.Compound), func(c string) bool { return c == t[0] })
			}
		}
	}
	sc := ix.scratchFor(len(c.in))
	defer ix.pool.Put(sc)
	acc, matched, related := sc.acc, sc.matched, sc.related
	found := sc.found // by a word that is not only general English
	touched := sc.touched
	for t, w := range weights {
		notGeneral := !general[t]
		ps, ws := c.weights(t)
		for i, pw := range ws {
			p := &ps[i]
			if pw == 0 || cat >= 0 && c.docs[p.doc].cat != cat {
				continue // not in the view, or not in the category
			}
			if acc[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			if notGeneral {
				found[p.doc] = true
			}
			acc[p.doc] += w * pw
			if w == 1 && matched[p.doc] < 255 {
				matched[p.doc]++
			} else if w < 1 && w >= lexicon.SynonymWeight && related[p.doc] < 255 {
				related[p.doc]++
			}
		}
	}
	ix.addLearned(c, qterms, cat, acc, matched, &touched)
	touched = slices.DeleteFunc(touched, func(d int32) bool {
		if !found[d] && matched[d] == 0 {
			acc[d] = 0
			return true
		}
		return false
	})
	// The documents that name what the query asks about, in its words or
	// others that stand for them.
	var hasHead []bool
	if h := qa.lx.Head; h != "" && headMissFactor < 1 {
		hasHead = sc.head
		for t, w := range weights {
			if t == h || w >= lexicon.SynonymWeight && qa.lx.IsHead(t) || qa.lx.General[t] > 0 && w > 0 {
				for _, p := range c.postings[t] {
					if c.has(p.doc) {
						hasHead[p.doc] = true
					}
				}
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
	// The factors below are bounded, so only the best candidates by the
	// words alone can come first: score those in full. The rest keep
	// their accumulators to be cleared.
	base := func(d int32) float64 {
		s := acc[d]
		if exact > 0 {
			s *= coordFloor + (1-coordFloor)*float64(matched[d])/float64(exact)
		}
		return s
	}
	if keep := max(limit*candidatesPerHit, minCandidates); len(touched) > keep {
		// The best keep by base score, ties by document: a bounded heap
		// rather than a sort of every candidate.
		worse := func(a, b candidate) bool {
			if a.score != b.score {
				return a.score < b.score
			}
			return c.before(b.doc, a.doc)
		}
		best := sc.best[:0]
		for _, d := range touched {
			best = pushTop(best, candidate{doc: d, score: base(d)}, keep, worse)
		}
		sc.best = best
		worst := best[0]
		for _, d := range touched {
			if worse(candidate{doc: d, score: base(d)}, worst) {
				acc[d] = 0
			}
		}
		touched = touched[:0]
		for _, b := range best {
			touched = append(touched, b.doc)
		}
	}
	sc.touched = touched[:0]
	fit := categoryFit(c, qterms, weights)
	qids := c.ids(qterms, false)
	out := make([]scored, 0, len(touched))
	for _, d := range touched {
		s := base(d)
		doc := &c.docs[d]
		intent := intentFactor(&qa, doc, c.noSelf[doc.cat], weights)
		s *= intent
		if named[doc.cat] {
			s *= namedBoost
		} else if len(named) > 0 {
			s *= unnamedFactor
		} else if fit != nil {
			s *= 1 + categoryBoost*fit[doc.cat]
		}
		if doc.tool.Deprecated {
			s *= deprecatedFactor
		}
		if hasHead != nil && !hasHead[d] {
			s *= headMissFactor
		}
		j := jaccardIDs(len(qterms), qids, doc.summaryIDs)
		s *= 1 + summaryBoost*j*j
		if n := len(doc.name); n > 0 {
			covered := overlapIDs(qids, doc.nameIDs)
			if qa.lx.Self {
				// "My" covers a name's "for authenticated user".
				covered += overlapIDs(c.selfIDs, doc.nameIDs)
			}
			if v := qa.lx.Verb; covered > 0 && v != "" && !slices.Contains(doc.name, v) && slices.ContainsFunc(doc.name, qa.lx.IsVerbWord) {
				// create_label covers "add a label" as add_labels does
				// (a verb alone covers nothing).
				covered++
			}
			s *= 1 + nameBoost*float64(min(covered, n))/float64(n)
		}
		m := 0.0
		if exact > 0 {
			m = min(1, (float64(matched[d])+0.5*float64(min(int(related[d]), exact-int(matched[d]))))/float64(exact))
		}
		out = append(out, scored{doc: d, score: s, match: m, conf: confidence(m, intent, objectNamed(doc, weights))})
		acc[d] = 0
	}
	// The best limit, by score and then name: those are sorted, not all.
	after := func(a, b scored) bool {
		if a.score != b.score {
			return a.score < b.score
		}
		return c.docs[a.doc].tool.Name > c.docs[b.doc].tool.Name
	}
	if limit <= 0 {
		return out[:0]
	}
	if len(out) > limit {
		top := make([]scored, 0, limit)
		for _, o := range out {
			top = pushTop(top, o, limit, after)
		}
		out = top
	}
	slices.SortFunc(out, func(a, b scored) int {
		switch {
		case after(a, b):
			return 1
		case after(b, a):
			return -1
		}
		return 0
	})
	return out
}

// categoryFit says how much each category's tools, taken together,
// speak of what the query's own words name (0 to 1, the best category
// 1): the share of its tools that hold each word, by the word's idf.
// A query that does not name its service ("text a phone number") is
// most likely about the one whose vocabulary is its own. It is nil
// when the index has one category, or the query no words of its own.
func categoryFit(c *index, qterms []string, weights map[string]float64) []float64 {
	if c.cats < 2 || categoryBoost == 0 {
		return nil
	}
	size := c.catSize
	fit := make([]float64, len(size))
	count := make([]float64, len(size))
	found := false
	for _, t := range qterms {
		if weights[t] != 1 {
			continue
		}
		ps, df := c.df(t)
		if df == 0 {
			continue
		}
		clear(count)
		for _, p := range ps {
			if c.has(p.doc) {
				count[c.docs[p.doc].cat]++
			}
		}
		idf := c.idf(df)
		for k := range fit {
			if size[k] > 0 {
				fit[k] += idf * math.Sqrt(count[k]/size[k])
			}
		}
		found = true
	}
	if !found {
		return nil
	}
	best := slices.Max(fit)
	if best == 0 {
		return nil
	}
	for k := range fit {
		fit[k] /= best
	}
	return fit
}

// Confidence says how well a hit answers the query.
type Confidence string

// Confidence levels. A high hit matches most of the query's words and is
// the kind of operation asked for, on the thing asked about; a low one
// matches few of them, or acts on something else.
const (
	High   Confidence = "high"
	Medium Confidence = "medium"
	Low    Confidence = "low"
)

// Thresholds of Confidence on a hit's match (the share of the query's
// words it matches).
const (
	HighMatch = 0.6
	LowMatch  = 0.4
)

// confidence grades a hit from its match, its intent factor (how well
// what it does fits what is asked: above 1 when it does) and whether it
// acts on a thing the query names.
func confidence(match, intent float64, object bool) Confidence {
	switch {
	case match < LowMatch, match < HighMatch && !object:
		return Low
	case match >= HighMatch && intent > 1 && object:
		return High
	}
	return Medium
}

// objectNamed reports whether the query names what a document acts on,
// or the document says nothing of it.
func objectNamed(d *doc, weights map[string]float64) bool {
	if d.op.Object == "" {
		return true
	}
	return weights[d.op.Object] >= lexicon.SynonymWeight
}

// intentFactor scales a document's score by how well what it does fits
// what the query asks: the CRUD sense of each (lexicon.Class), the
// resource it acts on, the action it names, and whether both are about
// the one asking.
func intentFactor(qa *query, doc *doc, noSelf bool, weights map[string]float64) float64 {
	f := 1.0
	q := qa.lx
	dc := doc.op.Class
	if dc == 0 && doc.readOnly {
		dc = lexicon.Read
	}
	f *= classFactor(q.Class, dc, q.Plural)
	if dc == 0 || doc.op.Object == "" {
		// A tool whose name and route say nothing: the hints of the
		// catalogue's own metadata.
		if qa.question && qa.polarity == 0 && !doc.readOnly {
			f *= questionFactor
		}
		if qa.polarity != 0 && doc.readOnly {
			f *= actionFactor
		}
	}
	if qa.polarity != 0 && doc.polarity == -qa.polarity {
		f *= oppositeFactor
	}
	if o := doc.op.Object; o != "" {
		if w, ok := weights[o]; ok && w >= lexicon.SynonymWeight {
			b := objectBoost
			if q.Head != "" && o != q.VerbNoun && !q.IsHead(o) {
				b *= otherObjectShare // it names it, but asks about another
			}
			f *= 1 + b*min(w, 1)
			if o == q.Head {
				f *= 1 + headBoost // what it acts on is what is asked about
			}
		} else if len(qa.terms) > 1 && doc.tool.Route != "" {
			// It acts on something the query does not name: the
			// discount of a customer, for "remove a customer".
			f *= objectMissFactor
			if q.Head != "" && slices.Contains(doc.op.Context, q.Head) {
				// It acts on a part of what is asked about: the
				// protection of a branch, for "delete a branch".
				f *= partFactor
			}
		}
	}
	boosted := false
	for _, c := range doc.op.Context {
		switch {
		case weights[c] == 1 && !boosted:
			f *= 1 + contextBoost // the resource it is under: "a file from a repo"
			boosted = true
		case weights[c] < lexicon.SynonymWeight:
			// Under something the query does not name: Issuing's
			// disputes, for "a dispute".
			f *= contextMissFactor
		}
	}
	// It acts on something else the query names, within the thing asked
	// about: adds a project to a task, for "add a task to a project"; a
	// file's content, for "rename a file" (a synonym of the thing, under
	// the thing itself, is a part of it).
	if o := doc.op.Object; q.Head != "" && o != "" && o != q.Head && weights[o] >= lexicon.SynonymWeight &&
		slices.Contains(doc.op.Context, q.Head) {
		f *= partFactor
	}
	for _, a := range doc.op.Attribute {
		if weights[a] >= lexicon.VerbWeight {
			f *= 1 + attributeBoost // the field it sets: "rename" sets a name
			break
		}
	}
	for _, v := range doc.op.Verbs {
		if w, ok := weights[v]; ok && w >= lexicon.VerbWeight {
			f *= 1 + verbBoost*min(w, 1)
			break
		}
	}
	switch {
	case q.Self && doc.self:
		f *= 1 + selfBoost
	case !q.Self && doc.self:
		f *= otherFactor
	case q.Self && !doc.self && !doc.forSelf && !noSelf:
		f *= notSelfFactor
	}
	return f
}

// classFactor weighs what a document does (d) against what the query
// asks (q): more when they agree, less when one reads and the other
// writes, or one creates and the other removes.
func classFactor(q, d lexicon.Class, plural bool) float64 {
	if q == 0 || d == 0 {
		return 1
	}
	// Two named actions agree when their verbs do (verbBoost), not by
	// being actions.
	if q&^lexicon.Act != 0 {
		q &^= lexicon.Act
	}
	if d&^lexicon.Act != 0 {
		d &^= lexicon.Act
	}
	if q == lexicon.Act || d == lexicon.Act {
		if (q|d)&^lexicon.Act&^lexicon.Read == 0 && (q|d)&lexicon.Read != 0 {
			return readWriteFactor
		}
		return 1
	}
	if q&d != 0 {
		if plural && q&lexicon.List != 0 && d&lexicon.List == 0 && d&lexicon.Read != 0 {
			return 1 + pluralGetShare*classBoost // a plural asks for a list rather than one
		}
		return 1 + classBoost
	}
	qRead, dRead := q&^lexicon.Read == 0, d&^lexicon.Read == 0
	switch {
	case qRead && dRead:
		return 1
	case qRead != dRead:
		return readWriteFactor
	case (q|d)&lexicon.Act != 0:
		return 1
	case q&lexicon.Create != 0 && d&lexicon.Delete != 0, q&lexicon.Delete != 0 && d&lexicon.Create != 0:
		return createDeleteFactor
	}
	return otherWriteFactor
}

// distinct returns the distinct terms of ts, sorted.
func distinct(ts []string) []string {
	out := slices.Clone(ts)
	slices.Sort(out)
	return slices.Compact(out)
}

// jaccardIDs is |q ∩ d| / |q ∪ d| of a query of n distinct terms, q
// their ids (those that have one), and a document's term ids d.
func jaccardIDs(n int, q, d []int32) float64 {
	if n == 0 || len(d) == 0 {
		return 0
	}
	both := overlapIDs(q, d)
	return float64(both) / float64(n+len(d)-both)
}

// overlapIDs is |a ∩ b| of two sorted sets of distinct term ids.
func overlapIDs(a, b []int32) int {
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
	fieldLead
	fieldIntent
	fieldParams
	fieldOutput
	fieldText
	numFields
)

var (
	fieldWeight = [numFields]float64{fieldName: 4, fieldCategory: 1.5, fieldSummary: 2.5, fieldLead: 1.5, fieldIntent: 3, fieldParams: 2, fieldOutput: 0.5, fieldText: 0.6}
	fieldB      = [numFields]float64{fieldName: 0.3, fieldCategory: 0.3, fieldSummary: 0.6, fieldLead: 0.6, fieldIntent: 0.3, fieldParams: 0.5, fieldOutput: 0.5, fieldText: 0.75}
)

const k1 = 1.2

type doc struct {
	tool *tools.Tool
	cat  int32
	// readOnly is the tool's annotation; polarity that of the verb its
	// short name starts with (see polarity).
	readOnly bool
	polarity int8
	// op is what the tool does, as its name and route say; self is set
	// for a tool on the authenticated user's own things.
	op   lexicon.Operation
	self bool
	// forSelf is set for a tool that may act for the caller though
	// not only for them (a user id that takes "me").
	forSelf bool
	// summary and name hold the distinct terms of the tool's summary
	// and short name, sorted.
	summary, name []string
	// summaryIDs and nameIDs are the same terms by their ids
	// (corpus.termIDs), sorted: what ranking intersects with the query's.
	summaryIDs, nameIDs []int32
	// lens is how many terms each field has.
	lens [numFields]int32
	// hash identifies what analysis read of the tool, when its terms
	// are kept (snapshot.go).
	hash [32]byte
	// dead is set once the tool is no longer registered; seen is the
	// corpus's last sync that found it registered.
	dead bool
	seen uint32
	// page is set for a page (PageDocs; a name without a category),
	// which comes after the tools in a view's order.
	page bool
}

// variantPrefix is the least length of a word's stem for variantsOf.
const variantPrefix = 6

// variantsOf returns the index's words that are other forms of the
// stem t: those that share most of their letters with it from the
// start ("regist" of register and registrant, "collaborat" of
// collaborate and collaborator). The stemmer strips inflections; an
// API's nouns for the doer or the doing of a verb (registrant,
// attendee, subscription) are derived words it leaves apart.
func (ix *corpus) variantsOf(t string) []string {
	if len(t) < variantPrefix {
		return nil
	}
	var out []string
	for _, u := range ix.variants[t[:variantPrefix]] {
		n := min(len(t), len(u))
		if u == t || 4*commonPrefix(t, u) < 3*n {
			continue
		}
		out = append(out, u)
	}
	return out
}

// holds reports whether a document of the view holds t.
func (c *index) holds(t string) bool {
	for _, p := range c.postings[t] {
		if c.has(p.doc) {
			return true
		}
	}
	return false
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// isWord reports whether t is one lower-case word (not a pair of words
// or a plural form: bigrams, forms).
func isWord(t string) bool {
	for i := 0; i < len(t); i++ {
		if t[i] < 'a' || t[i] > 'z' {
			return false
		}
	}
	return true
}

// toolTerms is what the index makes of one tool by itself: the terms of
// each field and what its name and route say it does. Made once per tool
// (termCache), and kept between starts (snapshot.go).
type toolTerms struct {
	Fields   [numFields][]string
	Summary  []string // the distinct terms of the summary, sorted
	Name     []string // the distinct terms of the short name, sorted
	Polarity int8
	Op       lexicon.Operation
	Self     bool
	// ForSelf is set for a tool that acts for a user the caller may
	// name as "me" (Zoom's /users/{userId}/meetings).
	ForSelf bool
	// hash is the tool's (termCache.hash) when its terms are kept;
	// not in the file.
	hash [32]byte
}

// analyzeTool makes the terms of one tool.
func analyzeTool(t *tools.Tool, sd *schemaDocs) *toolTerms {
	tt := &toolTerms{}
	short := t.ShortName()
	if short == "" {
		short = t.Name // a page (PageDocs)
	}
	nameWords := words(short)
	if len(nameWords) > 0 {
		tt.Polarity = polarity[stem(nameWords[0])]
	}
	ft := &tt.Fields
	nameTerms := terms(short)
	ft[fieldName] = append(append(nameTerms, forms(nameWords)...), bigrams(nameTerms)...)
	ft[fieldCategory] = terms(t.Category() + " " + strings.ReplaceAll(t.Group, "/", " "))
	summary := lexicon.Clean(clip(t.Summary, maxIndexedText))
	// The description's first sentence says what the tool does; a
	// summary made from it is not counted twice, and a summary that
	// is only the route ("POST /2010-04-01/Accounts/…", as generated
	// descriptions have) gives way to it.
	lead, rest := lexicon.Lead(lexicon.Clean(clip(t.Description, maxIndexedText)))
	if lexicon.IsRoute(summary) {
		summary, lead = lead, ""
	}
	if strings.TrimRight(lead, ".") == strings.TrimRight(summary, ".…") {
		lead = ""
	}
	ft[fieldSummary] = terms(summary + " " + clip(t.Title, maxIndexedText))
	tt.Summary = distinct(ft[fieldSummary])
	tt.Name = distinct(nameTerms)
	ft[fieldLead] = terms(lead)
	op := lexicon.Describe(short, t.Route)
	// What the summary says it does, in the verbs it starts with:
	// "Add or update a contact" for a PUT on a collection, "Send a
	// message" for a POST that creates one.
	lc, lv := lexicon.LeadVerbs(firstNonEmpty(summary, lead))
	switch {
	case op.Class == 0:
		op.Class = lc
	case op.Class&^lexicon.Read != 0:
		op.Class |= lc & (lexicon.Create | lexicon.Update | lexicon.Delete)
	}
	for _, v := range lv {
		if !slices.Contains(op.Verbs, v) {
			op.Verbs = append(op.Verbs, v)
		}
	}
	in := sd.words(t.InputSchema, t.InputDefs)
	out := sd.words(t.OutputSchema, t.OutputDefs)
	if op.Class&^lexicon.Read != 0 {
		// An operation that changes something does the actions its
		// parameters' values name: Zoom's PUT /meetings/{id}/status
		// takes an action of end or recover, its user status one of
		// activate or deactivate. (A reading operation's values filter
		// what it lists: an issue state of "open" opens nothing.)
		for _, v := range in.values {
			if c, ok := lexicon.VerbClass(v); ok && c&lexicon.Act != 0 && !slices.Contains(op.Verbs, stem(v)) {
				op.Verbs = append(op.Verbs, stem(v))
			}
		}
	}
	tt.Op = op
	tt.Self = op.Self || mentionsSelf(summary+" "+lead)
	tt.ForSelf = in.self
	ft[fieldIntent] = intentTerms(op)
	ft[fieldParams] = terms(strings.Join(in.names, " "))
	ft[fieldOutput] = terms(strings.Join(out.names, " "))
	ft[fieldText] = terms(lexicon.Clean(rest + " " + clip(strings.Join(in.descriptions, " "), maxIndexedText)))
	return tt
}

// maxIndexedText bounds the bytes of each text of a tool that search
// analyses: its summary, title, description and its parameters'
// descriptions. Real tools' are far shorter; a hostile upstream's tool
// whose description was 1.5 million distinct words made every
// principal's search cost seconds of CPU and hundreds of MiB (attack15
// I8).
const maxIndexedText = 32 << 10

// clip returns s cut to at most n bytes, at the last space before the
// cut when there is one, so that no word is indexed cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	if i := strings.LastIndexByte(s, ' '); i > 0 {
		return s[:i]
	}
	return strings.ToValidUTF8(s, "")
}

// selfTerms are the terms by which names say they act for the
// authenticated user, sorted.
var selfTerms = distinct([]string{lexicon.Stem("authenticated"), "current", "me", "my", "user"})

// classWords are the words the intent field gives each class, the words
// the query's verbs stand for (lexicon.Analyze's related terms).
var classWords = []struct {
	class lexicon.Class
	word  string
}{
	{lexicon.Create, "creat"}, {lexicon.Get, "get"}, {lexicon.List, "list"},
	{lexicon.Update, "updat"}, {lexicon.Delete, "delet"}, {lexicon.Search, "search"},
}

// intentTerms are the terms of what a tool does: its class's word, its
// object, the resources above it, its action verbs and the field it sets.
func intentTerms(op lexicon.Operation) []string {
	var out []string
	for _, cw := range classWords {
		if op.Class&cw.class != 0 {
			out = append(out, cw.word)
		}
	}
	if op.Object != "" {
		out = append(out, op.Object, op.Object)
	}
	out = append(out, op.Context...)
	out = append(out, op.Verbs...)
	out = append(out, op.Attribute...)
	return out
}

// firstNonEmpty returns the first of ss that is not empty.
func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// mentionsSelf reports whether text says a tool works on the
// authenticated user's own things.
func mentionsSelf(text string) bool {
	t := strings.ToLower(text)
	return strings.Contains(t, "authenticated user") || strings.Contains(t, "current user") ||
		strings.Contains(t, "calling user") || strings.Contains(t, "current user's")
}

// Link is one thing learning from use taught: that a search with the
// word Term (an index term) was followed, Count times, by a run that
// called the tool Tool.
type Link struct {
	Term  string
	Tool  string
	Count int
}

// LearnTerms returns the words of a query that learning from use keeps:
// its index terms, distinct, at most 32. They are words only.
func LearnTerms(query string) []string {
	ts := distinct(lexicon.Analyze(query).Terms)
	if len(ts) > 32 {
		ts = ts[:32]
	}
	return ts
}

// Learn records that a search with terms (LearnTerms) was followed by a
// run that called toolNames: later searches with those words rank those
// tools higher, as if the words were in their names.
func (ix *Index) Learn(terms, toolNames []string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.learned == nil {
		ix.learned = map[string]map[string]int{}
		ix.taught = map[string]map[string]int{}
	}
	for _, t := range terms {
		m := ix.learned[t]
		if m == nil {
			m = map[string]int{}
			ix.learned[t] = m
		}
		for _, n := range toolNames {
			m[n]++
			if ix.taught[n] == nil {
				ix.taught[n] = map[string]int{}
			}
			ix.taught[n][t]++
		}
	}
}

// SetLearned replaces what the index learned from use by links (read
// back from the store at start, or none to forget it all).
func (ix *Index) SetLearned(links []Link) {
	m := map[string]map[string]int{}
	byTool := map[string]map[string]int{}
	for _, l := range links {
		if l.Count <= 0 {
			continue
		}
		if m[l.Term] == nil {
			m[l.Term] = map[string]int{}
		}
		m[l.Term][l.Tool] += l.Count
		if byTool[l.Tool] == nil {
			byTool[l.Tool] = map[string]int{}
		}
		byTool[l.Tool][l.Term] += l.Count
	}
	ix.mu.Lock()
	ix.learned, ix.taught = m, byTool
	ix.mu.Unlock()
}

// covered is the share of the words that led to a tool (by count ×
// idf) that qterms hold: a query that is the task that was learned
// holds them all, one that shares two of its words ("play a song", of
// "queue up a song to play next") a part. The caller holds ix.mu.
func (ix *Index) covered(c *index, tool string, qterms []string) float64 {
	var in, all float64
	for t, cnt := range ix.taught[tool] {
		_, df := c.df(t)
		w := float64(cnt) * c.idf(df)
		all += w
		if slices.Contains(qterms, t) {
			in += w
		}
	}
	if all == 0 {
		return 1
	}
	return in / all
}

// addLearned adds what learning from use taught to the scores: query
// words that led to a tool count as those words in the tool's name would,
// growing with how often they led there — when they are most of the
// query (by idf) and at least two of its words, so that a task asked
// again finds what was used for it, while a query that shares one word
// with it, common ("add", "channel") or rare ("song"), is not pulled
// towards it.
func (ix *Index) addLearned(c *index, qterms []string, cat int32, acc []float64, matched []uint8, touched *[]int32) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if len(ix.learned) == 0 {
		return
	}
	idf := make([]float64, len(qterms))
	total := 0.0
	for i, t := range qterms {
		_, df := c.df(t)
		idf[i] = c.idf(df)
		total += idf[i]
	}
	type linked struct {
		share, add float64
		terms      uint8
	}
	byDoc := map[int32]*linked{}
	for i, t := range qterms {
		for name, count := range ix.learned[t] {
			d, ok := c.docOf(name)
			if !ok || cat >= 0 && c.docs[d].cat != cat {
				continue
			}
			l := byDoc[d]
			if l == nil {
				l = &linked{}
				byDoc[d] = l
			}
			cnt := float64(count)
			l.share += idf[i] / total
			l.add += learnWeight * idf[i] * 2 * cnt / (cnt + 1)
			l.terms++
		}
	}
	for d, l := range byDoc {
		if l.share < learnShare || int(l.terms) < min(2, len(qterms)) {
			// One rare word in common ("song") is not the same task.
			continue
		}
		cov := ix.covered(c, c.docs[d].tool.Name, qterms)
		if cov < learnCover {
			// Part of a longer task that was learned ("play a song", of
			// "queue up a song to play next").
			continue
		}
		if acc[d] == 0 {
			*touched = append(*touched, d)
		}
		acc[d] += l.add * cov
		matched[d] = min(255, matched[d]+l.terms)
	}
}
