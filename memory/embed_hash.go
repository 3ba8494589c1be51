package memory

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// HashEmbedder is the offline default embedder: it needs no network and no
// model files. A text becomes a bag of features — stemmed words, pairs of
// adjacent words, and character n-grams of each word — each hashed to a
// signed coordinate (the "hashing trick"), weighted, summed and normalized.
// It is deterministic across runs, processes and machines.
//
// It captures shared words, shared word forms (deploy, deployed,
// deployment) and shared spelling fragments, not meaning: texts that say
// the same thing in different words are far apart. Hybrid recall makes up
// part of that with BM25; an OpenAI-compatible model does better.
type HashEmbedder struct {
	dims int
}

// NewHashEmbedder returns a HashEmbedder producing vectors of dims values
// (a multiple of 8; DefaultDimensions is a good size).
func NewHashEmbedder(dims int) *HashEmbedder {
	return &HashEmbedder{dims: dims}
}

// Feature weights: words carry the meaning; n-grams match word forms and
// typos; bigrams reward phrases.
const (
	hashWordWeight   = 1.0
	hashBigramWeight = 0.5
	hashGramWeight   = 1.0 // shared by all n-grams of one word
)

// Name implements Embedder. The version changes whenever the features do.
func (h *HashEmbedder) Name() string { return fmt.Sprintf("codecell-hash-v1-%d", h.dims) }

// Dimensions implements Embedder.
func (h *HashEmbedder) Dimensions() int { return h.dims }

// Embed implements Embedder. It never fails except on a cancelled context.
func (h *HashEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = h.vector(t)
	}
	return out, nil
}

func (h *HashEmbedder) vector(text string) []float32 {
	v := make([]float32, h.dims)
	words := tokenize(text)
	prev := ""
	var gram []byte
	for _, w := range words {
		if stopwords[w] {
			prev = ""
			continue
		}
		st := stem(w)
		h.add(v, "w", st, "", hashWordWeight)
		if prev != "" {
			h.add(v, "b", prev, st, hashBigramWeight)
		}
		prev = st
		// Character n-grams (3 and 4) of the word with boundary marks.
		gram = append(gram[:0], '<')
		gram = append(gram, w...)
		gram = append(gram, '>')
		if len(gram) > 40 {
			continue
		}
		n := 0
		for k := 3; k <= 4; k++ {
			if len(gram) >= k {
				n += len(gram) - k + 1
			}
		}
		if n == 0 {
			continue
		}
		wgt := float32(hashGramWeight / float64(n))
		for k := 3; k <= 4; k++ {
			for i := 0; i+k <= len(gram); i++ {
				h.addBytes(v, gram[i:i+k], wgt)
			}
		}
	}
	return v
}

// fnv-1a, 64 bit.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// mix finalizes a hash so that its low and high bits are both usable
// (splitmix64's finalizer).
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (h *HashEmbedder) add(v []float32, kind, a, b string, w float32) {
	x := fnvString(fnvOffset, kind)
	x = fnvString(x, "|")
	x = fnvString(x, a)
	if b != "" {
		x = fnvString(x, " ")
		x = fnvString(x, b)
	}
	h.put(v, mix(x), w)
}

func (h *HashEmbedder) addBytes(v []float32, g []byte, w float32) {
	x := uint64(fnvOffset)
	x ^= 'g'
	x *= fnvPrime
	for _, c := range g {
		x ^= uint64(c)
		x *= fnvPrime
	}
	h.put(v, mix(x), w)
}

func (h *HashEmbedder) put(v []float32, x uint64, w float32) {
	i := int(x % uint64(h.dims))
	if x>>63 == 1 {
		w = -w
	}
	v[i] += w
}

// tokenize splits text into lower-case words of letters and digits.
func tokenize(text string) []string {
	var out []string
	start := -1
	lower := true
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
				lower = true
			}
			if r >= utf8.RuneSelf || ('A' <= r && r <= 'Z') {
				lower = false
			}
			continue
		}
		if start >= 0 {
			out = append(out, word(text[start:i], lower))
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, word(text[start:], lower))
	}
	return out
}

func word(s string, lower bool) string {
	if lower {
		return s
	}
	return strings.ToLower(s)
}

// stopwords are dropped from vectors and keyword queries: they match
// almost everything and mean little.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are aren as at
	be because been before being below between both but by can cannot could couldn did didn do does doesn
	doing don down during each few for from further had hadn has hasn have haven having he her here hers
	herself him himself his how i if in into is isn it its itself just let me more most mustn my myself
	no nor not of off on once only or other ought our ours ourselves out over own same shan she should
	shouldn so some such than that the their theirs them themselves then there these they this those
	through to too under until up very was wasn we were weren what when where which while who whom why
	will with won would wouldn you your yours yourself yourselves s t d ll m re ve y also get got
	whats thing things something anything way`) {
		m[w] = true
	}
	return m
}()
