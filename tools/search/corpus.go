package search

import (
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/codecell/codecell/tools"
)

// corpus is the index of the whole catalogue — every tool registered,
// global or of any principal's scope, and the built-in pages — made once
// and shared by every caller's view (attack15 M1: an index per view cost
// each principal's first search seconds of CPU on a large catalogue,
// and each change every principal's next one). Each tool is analysed
// once, when it is first seen; a tool registered or removed changes its
// own entries only.
//
// It holds no statistic of a collection: a posting keeps how often its
// term appears in each field of its document, and a view (index) weighs
// it at query time with the statistics of the documents that view holds
// (how many hold the term, the mean length of each field). So a caller
// ranks its view exactly as an index of that view alone would, and
// nothing of a tool outside its view — its words, how many there are —
// reaches its scores.
//
// Documents are never renumbered while the corpus is in use: a tool no
// longer registered keeps its document, which no new view holds, until
// such documents are many and the corpus is made again from the live
// ones (compact).
type corpus struct {
	// mu guards what follows, but vecs (vecMu) and synced. Searches
	// hold it to read; adding documents holds it to write.
	mu       sync.RWMutex
	docs     []doc
	postings map[string][]posting
	catID    map[string]int32
	// variants holds the corpus's words of at least variantPrefix
	// letters by their first variantPrefix letters (variantsOf).
	variants map[string][]string
	// termIDs number the terms of the documents' summaries and names,
	// and selfTerms; selfIDs are selfTerms' ids, sorted.
	termIDs map[string]int32
	selfIDs []int32
	// byTool finds the document of a registered tool; byPage that of a
	// built-in page (PageDocs), by its text.
	byTool map[*tools.Tool]int32
	byPage map[string]int32
	// live and dead count the documents of tools registered, and of
	// those no longer registered.
	live, dead int
	// seen marks, at each sync, the documents of the tools registered.
	seen uint32

	synced atomic.Uint64 // the registry's version the corpus reflects

	vecMu   sync.Mutex
	vecName string      // the embedder's whose vectors vecs holds
	vecs    [][]float32 // by document; nil for none yet
}

// posting is one document that holds a term: how many times in each
// field (each at most maxCount).
type posting struct {
	doc int32
	n   [numFields]uint16
}

// maxCount bounds a term's count in one field of one posting; the text
// a field is made of is bounded (maxIndexedText) far below it.
const maxCount = math.MaxUint16

func newCorpus() *corpus {
	co := &corpus{postings: map[string][]posting{}, catID: map[string]int32{}, variants: map[string][]string{},
		termIDs: map[string]int32{}, byTool: map[*tools.Tool]int32{}, byPage: map[string]int32{}}
	co.selfIDs = co.ids(selfTerms, true)
	return co
}

// add makes the documents of ts, each a registered tool (page false) or
// a built-in page (true), with their terms from tc (nil: analysed now),
// and returns their ids. co.mu is held for writing.
func (co *corpus) add(ts []*tools.Tool, page bool, tc *termCache) []int32 {
	ids := make([]int32, len(ts))
	all := tc.termsOf(ts, co.liveHashes)
	for i, t := range ts {
		id := int32(len(co.docs))
		ids[i] = id
		cat, ok := co.catID[t.Category()]
		if !ok {
			cat = int32(len(co.catID))
			co.catID[t.Category()] = cat
		}
		tt := all[i]
		d := doc{tool: t, cat: cat, readOnly: t.Annotations.ReadOnly, polarity: tt.Polarity,
			op: tt.Op, self: tt.Self, forSelf: tt.ForSelf, summary: tt.Summary, name: tt.Name, hash: tt.hash, seen: co.seen,
			page: !strings.Contains(t.Name, ".")}
		d.summaryIDs, d.nameIDs = co.ids(d.summary, true), co.ids(d.name, true)
		counts := map[string]*posting{}
		var order []string
		for f := range numFields {
			d.lens[f] = int32(len(tt.Fields[f]))
			for _, term := range tt.Fields[f] {
				p := counts[term]
				if p == nil {
					p = &posting{doc: id}
					counts[term] = p
					order = append(order, term)
				}
				if p.n[f] < maxCount {
					p.n[f]++
				}
			}
		}
		for _, term := range order {
			list, ok := co.postings[term]
			if !ok && len(term) >= variantPrefix && isWord(term) {
				vs := co.variants[term[:variantPrefix]]
				j, _ := slices.BinarySearch(vs, term)
				co.variants[term[:variantPrefix]] = slices.Insert(vs, j, term)
			}
			co.postings[term] = append(list, *counts[term])
		}
		co.docs = append(co.docs, d)
		if page {
			co.byPage[pageKey(t)] = id
		} else {
			co.byTool[t] = id
			co.live++
		}
	}
	return ids
}

// liveHashes returns the hashes of the documents of category's
// registered tools (those whose terms its file keeps). co.mu is held.
func (co *corpus) liveHashes(category string) map[[32]byte]bool {
	out := map[[32]byte]bool{}
	cat, ok := co.catID[category]
	if !ok {
		return out
	}
	for t, id := range co.byTool {
		if d := &co.docs[id]; d.cat == cat && !d.dead && t.Category() == category {
			out[d.hash] = true
		}
	}
	return out
}

// pageKey identifies a built-in page by what is indexed of it: each
// caller's tree makes its own *tools.Tool of the same page.
func pageKey(t *tools.Tool) string {
	return t.Name + "\x00" + t.Summary + "\x00" + t.Description
}

// sync makes the corpus hold the documents of ts, the tools registered
// now: those it lacks are added, those no longer registered marked dead.
// co.mu is held for writing.
func (co *corpus) sync(ts []*tools.Tool, tc *termCache) {
	co.seen++
	var add []*tools.Tool
	for _, t := range ts {
		id, ok := co.byTool[t]
		if !ok {
			add = append(add, t)
			continue
		}
		d := &co.docs[id]
		d.seen = co.seen
		if d.dead {
			d.dead = false
			co.dead--
			co.live++
		}
	}
	for _, id := range co.byTool {
		if d := &co.docs[id]; d.seen != co.seen && !d.dead {
			d.dead = true
			co.dead++
			co.live--
		}
	}
	if len(add) > 0 {
		co.add(add, false, tc)
	}
}

// compacted returns a corpus of the live documents of co and its pages,
// numbered anew, without analysing anything again, and where each of
// co's documents went (-1: dropped). co.mu is held.
func (co *corpus) compacted() (*corpus, []int32) {
	nc := newCorpus()
	nc.termIDs, nc.selfIDs = maps.Clone(co.termIDs), co.selfIDs // ids need not be dense
	remap := make([]int32, len(co.docs))
	pages := map[int32]bool{}
	for _, id := range co.byPage {
		pages[id] = true
	}
	for id := range co.docs {
		d := co.docs[id]
		if d.dead || !pages[int32(id)] && co.byTool[d.tool] != int32(id) {
			remap[id] = -1
			continue
		}
		nid := int32(len(nc.docs))
		remap[id] = nid
		cat, ok := nc.catID[d.tool.Category()]
		if !ok {
			cat = int32(len(nc.catID))
			nc.catID[d.tool.Category()] = cat
		}
		d.cat = cat
		nc.docs = append(nc.docs, d)
		if pages[int32(id)] {
			nc.byPage[pageKey(d.tool)] = nid
		} else {
			nc.byTool[d.tool] = nid
			nc.live++
		}
	}
	for term, list := range co.postings {
		var out []posting
		for _, p := range list {
			if nid := remap[p.doc]; nid >= 0 {
				p.doc = nid
				out = append(out, p)
			}
		}
		if len(out) > 0 {
			nc.postings[term] = out
			if len(term) >= variantPrefix && isWord(term) {
				nc.variants[term[:variantPrefix]] = append(nc.variants[term[:variantPrefix]], term)
			}
		}
	}
	for _, vs := range nc.variants {
		slices.Sort(vs)
	}
	return nc, remap
}

// moveVectors gives nc the vectors of co's documents that compacted
// kept (remap). Neither's mu is held.
func (nc *corpus) moveVectors(co *corpus, remap []int32) {
	co.vecMu.Lock()
	defer co.vecMu.Unlock()
	if co.vecs == nil {
		return
	}
	nc.vecMu.Lock()
	defer nc.vecMu.Unlock()
	nc.vecName = co.vecName
	nc.vecs = make([][]float32, len(nc.docs))
	for id, nid := range remap {
		if nid >= 0 && id < len(co.vecs) {
			nc.vecs[nid] = co.vecs[id]
		}
	}
}

// ids are the ids of ts (corpus.termIDs), sorted; terms without one are
// left out. add gives those an id.
func (co *corpus) ids(ts []string, add bool) []int32 {
	out := make([]int32, 0, len(ts))
	for _, t := range ts {
		id, ok := co.termIDs[t]
		if !ok {
			if !add {
				continue
			}
			id = int32(len(co.termIDs))
			co.termIDs[t] = id
		}
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// corpus returns the corpus, first made to hold the tools registered
// now (or made again when its dead documents are more than an eighth of
// its live ones, and minCompact).
func (ix *Index) corpus() *corpus {
	if co := ix.corp.Load(); co != nil && co.synced.Load() == ix.reg.Version() {
		return co
	}
	ix.syncMu.Lock()
	defer ix.syncMu.Unlock()
	version, ts := ix.reg.All()
	co := ix.corp.Load()
	if co != nil && co.synced.Load() == version {
		return co
	}
	if co == nil {
		co = newCorpus()
	}
	co.mu.Lock()
	co.sync(ts, &ix.terms)
	if co.dead > max(co.live/8, minCompact) {
		nc, remap := co.compacted()
		co.mu.Unlock()
		nc.moveVectors(co, remap)
		co = nc
	} else {
		co.mu.Unlock()
	}
	co.synced.Store(version)
	ix.corp.Store(co)
	return co
}

// minCompact is the fewest dead documents for which a corpus is made
// again.
const minCompact = 64

// viewCell holds a view's index (Memo), made again when the corpus is.
type viewCell struct {
	mu sync.Mutex
	x  *index
}

// current returns the index of c's view, with the pages of its docs
// (PageDocs).
func (ix *Index) current(c tools.Caller) *index {
	v := ix.reg.View(c)
	co := ix.corpus()
	cell := v.Memo(ix, func(*tools.View) any { return &viewCell{} }).(*viewCell)
	cell.mu.Lock()
	defer cell.mu.Unlock()
	if cell.x != nil && cell.x.corpus == co {
		return cell.x
	}
	var pages []*tools.Tool
	if p, ok := ix.docs(c).(PageDocs); ok {
		pages = p.Pages()
	}
	cell.x = ix.viewOf(co, v, v.List(), pages)
	return cell.x
}

// viewOf returns the index of the view v within co: its tools ts and
// pages, added to co when it lacks them.
func (ix *Index) viewOf(co *corpus, v *tools.View, ts, pages []*tools.Tool) *index {
	co.mu.RLock()
	var missing, missingPages []*tools.Tool
	for _, t := range ts {
		if _, ok := co.byTool[t]; !ok {
			missing = append(missing, t)
		}
	}
	for _, p := range pages {
		if _, ok := co.byPage[pageKey(p)]; !ok {
			missingPages = append(missingPages, p)
		}
	}
	co.mu.RUnlock()
	if len(missing)+len(missingPages) > 0 {
		// Tools registered since the corpus was synced, or pages not
		// seen yet.
		co.mu.Lock()
		missing = slices.DeleteFunc(missing, func(t *tools.Tool) bool { _, ok := co.byTool[t]; return ok })
		missingPages = slices.DeleteFunc(missingPages, func(t *tools.Tool) bool { _, ok := co.byPage[pageKey(t)]; return ok })
		co.add(missing, false, &ix.terms)
		co.add(missingPages, true, nil)
		co.mu.Unlock()
	}
	co.mu.RLock()
	defer co.mu.RUnlock()
	ids := make([]int32, 0, len(ts)+len(pages))
	for _, t := range ts {
		ids = append(ids, co.byTool[t])
	}
	for _, p := range pages {
		ids = append(ids, co.byPage[pageKey(p)])
	}
	var version uint64
	if v != nil {
		version = v.Version()
	}
	return co.viewIndex(v, version, ids)
}

// viewIndex returns the index of the documents ids of co. co.mu is
// held.
func (co *corpus) viewIndex(v *tools.View, version uint64, ids []int32) *index {
	x := &index{corpus: co, view: v, version: version, in: make([]bool, len(co.docs)), catSize: make([]float64, len(co.catID))}
	var total [numFields]float64
	selfCat := make([]bool, len(co.catID))
	for _, id := range ids {
		if x.in[id] {
			continue
		}
		x.in[id] = true
		d := &co.docs[id]
		for f := range numFields {
			total[f] += float64(d.lens[f])
		}
		x.catSize[d.cat]++
		if d.self || d.forSelf {
			selfCat[d.cat] = true
		}
		x.n++
	}
	for f := range numFields {
		x.avg[f] = max(total[f]/max(x.n, 1), 1)
	}
	x.noSelf = make([]bool, len(co.catID))
	for k := range selfCat {
		x.noSelf[k] = !selfCat[k]
		if x.catSize[k] > 0 {
			x.cats++
		}
	}
	return x
}

// index is the search index of one view of the catalogue: the corpus,
// of which it ranks the documents the view holds (in), with the
// statistics of those alone.
type index struct {
	*corpus
	view    *tools.View // nil for an index of a list of tools (build)
	version uint64
	in      []bool // by document: the view holds it
	n       float64
	// avg is the mean length of each field over the view's documents.
	avg [numFields]float64
	// catSize is how many documents each category has in the view,
	// cats how many categories have some.
	catSize []float64
	cats    int
	// noSelf is set for a category none of whose tools in the view is
	// the caller's own (doc.self or forSelf).
	noSelf []bool

	// wc keeps the weights of the terms searched (weights), at most
	// maxCachedWeights of them together.
	wmu sync.RWMutex
	wc  map[string][]float64
	wcn int
}

// maxCachedWeights bounds the weights a view keeps (8 MiB): the postings
// of the terms its searches use most, weighed once rather than at each
// search.
const maxCachedWeights = 1 << 20

// forgetWeights drops the weights kept, to be weighed again: after the
// fields' weights or normalization (fieldWeight, fieldB) changed, as
// tuning them does.
func (c *index) forgetWeights() {
	c.wmu.Lock()
	c.wc, c.wcn = nil, 0
	c.wmu.Unlock()
}

// weights returns the postings of t and the weight of each in the view
// (weight), 0 for those the view does not hold; the weights may be
// fewer than the postings, whose others the view does not hold either
// (documents added since). c.mu is held.
func (c *index) weights(t string) ([]posting, []float64) {
	ps := c.postings[t]
	c.wmu.RLock()
	ws, ok := c.wc[t]
	c.wmu.RUnlock()
	if ok {
		return ps, ws
	}
	n := 0
	for i := range ps {
		if c.has(ps[i].doc) {
			n++
		}
	}
	if n == 0 {
		return ps, nil
	}
	idf := c.idf(n)
	ws = make([]float64, len(ps))
	for i := range ps {
		if c.has(ps[i].doc) {
			ws[i] = c.weight(idf, &ps[i])
		}
	}
	if len(ws) <= maxCachedWeights/8 {
		c.wmu.Lock()
		if c.wcn+len(ws) > maxCachedWeights || c.wc == nil {
			c.wc, c.wcn = map[string][]float64{}, 0
		}
		c.wc[t] = ws
		c.wcn += len(ws)
		c.wmu.Unlock()
	}
	return ps, ws
}

// has reports whether the view holds document d.
func (c *index) has(d int32) bool { return int(d) < len(c.in) && c.in[d] }

// hasCat reports whether the view holds documents of category k.
func (c *index) hasCat(k int32) bool { return int(k) < len(c.catSize) && c.catSize[k] > 0 }

// df returns the postings of t and how many of them the view holds.
func (c *index) df(t string) ([]posting, int) {
	ps := c.postings[t]
	n := 0
	for i := range ps {
		if c.has(ps[i].doc) {
			n++
		}
	}
	return ps, n
}

// idf is the inverse document frequency of a term held by df of the
// view's documents.
func (c *index) idf(df int) float64 {
	return math.Log(1 + (c.n-float64(df)+0.5)/(float64(df)+0.5))
}

// weight is p's BM25F contribution: idf × the saturated, weighted,
// length-normalized frequency of its term in its document.
func (c *index) weight(idf float64, p *posting) float64 {
	d := &c.docs[p.doc]
	tf := 0.0
	for f := range numFields {
		if k := p.n[f]; k > 0 {
			norm := 1 - fieldB[f] + fieldB[f]*float64(d.lens[f])/c.avg[f]
			w := fieldWeight[f] / norm
			for range k {
				tf += w
			}
		}
	}
	return idf * tf * (k1 + 1) / (k1 + tf)
}

// docOf returns the view's document of the tool named name.
func (c *index) docOf(name string) (int32, bool) {
	if c.view == nil {
		for i := range c.docs {
			if c.has(int32(i)) && c.docs[i].tool.Name == name {
				return int32(i), true
			}
		}
		return 0, false
	}
	t, ok := c.view.Get(name)
	if !ok || t.Name != name {
		return 0, false
	}
	id, ok := c.byTool[t]
	return id, ok && c.has(id)
}

// before reports whether document a comes before b in a view's order:
// tools by name, then pages by name.
func (c *index) before(a, b int32) bool {
	da, db := &c.docs[a], &c.docs[b]
	if da.page != db.page {
		return db.page
	}
	return da.tool.Name < db.tool.Name
}

func build(ts []*tools.Tool, version uint64) *index {
	co := newCorpus()
	ids := co.add(ts, false, nil)
	return co.viewIndex(nil, version, ids)
}
