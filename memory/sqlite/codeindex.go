package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"fmt"
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
	quant *memory.Quantizer // what made the codes held
	seq   int64             // the last memory_code_log entry applied
	sets  map[string]*memory.CodeSet
	used  map[string]uint64 // when each set was last used, by clock
	bytes int64
	clock uint64
}

func newCodeIndex(limit int64) *codeIndex {
	return &codeIndex{limit: limit, sets: map[string]*memory.CodeSet{}, used: map[string]uint64{}}
}

// nearest returns the ids of the k codes of layers (all when nil) nearest to
// code by Hamming distance, nearest first, ties by id. ok is false when the
// principal's codes are not held: the caller ranks in SQL.
func (ci *codeIndex) nearest(ctx context.Context, tx *sql.Tx, q *memory.Quantizer, principal string, layers []memory.Layer, code []byte, k int) (ids []int64, ok bool, err error) {
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
	puts := map[string][]memory.CodeEntry{}
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
			var e memory.CodeEntry
			var principal string
			if err := rows.Scan(&e.ID, &principal, &e.Layer, &e.Code); err != nil {
				rows.Close()
				return fmt.Errorf("code index: %w", err)
			}
			found[e.ID] = true
			if ci.sets[principal] == nil {
				continue
			}
			if !slices.Contains(memory.Layers, e.Layer) {
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
func (ci *codeIndex) load(ctx context.Context, tx *sql.Tx, principal string) (*memory.CodeSet, error) {
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
		var oldest *memory.CodeSet
		for p, set := range ci.sets {
			if oldest == nil || ci.used[p] < ci.used[lru] {
				lru, oldest = p, set
			}
		}
		ci.bytes -= oldest.Bytes()
		delete(ci.sets, lru)
		delete(ci.used, lru)
	}
	set := memory.NewCodeSet(ci.quant, n)
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
		if err := set.Append(id, memory.Layer(layer), code); err != nil {
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
