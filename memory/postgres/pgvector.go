package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/codecell/codecell/memory"
)

// The vector modes of Config.Vectors.
const (
	// VectorsAuto uses pgvector when `CREATE EXTENSION IF NOT EXISTS
	// vector` succeeds, else the binary codes.
	VectorsAuto = "auto"
	// VectorsPgvector uses pgvector and fails to open without it.
	VectorsPgvector = "pgvector"
	// VectorsCodes never uses pgvector: the binary-code coarse pass of
	// package memory, as on SQLite.
	VectorsCodes = "codes"
)

// ErrNoPgvector: Config.Vectors is VectorsPgvector and the database
// cannot create the extension vector.
var ErrNoPgvector = errors.New("pgvector is not available: install pgvector on the database server, or have a superuser run CREATE EXTENSION vector in this database (vectors = auto runs without it)")

// hnswIndex is the name of the HNSW index on memory_embeddings.
const hnswIndex = "memory_embeddings_hnsw"

// bulkEmbeddings: a fill of more rows than this drops the HNSW index and
// builds it again after, which is much faster than inserting into it.
const bulkEmbeddings = 10_000

// VectorMode reports how vector recall runs on this instance:
// VectorsPgvector or VectorsCodes.
func (s *Store) VectorMode() string {
	s.vmu.RLock()
	defer s.vmu.RUnlock()
	if s.pgv {
		return VectorsPgvector
	}
	return VectorsCodes
}

// setupVectors chooses the vector mode (Config.Vectors) and makes
// memory_embeddings ready. The caller holds vmu to write.
func (s *Store) setupVectors(ctx context.Context) error {
	mode := cmp.Or(s.cfg.Vectors, VectorsAuto)
	switch mode {
	case VectorsAuto, VectorsPgvector, VectorsCodes:
	default:
		return fmt.Errorf("vectors: %w: %q: use %s, %s or %s", memory.ErrInvalid, mode, VectorsAuto, VectorsPgvector, VectorsCodes)
	}
	if mode != VectorsCodes {
		err := s.withMigrationLock(ctx, func(conn *pgxpool.Conn) error {
			_, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector`)
			return err
		})
		switch {
		case err == nil:
			s.pgv = true
		case ctx.Err() != nil:
			return fmt.Errorf("vectors: %w", ctx.Err())
		case mode == VectorsPgvector:
			return fmt.Errorf("vectors: %w: %w", ErrNoPgvector, err)
		default:
			s.log.Debug("pgvector is not available; vector recall uses binary codes", "err", err)
		}
	}
	if err := s.ensureEmbeddings(ctx); err != nil {
		return err
	}
	mode = VectorsCodes
	if s.pgv {
		mode = VectorsPgvector
	}
	s.log.Debug("vector recall", "mode", mode)
	return nil
}

// withMigrationLock runs fn on one connection holding migrationLock.
func (s *Store) withMigrationLock(ctx context.Context, fn func(conn *pgxpool.Conn) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	return fn(conn)
}

// ensureEmbeddings makes memory_embeddings hold every stored vector when
// this instance searches with pgvector (creating the table and its HNSW
// index, once across instances, under migrationLock) or when another
// instance made the table, and notes in vecErr a table of other
// dimensions than the embedder's. It leaves the table alone while the
// stored vectors are another embedder's (Reindex makes it again). The
// caller holds vmu to write.
func (s *Store) ensureEmbeddings(ctx context.Context) error {
	err := s.withMigrationLock(ctx, func(conn *pgxpool.Conn) error {
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			dims, exists, err := embeddingDims(ctx, tx)
			if err != nil {
				return err
			}
			s.fillEmb = exists
			switch {
			case s.vecErr != nil:
				return nil
			case exists && dims != s.emb.Dimensions():
				s.vecErr = fmt.Errorf("%w: the database's pgvector column (memory_embeddings) has %d dimensions, the configured embedder %s makes %d; run `codecell memory reindex`",
					memory.ErrEmbedderMismatch, dims, s.emb.Name(), s.emb.Dimensions())
				s.log.Warn("embedder mismatch; memory operations disabled until reindex", "pgvector_dims", dims, "configured", s.emb.Dimensions())
				return nil
			case !exists && !s.pgv:
				return nil
			case !exists:
				if err := createEmbeddings(ctx, tx, s.emb.Dimensions()); err != nil {
					return err
				}
			}
			n, err := fillEmbeddings(ctx, tx)
			if n > 0 {
				s.log.Info("filled pgvector embeddings", "memories", n)
			}
			s.fillEmb = err == nil
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("vectors: %w", err)
	}
	return nil
}

// embeddingDims returns the dimensions of memory_embeddings.embedding,
// and whether the table exists.
func embeddingDims(ctx context.Context, q querier) (dims int, exists bool, err error) {
	err = q.QueryRow(ctx, `SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass('memory_embeddings') AND attname = 'embedding'`).Scan(&dims)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("embeddings: %w", err)
	}
	return dims, true, nil
}

// createEmbeddings creates memory_embeddings for vectors of dims, without
// its index (fillEmbeddings builds it).
func createEmbeddings(ctx context.Context, tx pgx.Tx, dims int) error {
	_, err := tx.Exec(ctx, fmt.Sprintf(`CREATE TABLE memory_embeddings (
		memory_id BIGINT PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
		embedding vector(%d) NOT NULL)`, dims))
	if err != nil {
		return fmt.Errorf("create embeddings: %w", err)
	}
	return nil
}

// fillEmbeddings copies into memory_embeddings every vector of
// memory_vectors it lacks, and makes sure of the HNSW index (built after
// the rows when there are many, or when it did not exist). It returns
// the number of rows it added.
func fillEmbeddings(ctx context.Context, tx pgx.Tx) (int64, error) {
	var missing int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM memory_vectors v
		WHERE NOT EXISTS (SELECT 1 FROM memory_embeddings e WHERE e.memory_id = v.memory_id)`).Scan(&missing); err != nil {
		return 0, fmt.Errorf("fill embeddings: %w", err)
	}
	if missing > bulkEmbeddings {
		if _, err := tx.Exec(ctx, `DROP INDEX IF EXISTS `+hnswIndex); err != nil {
			return 0, fmt.Errorf("fill embeddings: %w", err)
		}
	}
	var total, after int64
	var buf []float32
	for total < missing {
		rows, err := tx.Query(ctx, `SELECT v.memory_id, v.embedding FROM memory_vectors v
			WHERE v.memory_id > $1 AND NOT EXISTS (SELECT 1 FROM memory_embeddings e WHERE e.memory_id = v.memory_id)
			ORDER BY v.memory_id LIMIT 1000`, after)
		if err != nil {
			return total, fmt.Errorf("fill embeddings: %w", err)
		}
		var ids []int64
		var texts []string
		for rows.Next() {
			var id int64
			var blob []byte
			if err := rows.Scan(&id, &blob); err != nil {
				rows.Close()
				return total, fmt.Errorf("fill embeddings: %w", err)
			}
			if buf, err = memory.DecodeVector(blob, buf); err != nil {
				rows.Close()
				return total, fmt.Errorf("fill embeddings: memory %d: %w", id, err)
			}
			ids, texts = append(ids, id), append(texts, vectorText(buf))
		}
		if err := rows.Err(); err != nil {
			return total, fmt.Errorf("fill embeddings: %w", err)
		}
		if len(ids) == 0 {
			break
		}
		if _, err := tx.Exec(ctx, `INSERT INTO memory_embeddings (memory_id, embedding)
			SELECT id, v::vector FROM unnest($1::bigint[], $2::text[]) AS t(id, v)`, ids, texts); err != nil {
			return total, fmt.Errorf("fill embeddings: %w", err)
		}
		total += int64(len(ids))
		after = ids[len(ids)-1]
	}
	if total > bulkEmbeddings {
		// Statistics for the planner, which otherwise takes the new
		// table for nearly empty and scans it rather than the index.
		if _, err := tx.Exec(ctx, `ANALYZE memory_embeddings`); err != nil {
			return total, fmt.Errorf("fill embeddings: %w", err)
		}
	}
	return total, buildIndex(ctx, tx)
}

// buildIndex creates the HNSW index on memory_embeddings if it is
// missing, with room to build it in memory.
func buildIndex(ctx context.Context, tx pgx.Tx) error {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, hnswIndex).Scan(&exists); err != nil {
		return fmt.Errorf("hnsw index: %w", err)
	}
	if exists {
		return nil
	}
	if _, err := tx.Exec(ctx, `SET LOCAL maintenance_work_mem = '256MB'`); err != nil {
		return fmt.Errorf("hnsw index: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE INDEX `+hnswIndex+` ON memory_embeddings USING hnsw (embedding vector_cosine_ops)`); err != nil {
		return fmt.Errorf("hnsw index: %w", err)
	}
	return nil
}

// putEmbedding stores v as memory id's pgvector embedding, replacing
// any it had.
func putEmbedding(ctx context.Context, tx pgx.Tx, id int64, v []float32) error {
	if _, err := tx.Exec(ctx, `INSERT INTO memory_embeddings (memory_id, embedding) VALUES ($1, $2::text::vector)
		ON CONFLICT (memory_id) DO UPDATE SET embedding = excluded.embedding`, id, vectorText(v)); err != nil {
		return fmt.Errorf("store embedding of memory %d: %w", id, err)
	}
	return nil
}

// vectorText is v in pgvector's text form, each value in the shortest
// form that reads back as the same float32.
func vectorText(v []float32) string {
	b := make([]byte, 0, len(v)*12+2)
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
	}
	return string(append(b, ']'))
}

// efSearch is hnsw.ef_search for depth results: at least least (pgvector's
// default 40 when 0), twice the depth, at most the 1000 pgvector allows.
func efSearch(least, depth int) int { return min(max(cmp.Or(least, 40), 2*depth), 1000) }

// pgvectorSearch ranks the principal's memories that pass f by cosine
// similarity to q in PostgreSQL: with exact, by a plain scan of their
// embeddings; else by the HNSW index, with iterative scans so that a
// filter that the nearest neighbours mostly fail still yields depth rows,
// and a plain scan when it does not (the filter leaves fewer than depth
// memories, or more than hnsw.max_scan_tuples had to be visited). It
// reports whether the ranking is exact.
func pgvectorSearch(ctx context.Context, tx pgx.Tx, efLeast int, principal string, f memory.Filter, q []float32, depth int, exact bool) ([]memory.Scored, bool, error) {
	cond, args := where(principal, f, 2)
	args = append([]any{vectorText(q)}, args...)
	from := ` FROM memory_embeddings e JOIN memories m ON m.id = e.memory_id WHERE ` + cond
	// The query vector parsed once, by an InitPlan: a cast of the
	// parameter itself would be evaluated for every row of a generic
	// plan. As sqlite-vec's cosine distance, turned back to a similarity.
	const qv = `(SELECT $1::text::vector)`
	const score = `SELECT e.memory_id, 1 - (e.embedding <=> ` + qv + `)`
	if !exact {
		if _, err := tx.Exec(ctx, `SELECT set_config('hnsw.ef_search', $1, true), set_config('hnsw.iterative_scan', 'relaxed_order', true)`,
			strconv.Itoa(efSearch(efLeast, depth))); err != nil {
			return nil, false, fmt.Errorf("vector search: %w", err)
		}
		// ORDER BY the distance operator itself: the form the index
		// serves.
		res, err := collectScored(ctx, tx, score+from+` ORDER BY e.embedding <=> `+qv+` LIMIT `+strconv.Itoa(depth), args)
		if err != nil || len(res) >= depth {
			return res, false, err
		}
	}
	// ORDER BY an expression of the distance, which the index cannot
	// serve: a plain scan of the rows that pass the filter.
	res, err := collectScored(ctx, tx, score+` AS sim`+from+` ORDER BY sim DESC, e.memory_id LIMIT `+strconv.Itoa(depth), args)
	return res, true, err
}

// collectScored reads (id, similarity) rows, scores rounded to float32 as
// scoreRows does, best first, ties by id.
func collectScored(ctx context.Context, tx pgx.Tx, query string, args []any) ([]memory.Scored, error) {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.Scored, error) {
		var sc memory.Scored
		err := r.Scan(&sc.ID, &sc.Score)
		sc.Score = float64(float32(sc.Score))
		return sc, err
	})
	if err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	slices.SortFunc(out, func(a, b memory.Scored) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}
