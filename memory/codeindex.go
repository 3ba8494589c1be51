package memory

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"sync"
)

// codeLogKeep is how many memory_code_log entries Prune keeps: an
// in-process copy further behind than that reloads.
const codeLogKeep = 100_000

// DefaultCodeIndexBytes is the default bound of Config.CodeIndexBytes:
// about 2.6 million memories with 384-dimensional vectors.
const DefaultCodeIndexBytes = 256 << 20

// codeIndex is an in-process copy of the binary codes (memory_codes), one
// set per principal, that the coarse vector pass scans: 100k codes of 768
// bits take about 1.5 ms to rank by Hamming distance in memory, where
// reading them from SQLite alone costs 10–20 ms (every write, such as the
// access that each recall records, makes SQLite drop its page cache).
//
// The copy follows the database through memory_code_log, which triggers
// fill with every change of memory_codes, from this process or another:
// before each use it applies the entries after the last one it saw, read in
// the caller's transaction. It reloads when it fell behind the log's
// pruning or too many entries are waiting, and drops everything when the
// quantizer changes (Reindex). A principal's set is loaded on first use;
// sets that would not fit in the byte limit are not kept (the caller then
// ranks in SQL), and the least recently used are dropped to make room.
//
// Rankings are the same as the SQL scan's: by distance, then id.
type codeIndex struct {
	limit int64 // bytes; negative: keep nothing

	mu    sync.Mutex
	quant *Quantizer // what made the codes held
	seq   int64      // the last memory_code_log entry applied
	sets  map[string]*CodeSet
	used  map[string]uint64 // when each set was last used, by clock
	bytes int64
	clock uint64
}

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

func newCodeIndex(limit int64) *codeIndex {
	return &codeIndex{limit: limit, sets: map[string]*CodeSet{}, used: map[string]uint64{}}
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

// nearest returns the ids of the k codes of layers (all when nil) nearest to
// code by Hamming distance, nearest first, ties by id. ok is false when the
// principal's codes are not held: the caller ranks in SQL.
func (ci *codeIndex) nearest(ctx context.Context, tx *sql.Tx, q *Quantizer, principal string, layers []Layer, code []byte, k int) (ids []int64, ok bool, err error) {
	if ci.limit < 0 {
		return nil, false, nil
	}
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if ci.quant != q {
		ci.dropAll()
		ci.quant = q
	}
	var head int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM memory_code_log`).Scan(&head); err != nil {
		return nil, false, fmt.Errorf("code index: %w", err)
	}
	set := ci.sets[principal]
	switch {
	case head > ci.seq:
		if err := ci.catchUp(ctx, tx, head); err != nil {
			return nil, false, err
		}
		set = ci.sets[principal]
	case head < ci.seq && set == nil:
		// This transaction began before changes the copy holds: it
		// cannot load a set that matches the rest.
		return nil, false, nil
	}
	// head < ci.seq with a set: the copy is newer than the transaction.
	// Codes it lacks were deleted since, and those it has in excess are
	// dropped when re-scoring finds no vector for them.
	if set == nil {
		if set, err = ci.load(ctx, tx, principal); err != nil || set == nil {
			return nil, false, err
		}
	}
	ci.clock++
	ci.used[principal] = ci.clock
	return set.Nearest(code, layers, k), true, nil
}

func (ci *codeIndex) dropAll() {
	clear(ci.sets)
	clear(ci.used)
	ci.bytes = 0
}

// catchUp applies the log entries up to head to the sets held. On error it
// drops them: they may be half updated.
func (ci *codeIndex) catchUp(ctx context.Context, tx *sql.Tx, head int64) (err error) {
	from := ci.seq
	ci.seq = head
	defer func() {
		if err != nil {
			ci.dropAll()
		}
	}()
	if len(ci.sets) == 0 {
		return nil
	}
	var first int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(min(seq), 0) FROM memory_code_log`).Scan(&first); err != nil {
		return fmt.Errorf("code index: %w", err)
	}
	if first > from+1 {
		ci.dropAll() // entries we needed were pruned
		return nil
	}
	var held int64
	for _, set := range ci.sets {
		held += int64(set.Len())
	}
	most := max(1024, held/8)
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT memory_id FROM memory_code_log WHERE seq > ? AND seq <= ? LIMIT ?`, from, head, most+1)
	if err != nil {
		return fmt.Errorf("code index: %w", err)
	}
	var changed []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("code index: %w", err)
		}
		changed = append(changed, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("code index: %w", err)
	}
	if int64(len(changed)) > most {
		ci.dropAll() // reloading is cheaper
		return nil
	}
	slices.Sort(changed)
	puts := map[string][]CodeEntry{}
	found := map[int64]bool{}
	for start := 0; start < len(changed); start += 500 {
		chunk := changed[start:min(start+500, len(changed))]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := tx.QueryContext(ctx, `SELECT memory_id, principal, layer, code FROM memory_codes WHERE memory_id IN (`+placeholders(len(chunk))+`) ORDER BY memory_id`, args...)
		if err != nil {
			return fmt.Errorf("code index: %w", err)
		}
		for rows.Next() {
			var e CodeEntry
			var principal string
			if err := rows.Scan(&e.ID, &principal, &e.Layer, &e.Code); err != nil {
				rows.Close()
				return fmt.Errorf("code index: %w", err)
			}
			found[e.ID] = true
			if ci.sets[principal] == nil {
				continue
			}
			if !slices.Contains(Layers, e.Layer) {
				rows.Close()
				return fmt.Errorf("code index: memory %d has layer %q", e.ID, e.Layer)
			}
			puts[principal] = append(puts[principal], e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("code index: %w", err)
		}
	}
	var gone []int64
	for _, id := range changed {
		if !found[id] {
			gone = append(gone, id)
		}
	}
	for principal, set := range ci.sets {
		before := set.Bytes()
		set.Apply(puts[principal], gone)
		ci.bytes += set.Bytes() - before
	}
	return nil
}

// load reads the principal's codes, or returns nil when they would not fit.
func (ci *codeIndex) load(ctx context.Context, tx *sql.Tx, principal string) (*CodeSet, error) {
	n, err := vectorCount(ctx, tx, principal)
	if err != nil {
		return nil, err
	}
	need := ci.quant.SetBytes(n)
	if need > ci.limit {
		return nil, nil
	}
	for ci.bytes+need > ci.limit && len(ci.sets) > 0 {
		var lru string
		var oldest *CodeSet
		for p, set := range ci.sets {
			if oldest == nil || ci.used[p] < ci.used[lru] {
				lru, oldest = p, set
			}
		}
		ci.bytes -= oldest.Bytes()
		delete(ci.sets, lru)
		delete(ci.used, lru)
	}
	set := NewCodeSet(ci.quant, n)
	rows, err := tx.QueryContext(ctx, `SELECT memory_id, layer, code FROM memory_codes WHERE principal = ? ORDER BY memory_id`, principal)
	if err != nil {
		return nil, fmt.Errorf("code index: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var layer string
		var code sql.RawBytes
		if err := rows.Scan(&id, &layer, &code); err != nil {
			return nil, fmt.Errorf("code index: %w", err)
		}
		if err := set.Append(id, Layer(layer), code); err != nil {
			return nil, fmt.Errorf("code index: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("code index: %w", err)
	}
	ci.sets[principal] = set
	ci.bytes += set.Bytes()
	return set, nil
}

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
