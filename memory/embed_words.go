package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/codecell/codecell/tools/lexicon"
	"github.com/codecell/codecell/tools/wordvec"
)

// WordsEmbedder is the offline default embedder: a text's vector joins
// two parts, each of unit length before weighting.
//
//   - Meaning (tools/wordvec's GloVe vectors): a smooth-inverse-frequency
//     weighted mean of the text's word vectors (Arora, Liang and Ma 2017:
//     weight a/(a+p(w)), p the word's frequency in GloVe's corpus, so
//     frequent words weigh little), without the direction all word
//     vectors share. Texts that say the same thing in other words
//     ("can I bring my puppy to work", "dogs are allowed in the office")
//     are close. A word the table lacks is looked up by its dictionary
//     form, then by its stem.
//   - Form (HashEmbedder): hashed words, word pairs and character
//     n-grams, which match the same words, word forms, names, codes and
//     typos the table knows nothing of.
//
// The cosine of two vectors is the weighted sum of the parts' cosines
// (wordsMeaningWeight for the meaning). It needs no network and no
// model file, and is deterministic across runs and machines.
type WordsEmbedder struct {
	hash    *HashEmbedder
	table   func() *wordvec.Table
	meaning float64 // share of the cosine from the meaning part
}

// Dimensions of WordsEmbedder's parts: the hash part, and the meaning
// part (the table's 100, padded to a multiple of 8).
const (
	wordsHashDims    = DefaultDimensions
	wordsMeaningDims = 104
)

// wordsMeaningWeight is the share of the cosine that comes from the
// meaning part (tuned on the dev paraphrases, see docs/benchmarks.md).
const wordsMeaningWeight = 0.7

// NewWordsEmbedder returns the offline default embedder. It starts
// decoding the word table in the background (once a process), so that a
// store's first recall does not wait for it.
func NewWordsEmbedder() *WordsEmbedder {
	go wordvec.Default()
	return &WordsEmbedder{hash: NewHashEmbedder(wordsHashDims), table: wordvec.Default, meaning: wordsMeaningWeight}
}

// Name implements Embedder. The version changes whenever the features,
// the weights or the table do.
func (e *WordsEmbedder) Name() string {
	return fmt.Sprintf("codecell-words-v1-%d", e.Dimensions())
}

// Dimensions implements Embedder.
func (e *WordsEmbedder) Dimensions() int { return wordsHashDims + wordsMeaningDims }

// Embed implements Embedder. It never fails except on a cancelled context.
func (e *WordsEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	t := e.table()
	for i, text := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		v := make([]float32, e.Dimensions())
		h := e.hash.vector(text)
		if normalize(h) {
			scale(h, math.Sqrt(1-e.meaning))
		}
		copy(v, h)
		m := v[wordsHashDims:]
		if meaningVector(t, text, m) && normalize(m) {
			scale(m, math.Sqrt(e.meaning))
		}
		out[i] = v
	}
	return out, nil
}

func scale(v []float32, f float64) {
	for i := range v {
		v[i] = float32(float64(v[i]) * f)
	}
}

// meaningVector adds the SIF-weighted vectors of text's content words
// into dst (zeroed, at least the table's dimensions long), without the
// table's common direction; false when no word was found. A word the
// table lacks is looked up by its dictionary form, then by its stem.
func meaningVector(t *wordvec.Table, text string, dst []float32) bool {
	words := tokenize(text)
	words = slices.DeleteFunc(words, func(w string) bool { return stopwords[w] })
	return t.Sentence(words, otherForms, dst)
}

// otherForms are the forms of a word to look up when the table lacks
// it: its dictionary form (lexicon.Base), its stem.
func otherForms(w string) []string {
	var out []string
	if b, ok := lexicon.Base(w); ok {
		out = append(out, b)
	}
	if s := stem(w); s != w {
		out = append(out, s)
	}
	return out
}

var _ Embedder = (*WordsEmbedder)(nil)

// Limits of a query word's distributional neighbours (Related).
const (
	neighboursPerWord = 3
	neighboursMinCos  = 0.6
	neighboursMaxRank = 30000
)

// neighbours are the words whose GloVe vectors are closest to w's
// (tools/wordvec), among the table's more frequent words, weighted by
// their cosine: the words used in the same contexts ("puppy": dog, pet;
// "money": cash, funds). Finding them scans the table (about 3 ms a
// word), so they are kept for the words last asked about.
func neighbours(w string) []RelatedTerm {
	neighbourCache.Lock()
	out, ok := neighbourCache.m[w]
	neighbourCache.Unlock()
	if ok {
		return out
	}
	t := wordvec.Default()
	base := w
	if _, _, ok := t.Lookup(w); !ok {
		if b, ok := lexicon.Base(w); ok {
			base = b
		}
	}
	for _, n := range t.Neighbours(base, neighboursPerWord, neighboursMinCos, neighboursMaxRank) {
		out = append(out, RelatedTerm{Word: n.Word, Weight: n.Cosine})
	}
	neighbourCache.Lock()
	if len(neighbourCache.m) >= neighbourCacheSize {
		clear(neighbourCache.m)
	}
	neighbourCache.m[w] = out
	neighbourCache.Unlock()
	return out
}

// neighbourCache holds the neighbours of the words last asked about, up
// to neighbourCacheSize words (then it starts again); they never change.
var neighbourCache = struct {
	sync.Mutex
	m map[string][]RelatedTerm
}{m: map[string][]RelatedTerm{}}

const neighbourCacheSize = 20000

// previousDefault is the name of the offline default embedder before
// WordsEmbedder (HashEmbedder of DefaultDimensions).
const previousDefault = "codecell-hash-v1-384"

// UpgradesOffline says whether a store whose vectors were made by the
// embedder named stored should rebuild them with e when it opens,
// without being asked: e is the offline default and stored is an
// earlier offline default (HashEmbedder at DefaultDimensions, or an
// earlier version of WordsEmbedder). Rebuilding needs no network and
// takes about a second per 10,000 memories; any other mismatch waits
// for `codecell memory reindex`, as the user chose both embedders.
func UpgradesOffline(stored string, e Embedder) bool {
	w, ok := e.(*WordsEmbedder)
	if !ok || stored == w.Name() {
		return false
	}
	return stored == previousDefault || strings.HasPrefix(stored, "codecell-words-")
}

// offlineUpgrader is what UpgradeOffline needs of a store.
type offlineUpgrader interface {
	EmbedderStatus(ctx context.Context) (EmbedderStatus, error)
	Reindex(ctx context.Context, e Embedder) (ReindexReport, error)
}

// UpgradeOffline rebuilds every vector of s with e when the stored ones
// are an earlier offline default's (UpgradesOffline), as a store opens:
// a store made by an earlier version keeps working with the new
// default, and says so in log. A failed rebuild changes nothing and
// leaves the mismatch to report; only the context's end is an error.
func UpgradeOffline(ctx context.Context, s offlineUpgrader, e Embedder, log *slog.Logger) error {
	st, err := s.EmbedderStatus(ctx)
	if err == nil || !errors.Is(err, ErrEmbedderMismatch) || !UpgradesOffline(st.Stored, e) {
		return nil
	}
	log.Info("re-embedding every memory with the new offline embedder (once)", "from", st.Stored, "to", e.Name())
	if _, err := s.Reindex(ctx, e); err != nil {
		if ctx.Err() != nil {
			return err
		}
		log.Warn("re-embedding failed; memory operations disabled until `codecell memory reindex`", "err", err)
	}
	return nil
}
