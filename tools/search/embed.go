package search

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"

	"github.com/codecell/codecell/tools/lexicon"
)

// Embedder turns texts into vectors, the same text into the same vector
// (a *memory.OpenAIEmbedder is one). With one (Index.SetEmbedder), a
// search also ranks the tools by how close their embeddings are to the
// query's, and fuses that ranking with the one of words, as memory
// recall fuses its vector and keyword lists. The lexical ranking needs
// none and stands on its own; an embedder that fails leaves a search to
// it.
type Embedder interface {
	Name() string
	Dimensions() int
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Fusion of the embeddings' ranking with the lexical one, over the first
// embedDepth of each: a tool's lexical score beside the best one's, and
// its similarity to the query beside the closest tool's, at embedWeight.
const (
	embedWeight = 0.75
	embedDepth  = 50
	// lexicalFloor is the weight of a lexical hit that matches none of
	// the query's own words; one that matches them all weighs 1.
	lexicalFloor = 0.25
)

// SetEmbedder makes searches use e as one more signal (nil: none). A
// tool's vector is made on the first search whose view holds it, and kept
// with the catalogue's index; log hears of
// an embedder that fails (nil discards).
func (ix *Index) SetEmbedder(e Embedder, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ix.mu.Lock()
	ix.emb, ix.log = e, log.With("component", "search")
	ix.mu.Unlock()
}

func (ix *Index) embedder() (Embedder, *slog.Logger) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.emb, ix.log
}

// embedText is what a tool's embedding is made of: its name in words,
// its summary and the first sentence of its description.
func embedText(d *doc) string {
	t := d.tool
	lead, _ := lexicon.Lead(lexicon.Clean(t.Description))
	return strings.Join(lexicon.Words(t.Name), " ") + ". " + lexicon.Clean(t.Summary) + " " + lead
}

// vectors returns the unit embeddings of the corpus's documents, by
// document, making those of the view's documents that have none yet with
// e. Only the view's may be read: others may be written meanwhile. c.mu
// is not held.
func (c *index) vectors(ctx context.Context, e Embedder) ([][]float32, error) {
	c.vecMu.Lock()
	defer c.vecMu.Unlock()
	if c.vecName != e.Name() {
		c.vecs, c.vecName = nil, e.Name()
	}
	c.mu.RLock()
	if n := len(c.docs); len(c.vecs) < n {
		c.vecs = append(c.vecs, make([][]float32, n-len(c.vecs))...)
	}
	var need []int32
	var texts []string
	for i, in := range c.in {
		if in && c.vecs[i] == nil {
			need = append(need, int32(i))
			texts = append(texts, embedText(&c.docs[i]))
		}
	}
	c.mu.RUnlock()
	if len(need) > 0 {
		vs, err := embedUnit(ctx, e, texts)
		if err != nil {
			return nil, err
		}
		for j, id := range need {
			c.vecs[id] = vs[j]
		}
	}
	return c.vecs, nil
}

// embedUnit embeds texts with e and scales each vector to unit length.
func embedUnit(ctx context.Context, e Embedder, texts []string) ([][]float32, error) {
	vs, err := e.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embedder %s: %w", e.Name(), err)
	}
	if len(vs) != len(texts) {
		return nil, fmt.Errorf("embedder %s returned %d vectors for %d texts", e.Name(), len(vs), len(texts))
	}
	for _, v := range vs {
		if len(v) != e.Dimensions() {
			return nil, fmt.Errorf("embedder %s returned a vector of %d dimensions, want %d", e.Name(), len(v), e.Dimensions())
		}
		var sum float64
		for _, x := range v {
			sum += float64(x) * float64(x)
		}
		if sum > 0 && !math.IsInf(sum, 0) && !math.IsNaN(sum) {
			inv := float32(1 / math.Sqrt(sum))
			for i := range v {
				v[i] *= inv
			}
		}
	}
	return vs, nil
}

// fuseEmbeddings merges the lexical ranking (best first) with the
// documents closest to the query's embedding, each by its score beside
// its list's best, a lexical hit also by its match; it returns the fused ranking, or the lexical one unchanged when
// the embedder fails.
func (ix *Index) fuseEmbeddings(ctx context.Context, c *index, text string, cat int32, lexical []scored, limit int) []scored {
	e, log := ix.embedder()
	if e == nil {
		return lexical
	}
	vecs, err := c.vectors(ctx, e)
	var q [][]float32
	if err == nil {
		q, err = embedUnit(ctx, e, []string{text})
	}
	if err != nil {
		log.Warn("tool search without embeddings", "err", err)
		return lexical
	}
	type cand struct {
		doc int32
		sim float32
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	var near []cand
	for i, in := range c.in {
		if !in || cat >= 0 && c.docs[i].cat != cat {
			continue
		}
		v := vecs[i]
		var s float32
		for j := range v {
			s += v[j] * q[0][j]
		}
		near = append(near, cand{int32(i), s})
	}
	slices.SortFunc(near, func(a, b cand) int {
		switch {
		case a.sim > b.sim:
			return -1
		case a.sim < b.sim:
			return 1
		}
		if c.before(a.doc, b.doc) {
			return -1
		}
		return 1
	})
	near = near[:min(len(near), embedDepth)]
	// Below half the best similarity is noise, whatever the model's
	// scale of cosines.
	if len(near) > 0 {
		floor := near[0].sim / 2
		near = slices.DeleteFunc(near, func(n cand) bool { return n.sim <= 0 || n.sim < floor })
	}
	// The order is the fused one; a hit's score stays that of its words
	// (0 for a tool found by its embedding alone, whose match is low).
	// Each signal counts by its score beside its list's best: a lexical
	// hit also by how much of the query its words match, so that one
	// matching only the verb leaves the order to the embeddings.
	fused := map[int32]float64{}
	var out []scored
	lex := lexical[:min(len(lexical), embedDepth)]
	for _, s := range lex {
		fused[s.doc] = (lexicalFloor + (1-lexicalFloor)*s.match) * s.score / lex[0].score
		out = append(out, s)
	}
	for _, n := range near {
		if _, ok := fused[n.doc]; !ok {
			out = append(out, scored{doc: n.doc, conf: Low})
		}
		fused[n.doc] += embedWeight * float64(n.sim/near[0].sim)
	}
	slices.SortStableFunc(out, func(a, b scored) int {
		switch fa, fb := fused[a.doc], fused[b.doc]; {
		case fa > fb:
			return -1
		case fa < fb:
			return 1
		}
		return strings.Compare(c.docs[a.doc].tool.Name, c.docs[b.doc].tool.Name)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}
