package memory

import (
	"time"
)

// Quantizer turns a unit vector into a binary code whose Hamming distances
// follow the vectors' angles: bit i is the sign of the projection on a
// pseudo-random direction (sign random projection, "SimHash"; Charikar
// 2002). Two vectors at angle θ differ in each bit with probability θ/π, so
// the Hamming distance ranks neighbours like cosine does, coarsely. Random
// directions, unlike the raw signs of the coordinates, also work for sparse
// vectors such as the hashing embedder's.
//
// The directions are those of a structured random rotation (randomized
// Hadamard transform, as in fast Johnson–Lindenstrauss transforms): the
// vector, zero-padded to a power of two m, goes through two rounds of
// random sign flips and a Walsh–Hadamard transform per block of m bits.
// That costs O(m log m) per block instead of O(m·dims) for a dense random
// matrix. The code has twice as many bits as the vector has dimensions (at
// most 1024): measured recall@10 of the coarse pass is much better with
// 2·dims bits than with dims.
//
// It is the same construction for every backend, so that codes copied
// from one store serve another.
type Quantizer struct {
	dims, bits, m int
	signs         [][2][]float32 // per block, the two rounds of ±1 flips
}

// quantizerName identifies the construction below; a change of it makes
// Open rebuild the codes.
const quantizerName = "srht2-v1"

// NewQuantizer returns the quantizer of vectors of dims dimensions.
func NewQuantizer(dims int) *Quantizer {
	bits := min(2*dims, 1024)
	m := 1
	for m < dims {
		m *= 2
	}
	q := &Quantizer{dims: dims, bits: bits, m: m}
	state := uint64(0x9e3779b97f4a7c15) ^ uint64(dims)
	for b := 0; b*m < bits; b++ {
		var blk [2][]float32
		for round := range blk {
			row := make([]float32, m)
			var r uint64
			for j := range row {
				if j%64 == 0 {
					state += 0x9e3779b97f4a7c15
					r = mix(state)
				}
				row[j] = float32(int(r&1)*2 - 1)
				r >>= 1
			}
			blk[round] = row
		}
		q.signs = append(q.signs, blk)
	}
	return q
}

// Name identifies the construction; codes made by another are rebuilt.
func (q *Quantizer) Name() string { return quantizerName }

// Code returns the binary code of the unit vector v, bit i at byte i/8,
// bit i%8 (the layout of sqlite-vec's bit vectors).
func (q *Quantizer) Code(v []float32) []byte {
	out := make([]byte, q.bits/8)
	buf := make([]float32, q.m)
	for b, blk := range q.signs {
		clear(buf)
		copy(buf, v)
		for round := range blk {
			for j, s := range blk[round] {
				buf[j] *= s
			}
			fwht(buf)
		}
		for j := 0; j < q.m; j++ {
			i := b*q.m + j
			if i >= q.bits {
				break
			}
			if buf[j] > 0 {
				out[i/8] |= 1 << (i % 8)
			}
		}
	}
	return out
}

// fwht is the in-place (unnormalized) Walsh–Hadamard transform of x, whose
// length is a power of two. The first two stages are unrolled; every stage
// adds and subtracts the same pairs in the same order as the textbook loop,
// so the result is the same to the bit.
func fwht(x []float32) {
	n := len(x)
	for i := 0; i+1 < n; i += 2 {
		a, b := x[i], x[i+1]
		x[i], x[i+1] = a+b, a-b
	}
	for i := 0; i+3 < n; i += 4 {
		a0, a1, b0, b1 := x[i], x[i+1], x[i+2], x[i+3]
		x[i], x[i+1], x[i+2], x[i+3] = a0+b0, a1+b1, a0-b0, a1-b1
	}
	for h := 4; h < n; h *= 2 {
		for i := 0; i < n; i += 2 * h {
			lo, hi := x[i:i+h], x[i+h:i+2*h]
			for j := range lo {
				a, b := lo[j], hi[j]
				lo[j], hi[j] = a+b, a-b
			}
		}
	}
}

// EmbedderStatus describes the embedder in use and whether it matches the
// stored vectors.
type EmbedderStatus struct {
	Name       string `json:"name"`
	Dimensions int    `json:"dimensions"`
	// Stored and StoredDimensions name the embedder that built the stored
	// vectors.
	Stored           string `json:"stored"`
	StoredDimensions int    `json:"stored_dimensions"`
	// Error is set when they differ: memory operations fail until Reindex.
	Error string `json:"error,omitempty"`
}

// ReindexReport says what Reindex did.
type ReindexReport struct {
	Memories   int           `json:"memories"`
	Embedder   string        `json:"embedder"`
	Dimensions int           `json:"dimensions"`
	Previous   string        `json:"previous"`
	Duration   time.Duration `json:"duration_ns"`
}
