package memory

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
)

// CodeSet is one principal's binary codes held in memory, searched by
// Hamming distance: the coarse pass of vector recall on a large store.
// It holds them in ascending id order. It is not safe for concurrent use.
type CodeSet struct {
	ids    []int64
	layers []uint8  // index in Layers
	codes  []uint64 // words per code, little-endian, zero-padded
	words  int
}

// NewCodeSet returns an empty set for codes of q, with room for n.
func NewCodeSet(q *Quantizer, n int) *CodeSet {
	words := q.words()
	return &CodeSet{words: words, ids: make([]int64, 0, n), layers: make([]uint8, 0, n), codes: make([]uint64, 0, n*words)}
}

// words is how many 64-bit words one of q's codes is compared by.
func (q *Quantizer) words() int { return (q.bits + 63) / 64 }

// SetBytes is about how much memory a CodeSet of n of q's codes holds.
func (q *Quantizer) SetBytes(n int) int64 { return setBytes(n, q.words()) }

// Len is the number of codes held.
func (cs *CodeSet) Len() int { return len(cs.ids) }

// CodeEntry is one memory's code.
type CodeEntry struct {
	ID    int64
	Layer Layer
	Code  []byte
}

// Append adds the code of memory id, which must be above every id held
// (a set loaded in id order).
func (cs *CodeSet) Append(id int64, layer Layer, code []byte) error {
	l, ok := layerIndex(string(layer))
	if !ok {
		return fmt.Errorf("memory %d has layer %q", id, layer)
	}
	if n := len(cs.ids); n > 0 && id <= cs.ids[n-1] {
		return fmt.Errorf("memory %d appended after %d", id, cs.ids[n-1])
	}
	cs.ids = append(cs.ids, id)
	cs.layers = append(cs.layers, l)
	var buf [8]byte
	for w := 0; w < cs.words; w++ {
		clear(buf[:])
		copy(buf[:], code[min(8*w, len(code)):])
		cs.codes = append(cs.codes, binary.LittleEndian.Uint64(buf[:]))
	}
	return nil
}

// Apply puts entries (replacing a held id's) and removes gone ids.
func (cs *CodeSet) Apply(puts []CodeEntry, gone []int64) {
	es := make([]codeEntry, 0, len(puts))
	for _, p := range puts {
		li, _ := layerIndex(string(p.Layer))
		es = append(es, codeEntry{id: p.ID, layer: li, code: codeWords(p.Code, cs.words)})
	}
	slices.SortFunc(es, func(a, b codeEntry) int { return cmpID(a.id, b.id) })
	es = slices.CompactFunc(es, func(a, b codeEntry) bool { return a.id == b.id })
	gone = slices.Clone(gone)
	slices.Sort(gone)
	cs.apply(es, gone)
}

// Nearest returns the ids of the k codes of layers (all when nil)
// nearest to code, nearest first, ties by id.
func (cs *CodeSet) Nearest(code []byte, layers []Layer, k int) []int64 {
	return cs.nearest(codeWords(code, cs.words), layerMask(layers), k)
}

// codeWords converts a code to the words it is compared by.
func codeWords(code []byte, words int) []uint64 {
	out := make([]uint64, words)
	var buf [8]byte
	for w := range out {
		clear(buf[:])
		copy(buf[:], code[min(8*w, len(code)):])
		out[w] = binary.LittleEndian.Uint64(buf[:])
	}
	return out
}

func layerIndex(l string) (uint8, bool) {
	i := slices.Index(Layers, Layer(l))
	return uint8(i), i >= 0
}

func layerMask(layers []Layer) uint8 {
	var m uint8
	for _, l := range layers {
		if i, ok := layerIndex(string(l)); ok {
			m |= 1 << i
		}
	}
	return m
}

// Bytes is about how much memory the set holds.
func (cs *CodeSet) Bytes() int64 { return setBytes(len(cs.ids), cs.words) }

func setBytes(n, words int) int64 { return int64(n) * int64(8+1+8*words) }

// codeEntry is one code to put into a set.
type codeEntry struct {
	id    int64
	layer uint8
	code  []uint64
}

// apply replaces or inserts puts (ascending ids) and removes gone.
func (cs *CodeSet) apply(puts []codeEntry, gone []int64) {
	var inserts []codeEntry
	for _, e := range puts {
		if i, ok := slices.BinarySearch(cs.ids, e.id); ok {
			cs.layers[i] = e.layer
			copy(cs.codes[i*cs.words:], e.code)
			continue
		}
		inserts = append(inserts, e)
	}
	var drop []int64
	for _, id := range gone {
		if _, ok := slices.BinarySearch(cs.ids, id); ok {
			drop = append(drop, id)
		}
	}
	if len(drop) == 0 && (len(inserts) == 0 || len(cs.ids) == 0 || inserts[0].id > cs.ids[len(cs.ids)-1]) {
		for _, e := range inserts { // new ids come last
			cs.ids = append(cs.ids, e.id)
			cs.layers = append(cs.layers, e.layer)
			cs.codes = append(cs.codes, e.code...)
		}
		return
	}
	// Merge in one pass.
	n := len(cs.ids) - len(drop) + len(inserts)
	ids, layers, codes := make([]int64, 0, n), make([]uint8, 0, n), make([]uint64, 0, n*cs.words)
	i, j, d := 0, 0, 0
	for i < len(cs.ids) || j < len(inserts) {
		if j < len(inserts) && (i == len(cs.ids) || inserts[j].id < cs.ids[i]) {
			ids, layers, codes = append(ids, inserts[j].id), append(layers, inserts[j].layer), append(codes, inserts[j].code...)
			j++
			continue
		}
		if d < len(drop) && drop[d] == cs.ids[i] {
			d++
			i++
			continue
		}
		ids, layers, codes = append(ids, cs.ids[i]), append(layers, cs.layers[i]), append(codes, cs.codes[i*cs.words:(i+1)*cs.words]...)
		i++
	}
	cs.ids, cs.layers, cs.codes = ids, layers, codes
}

// nearest ranks the set's codes of the layers in mask (all when 0) by
// Hamming distance to q and returns the ids of the first k, nearest
// first, ties by id.
func (cs *CodeSet) nearest(q []uint64, mask uint8, k int) []int64 {
	const skip = ^uint16(0)
	n, w := len(cs.ids), cs.words
	dist := make([]uint16, n)
	hist := make([]int, 64*w+1)
	for i := 0; i < n; i++ {
		if mask != 0 && mask&(1<<cs.layers[i]) == 0 {
			dist[i] = skip
			continue
		}
		c := cs.codes[i*w : i*w+w : i*w+w]
		d := 0
		for x, qw := range q {
			d += bits.OnesCount64(qw ^ c[x])
		}
		dist[i] = uint16(d)
		hist[d]++
	}
	// The k-th distance: every code nearer is taken, and at that
	// distance the lowest ids (they come first) fill up to k.
	cut, below := len(hist), 0
	for d, c := range hist {
		if below+c >= k {
			cut = d
			break
		}
		below += c
	}
	atCut := k - below
	type cand struct {
		d  uint16
		id int64
	}
	out := make([]cand, 0, min(k, n))
	for i, d := range dist {
		switch {
		case d == skip:
		case int(d) < cut:
			out = append(out, cand{d, cs.ids[i]})
		case int(d) == cut && atCut > 0:
			out = append(out, cand{d, cs.ids[i]})
			atCut--
		}
	}
	slices.SortFunc(out, func(a, b cand) int {
		if a.d != b.d {
			return int(a.d) - int(b.d)
		}
		return cmpID(a.id, b.id)
	})
	ids := make([]int64, len(out))
	for i, c := range out {
		ids[i] = c.id
	}
	return ids
}
