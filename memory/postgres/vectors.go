package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// EmbedderStatus reports the configured and the stored embedder; its
// error wraps memory.ErrEmbedderMismatch when they differ.
func (s *Store) EmbedderStatus(ctx context.Context) (memory.EmbedderStatus, error) {
	s.vmu.RLock()
	st := memory.EmbedderStatus{Name: s.emb.Name(), Dimensions: s.emb.Dimensions()}
	vecErr := s.vecErr
	s.vmu.RUnlock()
	var stored string
	if err := s.db.QueryRow(ctx, `SELECT coalesce((SELECT value FROM meta WHERE key = 'embedder'), '')`).Scan(&stored); err != nil {
		return st, fmt.Errorf("embedder status: %w", err)
	}
	if i := strings.LastIndexByte(stored, '/'); i >= 0 {
		st.Stored = stored[:i]
		fmt.Sscan(stored[i+1:], &st.StoredDimensions)
	}
	if vecErr != nil {
		st.Error = vecErr.Error()
	}
	return st, vecErr
}

// Reindex rebuilds every memory's vector and binary code with e and makes
// e the database's embedder, in one transaction: on failure (the embedder
// is down, returns vectors of the wrong size, ctx ends) nothing changes.
// This instance's memory operations wait while it runs; other instances
// configured with e resume their memory operations once it commits, and
// those still configured with the old embedder fail theirs from then on
// (they check the database when they next start or reindex).
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
	quant := memory.NewQuantizer(e.Dimensions())
	oldEmb, oldQuant, oldFill := s.emb, s.quant, s.fillEmb
	s.emb, s.quant = e, quant // putVector codes with the new quantizer
	err := s.tx(ctx, func(tx pgx.Tx) error {
		rep.Memories = 0
		if err := lockCodes(ctx, tx); err != nil {
			return err
		}
		// pgvector's column has the embedder's dimensions: made again,
		// filled by putVector, indexed at the end.
		_, had, err := embeddingDims(ctx, tx)
		if err != nil {
			return err
		}
		s.fillEmb = had || s.pgv
		if s.fillEmb {
			if _, err := tx.Exec(ctx, `DROP TABLE IF EXISTS memory_embeddings`); err != nil {
				return fmt.Errorf("drop embeddings: %w", err)
			}
			if err := createEmbeddings(ctx, tx, e.Dimensions()); err != nil {
				return err
			}
		}
		var prev string
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT value FROM meta WHERE key = 'embedder'), '')`).Scan(&prev); err != nil {
			return err
		}
		rep.Previous, _, _ = strings.Cut(prev, "/")
		const batch = 256
		var after int64
		for {
			rows, err := tx.Query(ctx, `SELECT id, principal, layer, content, tags FROM memories WHERE id > $1 ORDER BY id LIMIT $2`, after, batch)
			if err != nil {
				return fmt.Errorf("read memories: %w", err)
			}
			type item struct {
				id               int64
				principal, layer string
				text             string
			}
			items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (item, error) {
				var it item
				var content, tags string
				err := r.Scan(&it.id, &it.principal, &it.layer, &content, &tags)
				it.text = memory.EmbedText(content, memory.DecodeTags(tags))
				return it, err
			})
			if err != nil {
				return fmt.Errorf("read memories: %w", err)
			}
			if len(items) == 0 {
				break
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
				if err := s.putVector(ctx, tx, it.id, it.principal, memory.Layer(it.layer), vs[i]); err != nil {
					return err
				}
			}
			rep.Memories += len(items)
			after = items[len(items)-1].id
		}
		if s.fillEmb {
			if err := buildIndex(ctx, tx); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO meta (key, value) VALUES ('embedder', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
			fmt.Sprintf("%s/%d", e.Name(), e.Dimensions()))
		return err
	})
	if err != nil {
		s.emb, s.quant, s.fillEmb = oldEmb, oldQuant, oldFill
		return rep, toolOr("reindex", err)
	}
	s.vecErr = nil
	s.codes.reset(quant)
	rep.Duration = time.Since(start)
	s.log.Info("reindexed", "memories", rep.Memories, "embedder", rep.Embedder, "dims", rep.Dimensions, "previous", rep.Previous, "duration", rep.Duration)
	return rep, nil
}

// putVector stores v as memory id's vector, binary code and pgvector
// embedding (when the database has them), replacing any it had, and logs
// the change of code. The caller holds codesLock and vmu.
func (s *Store) putVector(ctx context.Context, tx pgx.Tx, id int64, principal string, layer memory.Layer, v []float32) error {
	if _, err := tx.Exec(ctx, `INSERT INTO memory_vectors (memory_id, principal, layer, embedding) VALUES ($1, $2, $3, $4)
		ON CONFLICT (memory_id) DO UPDATE SET principal = excluded.principal, layer = excluded.layer, embedding = excluded.embedding`,
		id, principal, string(layer), memory.EncodeVector(v)); err != nil {
		return fmt.Errorf("store vector of memory %d: %w", id, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO memory_codes (memory_id, principal, layer, code) VALUES ($1, $2, $3, $4)
		ON CONFLICT (memory_id) DO UPDATE SET principal = excluded.principal, layer = excluded.layer, code = excluded.code`,
		id, principal, string(layer), s.quant.Code(v)); err != nil {
		return fmt.Errorf("store code of memory %d: %w", id, err)
	}
	if s.fillEmb {
		if err := putEmbedding(ctx, tx, id, v); err != nil {
			return err
		}
	}
	return logCodes(ctx, tx, principal, []int64{id})
}

// relayer moves memory id's vector and code to another layer. The caller
// holds codesLock.
func relayer(ctx context.Context, tx pgx.Tx, id int64, principal string, layer memory.Layer) error {
	if _, err := tx.Exec(ctx, `UPDATE memory_vectors SET layer = $1 WHERE memory_id = $2`, string(layer), id); err != nil {
		return fmt.Errorf("move vector: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE memory_codes SET layer = $1 WHERE memory_id = $2`, string(layer), id); err != nil {
		return fmt.Errorf("move code: %w", err)
	}
	return logCodes(ctx, tx, principal, []int64{id})
}

// logCodes records that the codes of ids changed (or went). The caller
// holds codesLock.
func logCodes(ctx context.Context, tx pgx.Tx, principal string, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO memory_code_log (memory_id, principal) SELECT unnest($1::bigint[]), $2::text`, ids, principal); err != nil {
		return fmt.Errorf("log codes: %w", err)
	}
	return nil
}

// lockCodes takes the lock that orders memory_code_log (see codesLock).
func lockCodes(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(codesLock))
	return err
}

// checkEmbedder records the embedder in a new store, and notes in vecErr
// when the stored vectors are another embedder's: memory operations then
// fail with memory.CodeEmbedderMismatch until Reindex (as on SQLite). The
// caller holds vmu to write.
func (s *Store) checkEmbedder(ctx context.Context) error {
	want := fmt.Sprintf("%s/%d", s.emb.Name(), s.emb.Dimensions())
	_, err := s.db.Exec(ctx, `INSERT INTO meta (key, value) VALUES ('embedder', $1) ON CONFLICT (key) DO NOTHING`, want)
	if err != nil {
		return fmt.Errorf("embedder: %w", err)
	}
	var have string
	if err := s.db.QueryRow(ctx, `SELECT value FROM meta WHERE key = 'embedder'`).Scan(&have); err != nil {
		return fmt.Errorf("embedder: %w", err)
	}
	s.vecErr = nil
	if have != want {
		s.vecErr = fmt.Errorf("%w: the database's vectors were made by %s, the configured embedder is %s; configure %s again, or run `codecell memory reindex`",
			memory.ErrEmbedderMismatch, have, want, have)
		s.log.Warn("embedder mismatch; memory operations disabled until reindex", "stored", have, "configured", want)
	}
	return nil
}

// vectorsReady holds vmu to read while a memory operation uses the
// embedder and quantizer, and fails with memory.CodeEmbedderMismatch
// when the stored vectors are another embedder's; it checks the database
// again first, in case another instance reindexed with this one's
// embedder. The caller calls release when err is nil.
func (s *Store) vectorsReady(ctx context.Context) (release func(), err error) {
	s.vmu.RLock()
	if s.vecErr == nil {
		return s.vmu.RUnlock, nil
	}
	s.vmu.RUnlock()
	s.vmu.Lock()
	err = s.checkEmbedder(ctx)
	if err == nil && s.vecErr == nil {
		// Another instance reindexed with this one's embedder: the
		// embeddings may need their table again.
		err = s.ensureEmbeddings(ctx)
	}
	if err == nil && s.vecErr != nil {
		err = &tools.Error{Code: memory.CodeEmbedderMismatch, Message: s.vecErr.Error(), Err: s.vecErr}
	}
	s.vmu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.vectorsReady(ctx)
}
