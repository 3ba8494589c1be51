package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/codecell/codecell/tools"
)

// Keys of the meta table that describe the stored vectors.
const (
	metaEmbedder  = "embedder"
	metaDims      = "embedder_dims"
	metaQuantizer = "quantizer"
)

// initVectors compares the configured embedder with the one recorded for
// the stored vectors and rebuilds the binary codes when the quantizer
// changed. A read-only store writes nothing: it takes the configured
// embedder for an empty store without recording it, and scans vectors
// exactly when its codes are stale.
func (s *Store) initVectors(ctx context.Context) error {
	s.vmu.Lock()
	defer s.vmu.Unlock()
	txn := s.write
	if s.w == nil {
		txn = s.read
	}
	return txn(ctx, func(tx *sql.Tx) error {
		name, ok, err := getMeta(ctx, tx, metaEmbedder)
		if err != nil {
			return err
		}
		dimsStr, _, err := getMeta(ctx, tx, metaDims)
		if err != nil {
			return err
		}
		if !ok {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM memories`).Scan(&n); err != nil {
				return fmt.Errorf("count memories: %w", err)
			}
			if n > 0 {
				s.vecOK = fmt.Errorf("%w: the store holds %d memories but no record of the embedder that built their vectors; run `codecell memory reindex`", memory.ErrEmbedderMismatch, n)
				return nil
			}
			if s.w == nil {
				s.quant, s.vecOK = memory.NewQuantizer(s.emb.Dimensions()), nil
				return nil
			}
			return s.adoptEmbedder(ctx, tx, s.emb)
		}
		dims, _ := strconv.Atoi(dimsStr)
		if name != s.emb.Name() || dims != s.emb.Dimensions() {
			s.vecOK = fmt.Errorf("%w: the store's vectors were built by %s (%d dimensions) but the configured embedder is %s (%d dimensions); vectors of different embedders cannot be compared: configure %s again, or run `codecell memory reindex` to rebuild every vector with %s",
				memory.ErrEmbedderMismatch, name, dims, s.emb.Name(), s.emb.Dimensions(), name, s.emb.Name())
			s.log.Warn("embedder mismatch; memory operations disabled until reindex", "stored", name, "stored_dims", dims, "configured", s.emb.Name(), "configured_dims", s.emb.Dimensions())
			return nil
		}
		s.quant = memory.NewQuantizer(dims)
		qn, _, err := getMeta(ctx, tx, metaQuantizer)
		if err != nil {
			return err
		}
		if qn != s.quant.Name() && s.w == nil {
			s.codesStale = true
		} else if qn != s.quant.Name() {
			s.log.Info("rebuilding binary codes", "from", qn, "to", s.quant.Name())
			if err := s.rebuildCodes(ctx, tx); err != nil {
				return err
			}
		}
		s.vecOK = nil
		return nil
	})
}

// adoptEmbedder records e as the embedder of the (empty or rebuilt)
// vectors and drops the codes of the previous one.
func (s *Store) adoptEmbedder(ctx context.Context, tx *sql.Tx, e memory.Embedder) error {
	q := memory.NewQuantizer(e.Dimensions())
	if _, err := tx.ExecContext(ctx, `DELETE FROM memory_codes`); err != nil {
		return fmt.Errorf("clear binary codes: %w", err)
	}
	for k, v := range map[string]string{metaEmbedder: e.Name(), metaDims: strconv.Itoa(e.Dimensions()), metaQuantizer: q.Name()} {
		if err := setMeta(ctx, tx, k, v); err != nil {
			return err
		}
	}
	s.emb, s.quant, s.vecOK = e, q, nil
	return nil
}

// rebuildCodes recomputes every binary code from the stored vectors.
func (s *Store) rebuildCodes(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM memory_codes`); err != nil {
		return fmt.Errorf("clear binary codes: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT memory_id, principal, layer, embedding FROM memory_vectors ORDER BY memory_id`)
	if err != nil {
		return fmt.Errorf("read vectors: %w", err)
	}
	type item struct {
		id        int64
		principal string
		layer     string
		code      []byte
	}
	var items []item
	var buf []float32
	for rows.Next() {
		var it item
		var blob []byte
		if err := rows.Scan(&it.id, &it.principal, &it.layer, &blob); err != nil {
			rows.Close()
			return fmt.Errorf("read vectors: %w", err)
		}
		if buf, err = memory.DecodeVector(blob, buf); err != nil {
			rows.Close()
			return fmt.Errorf("memory %d: %w", it.id, err)
		}
		it.code = s.quant.Code(buf)
		items = append(items, it)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read vectors: %w", err)
	}
	for _, it := range items {
		if err := insertCode(ctx, tx, it.id, it.principal, it.layer, it.code); err != nil {
			return err
		}
	}
	return setMeta(ctx, tx, metaQuantizer, s.quant.Name())
}

// insertCode stores (or replaces) the binary code of memory id.
func insertCode(ctx context.Context, tx *sql.Tx, id int64, principal, layer string, code []byte) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO memory_codes (memory_id, principal, layer, code) VALUES (?, ?, ?, ?)
		ON CONFLICT (memory_id) DO UPDATE SET principal = excluded.principal, layer = excluded.layer, code = excluded.code`,
		id, principal, layer, code); err != nil {
		return fmt.Errorf("index vector of memory %d: %w", id, err)
	}
	return nil
}

// EmbedderStatus reports the configured and the stored embedder. Its error
// (nil when they match) wraps ErrEmbedderMismatch; a server that wants to
// refuse to start on a mismatch returns it.
func (s *Store) EmbedderStatus(ctx context.Context) (memory.EmbedderStatus, error) {
	s.vmu.RLock()
	st := memory.EmbedderStatus{Name: s.emb.Name(), Dimensions: s.emb.Dimensions()}
	vecErr := s.vecOK
	s.vmu.RUnlock()
	if err := s.read(ctx, func(tx *sql.Tx) error {
		name, _, err := getMeta(ctx, tx, metaEmbedder)
		if err != nil {
			return err
		}
		d, _, err := getMeta(ctx, tx, metaDims)
		if err != nil {
			return err
		}
		st.Stored = name
		st.StoredDimensions, _ = strconv.Atoi(d)
		return nil
	}); err != nil {
		return st, fmt.Errorf("embedder status: %w", err)
	}
	if vecErr != nil {
		st.Error = vecErr.Error()
	}
	return st, vecErr
}

// vectorsReady returns nil when memory operations may use vectors, or a
// *tools.Error with CodeEmbedderMismatch. The caller holds s.vmu.
func (s *Store) vectorsReady() error {
	if s.vecOK != nil {
		return &tools.Error{Code: memory.CodeEmbedderMismatch, Message: s.vecOK.Error(), Err: s.vecOK}
	}
	return nil
}

// Reindex rebuilds every memory's vector with e and makes e the store's
// embedder. It runs in one transaction: on failure (the embedder is down,
// returns vectors of the wrong size, ctx ends) nothing changes. Memory
// operations wait while it runs.
func (s *Store) Reindex(ctx context.Context, e memory.Embedder) (memory.ReindexReport, error) {
	start := time.Now()
	if e == nil {
		return memory.ReindexReport{}, fmt.Errorf("reindex: %w: no embedder", memory.ErrInvalid)
	}
	if err := memory.CheckEmbedder(e); err != nil {
		return memory.ReindexReport{}, fmt.Errorf("reindex: %w", err)
	}
	s.vmu.Lock()
	defer s.vmu.Unlock()
	rep := memory.ReindexReport{Embedder: e.Name(), Dimensions: e.Dimensions()}
	oldEmb, oldQuant, oldOK := s.emb, s.quant, s.vecOK
	err := s.write(ctx, func(tx *sql.Tx) error {
		prev, _, err := getMeta(ctx, tx, metaEmbedder)
		if err != nil {
			return err
		}
		rep.Previous = prev
		if err := s.adoptEmbedder(ctx, tx, e); err != nil {
			return err
		}
		const batch = 256
		var after int64
		for {
			rows, err := tx.QueryContext(ctx, `SELECT id, principal, layer, content, tags FROM memories WHERE id > ? ORDER BY id LIMIT ?`, after, batch)
			if err != nil {
				return fmt.Errorf("read memories: %w", err)
			}
			type item struct {
				id               int64
				principal, layer string
				text             string
			}
			var items []item
			for rows.Next() {
				var it item
				var content, tags string
				if err := rows.Scan(&it.id, &it.principal, &it.layer, &content, &tags); err != nil {
					rows.Close()
					return fmt.Errorf("read memories: %w", err)
				}
				it.text = memory.EmbedText(content, memory.DecodeTags(tags))
				items = append(items, it)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return fmt.Errorf("read memories: %w", err)
			}
			if len(items) == 0 {
				return nil
			}
			texts := make([]string, len(items))
			for i, it := range items {
				texts[i] = it.text
			}
			vs, err := memory.Embed(ctx, e, texts)
			if err != nil {
				return err
			}
			for i, it := range items {
				if err := putVector(ctx, tx, s.quant, it.id, it.principal, it.layer, vs[i]); err != nil {
					return err
				}
			}
			rep.Memories += len(items)
			after = items[len(items)-1].id
		}
	})
	if err != nil {
		s.emb, s.quant, s.vecOK = oldEmb, oldQuant, oldOK
		return rep, fmt.Errorf("reindex: %w", err)
	}
	rep.Duration = time.Since(start)
	s.log.Info("reindexed", "memories", rep.Memories, "embedder", rep.Embedder, "dims", rep.Dimensions, "previous", rep.Previous, "duration", rep.Duration)
	return rep, nil
}

// putVector stores v (unit length) as memory id's vector and binary code,
// replacing any it had.
func putVector(ctx context.Context, tx *sql.Tx, q *memory.Quantizer, id int64, principal, layer string, v []float32) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO memory_vectors (memory_id, principal, layer, embedding) VALUES (?, ?, ?, ?)
		ON CONFLICT (memory_id) DO UPDATE SET principal = excluded.principal, layer = excluded.layer, embedding = excluded.embedding`,
		id, principal, layer, memory.EncodeVector(v)); err != nil {
		return fmt.Errorf("store vector of memory %d: %w", id, err)
	}
	return insertCode(ctx, tx, id, principal, layer, q.Code(v))
}
