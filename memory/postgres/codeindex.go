package postgres

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
)

// codeSets holds principals' binary codes in memory, current as of the
// memory_code_log entry seq.
type codeSets struct {
	mu    sync.Mutex
	quant *memory.Quantizer
	seq   int64
	sets  map[string]*memory.CodeSet
}

// reset drops every set held and makes codes of q from now on.
func (c *codeSets) reset(q *memory.Quantizer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.sets)
	c.quant = q
}

// codeLogCatchUp is how far behind the log a copy catches up entry by
// entry; further behind it drops its sets and reloads them.
const codeLogCatchUp = 50_000

// nearest returns the k ids nearest to code among the principal's codes
// of layers, catching up with the change log first, within tx's snapshot
// (repeatable read).
func (c *codeSets) nearest(ctx context.Context, tx pgx.Tx, principal string, layers []memory.Layer, code []byte, k int) ([]int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var head int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM memory_code_log`).Scan(&head); err != nil {
		return nil, fmt.Errorf("code index: %w", err)
	}
	switch {
	case head-c.seq > codeLogCatchUp:
		clear(c.sets)
		c.seq = head
	case head > c.seq:
		if err := c.catchUp(ctx, tx, head); err != nil {
			return nil, err
		}
	case head < c.seq:
		// The snapshot is older than the copy: scan the snapshot's
		// codes without keeping them.
		set, err := loadSet(ctx, tx, c.quant, principal)
		if err != nil {
			return nil, err
		}
		return set.Nearest(code, layers, k), nil
	}
	set := c.sets[principal]
	if set == nil {
		var err error
		if set, err = loadSet(ctx, tx, c.quant, principal); err != nil {
			return nil, err
		}
		c.sets[principal] = set
	}
	return set.Nearest(code, layers, k), nil
}

func (c *codeSets) catchUp(ctx context.Context, tx pgx.Tx, head int64) error {
	rows, err := tx.Query(ctx, `SELECT l.memory_id, l.principal, k.layer, k.code FROM memory_code_log l
		LEFT JOIN memory_codes k ON k.memory_id = l.memory_id WHERE l.seq > $1 AND l.seq <= $2 ORDER BY l.seq`, c.seq, head)
	if err != nil {
		return fmt.Errorf("code index: %w", err)
	}
	defer rows.Close()
	puts := map[string][]memory.CodeEntry{}
	gone := map[string][]int64{}
	for rows.Next() {
		var id int64
		var principal string
		var layer *string
		var code []byte
		if err := rows.Scan(&id, &principal, &layer, &code); err != nil {
			return fmt.Errorf("code index: %w", err)
		}
		if c.sets[principal] == nil {
			continue
		}
		if layer == nil {
			gone[principal] = append(gone[principal], id)
			continue
		}
		puts[principal] = append(puts[principal], memory.CodeEntry{ID: id, Layer: memory.Layer(*layer), Code: code})
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("code index: %w", err)
	}
	for p, set := range c.sets {
		if len(puts[p]) > 0 || len(gone[p]) > 0 {
			set.Apply(puts[p], gone[p])
		}
	}
	c.seq = head
	return nil
}

func loadSet(ctx context.Context, tx pgx.Tx, q *memory.Quantizer, principal string) (*memory.CodeSet, error) {
	rows, err := tx.Query(ctx, `SELECT memory_id, layer, code FROM memory_codes WHERE principal = $1 ORDER BY memory_id`, principal)
	if err != nil {
		return nil, fmt.Errorf("code index: %w", err)
	}
	defer rows.Close()
	var es []memory.CodeEntry
	for rows.Next() {
		var e memory.CodeEntry
		var layer string
		if err := rows.Scan(&e.ID, &layer, &e.Code); err != nil {
			return nil, fmt.Errorf("code index: %w", err)
		}
		e.Layer = memory.Layer(layer)
		es = append(es, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("code index: %w", err)
	}
	set := memory.NewCodeSet(q, len(es))
	set.Apply(es, nil)
	return set, nil
}
