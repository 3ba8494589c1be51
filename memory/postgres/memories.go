package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Remember stores a new memory for the caller's principal.
func (s *Store) Remember(ctx context.Context, in memory.RememberInput) (memory.Memory, error) {
	ms, err := s.RememberBatch(ctx, []memory.RememberInput{in})
	if err != nil {
		return memory.Memory{}, err
	}
	return ms[0], nil
}

// RememberBatch stores several memories in one transaction: all or none.
func (s *Store) RememberBatch(ctx context.Context, ins []memory.RememberInput) ([]memory.Memory, error) {
	if len(ins) == 0 {
		return []memory.Memory{}, nil
	}
	principal := tools.CallerFrom(ctx).Principal
	now := s.now().UTC().Truncate(time.Millisecond)
	ps := make([]memory.PreparedMemory, len(ins))
	texts := make([]string, len(ins))
	for i, in := range ins {
		field := ""
		if len(ins) > 1 {
			field = fmt.Sprintf("memories[%d].", i)
		}
		p, err := memory.PrepareMemory(ctx, in, s.lim, now, field)
		if err != nil {
			return nil, err
		}
		ps[i], texts[i] = p, p.Text
	}
	release, err := s.vectorsReady(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	vs, err := memory.Embed(ctx, s.emb, texts)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, len(ps))
	err = s.tx(ctx, func(tx pgx.Tx) error {
		if err := lockCodes(ctx, tx); err != nil {
			return err
		}
		for i, p := range ps {
			if ids[i], err = s.insertMemory(ctx, tx, principal, p, vs[i], now, now, ""); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO memory_counts (principal, n) VALUES ($1, $2)
			ON CONFLICT (principal) DO UPDATE SET n = memory_counts.n + excluded.n`, principal, len(ps))
		return err
	})
	if err != nil {
		var te *tools.Error
		if errors.As(err, &te) {
			return nil, te
		}
		return nil, fmt.Errorf("remember: %w", err)
	}
	return s.loadMemories(ctx, s.pool, principal, ids)
}

// lockCodes takes the lock that orders memory_code_log (see codesLock).
func lockCodes(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(codesLock))
	return err
}

// insertMemory inserts a prepared memory with its vector, code, pgvector
// embedding (when the database has them), tags and entity links; uid ""
// gives it a new stable identity. The caller holds codesLock and vmu to
// read, and counts it in memory_counts.
func (s *Store) insertMemory(ctx context.Context, tx pgx.Tx, principal string, p memory.PreparedMemory, v []float32, created, updated time.Time, uid string) (int64, error) {
	in := p.Input
	if uid == "" {
		uid = memory.NewID()
	}
	var status *string
	if in.Layer == memory.Prospective {
		st := string(in.Status)
		status = &st
	}
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO memories
		(principal, layer, content, tags, metadata, importance, source, session, occurred_at, due_at, status, created_at, updated_at, provenance, uid, tsv)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $16, $13, $14, to_tsvector('english', $3 || ' ' || $15)) RETURNING id`,
		principal, string(in.Layer), in.Content, memory.EncodeTags(in.Tags), string(p.Metadata), p.Importance, in.Source, in.Session,
		nullMS(in.OccurredAt), nullMS(in.DueAt), status, ms(created), provArg(p.Provenance), uid, joinTags(in.Tags), ms(updated)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("insert memory: %w", err)
	}
	for _, t := range in.Tags {
		if _, err := tx.Exec(ctx, `INSERT INTO memory_tags (tag, memory_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, t, id); err != nil {
			return 0, fmt.Errorf("insert tags: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO memory_vectors (memory_id, principal, layer, embedding) VALUES ($1, $2, $3, $4)`,
		id, principal, string(in.Layer), memory.EncodeVector(v)); err != nil {
		return 0, fmt.Errorf("insert vector: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO memory_codes (memory_id, principal, layer, code) VALUES ($1, $2, $3, $4)`,
		id, principal, string(in.Layer), s.quant.Code(v)); err != nil {
		return 0, fmt.Errorf("insert code: %w", err)
	}
	if s.fillEmb {
		if err := putEmbedding(ctx, tx, id, v); err != nil {
			return 0, err
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO memory_code_log (memory_id, principal) VALUES ($1, $2)`, id, principal); err != nil {
		return 0, fmt.Errorf("log code: %w", err)
	}
	if err := linkEntities(ctx, tx, principal, id, in.Entities, created); err != nil {
		return 0, err
	}
	return id, nil
}

// ensureEntity returns the id of the principal's entity name, creating it
// bare, and whether it created it.
func ensureEntity(ctx context.Context, tx pgx.Tx, principal, name string, now time.Time) (int64, bool, error) {
	var id int64
	var created bool
	err := tx.QueryRow(ctx, `INSERT INTO entities (principal, name, created_at, updated_at) VALUES ($1, $2, $3, $3)
		ON CONFLICT (principal, lower(name)) DO UPDATE SET updated_at = entities.updated_at RETURNING id, xmax = 0`, principal, name, ms(now)).Scan(&id, &created)
	if err != nil {
		return 0, false, fmt.Errorf("find entity: %w", err)
	}
	return id, created, nil
}

// linkEntities links memory id to the named entities, creating them.
func linkEntities(ctx context.Context, tx pgx.Tx, principal string, id int64, names []string, now time.Time) error {
	for _, name := range names {
		eid, _, err := ensureEntity(ctx, tx, principal, name, now)
		if err != nil {
			return fmt.Errorf("link entity: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO memory_entities (memory_id, entity_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, id, eid); err != nil {
			return fmt.Errorf("link entity: %w", err)
		}
	}
	return nil
}

const memoryColumns = `m.id, m.layer, m.content, m.tags, m.metadata, m.importance, m.source, m.session,
	m.occurred_at, m.due_at, m.status, m.created_at, m.updated_at, m.accessed_at, m.access_count, m.provenance`

func scanMemory(sc interface{ Scan(...any) error }) (memory.Memory, error) {
	var m memory.Memory
	var layer, tags, meta string
	var occurred, due, accessed *int64
	var status, prov *string
	var created, updated int64
	if err := sc.Scan(&m.ID, &layer, &m.Content, &tags, &meta, &m.Importance, &m.Source, &m.Session,
		&occurred, &due, &status, &created, &updated, &accessed, &m.AccessCount, &prov); err != nil {
		return m, err
	}
	m.Layer, m.Tags, m.Metadata, m.Provenance = memory.Layer(layer), memory.DecodeTags(tags), []byte(meta), provOf(prov)
	m.OccurredAt, m.DueAt, m.AccessedAt = timePtr(occurred), timePtr(due), timePtr(accessed)
	if status != nil {
		m.Status = memory.TaskStatus(*status)
	}
	m.CreatedAt, m.UpdatedAt = fromMS(created), fromMS(updated)
	return m, nil
}

// querier is what the pool and a transaction have in common.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// loadMemories returns the principal's memories of ids, with their
// entities, in the order of ids; missing ids are skipped.
func (s *Store) loadMemories(ctx context.Context, q querier, principal string, ids []int64) ([]memory.Memory, error) {
	out := []memory.Memory{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `SELECT `+memoryColumns+`,
		coalesce((SELECT array_agg(e.name ORDER BY e.name) FROM memory_entities me JOIN entities e ON e.id = me.entity_id WHERE me.memory_id = m.id), '{}')
		FROM memories m WHERE m.principal = $1 AND m.id = ANY($2)`, principal, ids)
	if err != nil {
		return nil, fmt.Errorf("load memories: %w", err)
	}
	byID := map[int64]memory.Memory{}
	for rows.Next() {
		var ents []string
		m, err := scanMemory(prefixScan{rows, &ents})
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("load memories: %w", err)
		}
		if len(ents) > 0 {
			m.Entities = ents
		}
		byID[m.ID] = m
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load memories: %w", err)
	}
	for _, id := range ids {
		if m, ok := byID[id]; ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// prefixScan scans a memory's columns followed by one more.
type prefixScan struct {
	rows  pgx.Rows
	extra any
}

func (p prefixScan) Scan(dest ...any) error { return p.rows.Scan(append(dest, p.extra)...) }

// Get returns the caller's memory id and counts the access.
func (s *Store) Get(ctx context.Context, id int64) (memory.Memory, error) {
	principal := tools.CallerFrom(ctx).Principal
	ms, err := s.loadMemories(ctx, s.pool, principal, []int64{id})
	if err != nil {
		return memory.Memory{}, err
	}
	if len(ms) == 0 {
		var survivor int64
		if s.pool.QueryRow(ctx, `SELECT survivor_id FROM memory_merges WHERE merged_id = $1 AND principal = $2`, id, principal).Scan(&survivor) == nil {
			return memory.Memory{}, memory.NotFound("memory %d was merged into memory %d by consolidation; get %d instead", id, survivor, survivor)
		}
		return memory.Memory{}, memory.NotFound("memory %d not found", id)
	}
	m := ms[0]
	if m.MergedFrom, err = loadMerges(ctx, s.pool, id); err != nil {
		return memory.Memory{}, err
	}
	if err := s.touch(ctx, []int64{id}); err != nil {
		return memory.Memory{}, err
	}
	m.AccessCount++
	t := s.now().UTC().Truncate(time.Millisecond)
	m.AccessedAt = &t
	return m, nil
}

func (s *Store) touch(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `UPDATE memories SET accessed_at = $1, access_count = access_count + 1 WHERE id = ANY($2)`, ms(s.now()), ids)
	if err != nil {
		return fmt.Errorf("touch: %w", err)
	}
	return nil
}

// Recall searches the caller's memories as sqlite.Store.Recall does:
// vector similarity and keyword relevance each rank candidates and
// reciprocal rank fusion merges the two lists. The keyword ranking is
// ts_rank_cd over a tsvector (see RATIONALE.md for how it differs from
// BM25): fusion uses ranks only, so hybrid recall is unaffected by the
// scale of either score; in keyword mode Score is ts_rank_cd's.
func (s *Store) Recall(ctx context.Context, in memory.RecallInput) (memory.RecallResult, error) {
	principal := tools.CallerFrom(ctx).Principal
	if err := memory.NormalizeRecall(&in, s.lim); err != nil {
		return memory.RecallResult{}, err
	}
	depth := in.Limit
	if in.Mode == memory.ModeHybrid {
		depth = min(max(in.Limit*5, 50), 500)
	}
	release, err := s.vectorsReady(ctx)
	if err != nil {
		return memory.RecallResult{}, err
	}
	defer release()
	var qvec []float32
	if in.Mode != memory.ModeKeyword {
		vs, err := memory.Embed(ctx, s.emb, []string{in.Query})
		if err != nil {
			return memory.RecallResult{}, err
		}
		qvec = vs[0]
	}
	out := memory.RecallResult{Mode: in.Mode, Results: []memory.Hit{}, Exact: true}
	now := s.now()
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var vec, kw []memory.Scored
		var err error
		if qvec != nil {
			if vec, out.Exact, err = s.vectorSearch(ctx, tx, principal, in.Filter, qvec, depth, in.Limit, in.Exact); err != nil {
				return err
			}
		}
		if in.Mode != memory.ModeVector {
			commonLimit := s.cfg.KeywordCommonDocs
			if in.Exact {
				commonLimit = 0
			}
			if kw, out.CommonWords, err = keywordSearch(ctx, tx, principal, in.Filter, in.Query, depth, commonLimit); err != nil {
				return err
			}
		}
		hits := memory.Fuse(in.Mode, vec, kw)
		ids := make([]int64, len(hits))
		for i, h := range hits {
			ids[i] = h.ID
		}
		if in.RecencyWeight > 0 && len(ids) > 0 {
			rows, err := tx.Query(ctx, `SELECT id, coalesce(occurred_at, created_at) FROM memories WHERE id = ANY($1)`, ids)
			if err != nil {
				return fmt.Errorf("recency: %w", err)
			}
			created := map[int64]time.Time{}
			for rows.Next() {
				var id, t int64
				if err := rows.Scan(&id, &t); err != nil {
					rows.Close()
					return fmt.Errorf("recency: %w", err)
				}
				created[id] = fromMS(t)
			}
			if err := rows.Err(); err != nil {
				return fmt.Errorf("recency: %w", err)
			}
			memory.Recency(hits, created, now, in.RecencyWeight, in.HalfLifeDays)
		}
		memory.SortHits(hits)
		if len(hits) > in.Limit {
			hits = hits[:in.Limit]
		}
		ids = ids[:0]
		for _, h := range hits {
			ids = append(ids, h.ID)
		}
		ms, err := s.loadMemories(ctx, tx, principal, ids)
		if err != nil {
			return err
		}
		byID := map[int64]memory.Memory{}
		for _, m := range ms {
			byID[m.ID] = m
		}
		for _, h := range hits {
			if m, ok := byID[h.ID]; ok {
				h.Memory = m
				out.Results = append(out.Results, h)
			}
		}
		return nil
	})
	if err != nil {
		return memory.RecallResult{}, fmt.Errorf("recall: %w", err)
	}
	ids := make([]int64, len(out.Results))
	for i, h := range out.Results {
		ids[i] = h.ID
	}
	if err := s.touch(ctx, ids); err != nil {
		return memory.RecallResult{}, fmt.Errorf("recall: %w", err)
	}
	return out, nil
}

// where renders f as SQL over memories aliased m, with parameters from
// $first on.
func where(principal string, f memory.Filter, first int) (string, []any) {
	args := []any{principal}
	p := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", first+len(args)-1)
	}
	conds := []string{"m.principal = $" + fmt.Sprint(first)}
	if len(f.Layers) > 0 {
		ls := make([]string, len(f.Layers))
		for i, l := range f.Layers {
			ls[i] = string(l)
		}
		conds = append(conds, "m.layer = ANY("+p(ls)+")")
	}
	for _, t := range f.Tags {
		conds = append(conds, "EXISTS (SELECT 1 FROM memory_tags t WHERE t.tag = "+p(t)+" AND t.memory_id = m.id)")
	}
	if f.Session != "" {
		conds = append(conds, "m.session = "+p(f.Session))
	}
	if f.Since != nil {
		conds = append(conds, "coalesce(m.occurred_at, m.created_at) >= "+p(ms(*f.Since)))
	}
	if f.Until != nil {
		conds = append(conds, "coalesce(m.occurred_at, m.created_at) < "+p(ms(*f.Until)))
	}
	if f.Entity != "" {
		conds = append(conds, `EXISTS (SELECT 1 FROM memory_entities me JOIN entities e ON e.id = me.entity_id
			WHERE me.memory_id = m.id AND e.principal = $`+fmt.Sprint(first)+` AND lower(e.name) = lower(`+p(f.Entity)+`))`)
	}
	return strings.Join(conds, " AND "), args
}

func onlyLayers(f memory.Filter) bool {
	return len(f.Tags) == 0 && f.Session == "" && f.Since == nil && f.Until == nil && f.Entity == ""
}

// vectorSearch ranks the principal's memories that pass f by cosine
// similarity to q: exactly up to ExactSearchLimit vectors, else by
// pgvector's HNSW index (pgvectorSearch) or by the binary-code pass
// re-scored with the full vectors. The caller holds vmu to read.
func (s *Store) vectorSearch(ctx context.Context, tx pgx.Tx, principal string, f memory.Filter, q []float32, depth, limit int, exact bool) ([]memory.Scored, bool, error) {
	var n int
	if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT n FROM memory_counts WHERE principal = $1), 0)`, principal).Scan(&n); err != nil {
		return nil, false, fmt.Errorf("vector search: %w", err)
	}
	if n == 0 {
		return nil, true, nil
	}
	if s.pgv {
		return pgvectorSearch(ctx, tx, s.cfg.EfSearch, principal, f, q, depth, exact || n <= s.cfg.ExactSearchLimit)
	}
	if exact || n <= s.cfg.ExactSearchLimit {
		cond, args := where(principal, f, 1)
		res, err := scoreRows(ctx, tx, `SELECT v.memory_id, v.embedding FROM memory_vectors v JOIN memories m ON m.id = v.memory_id WHERE `+cond, args, q, depth)
		return res, true, err
	}
	coarse := max(limit*s.cfg.CoarseFactor, depth)
	qcode := s.quant.Code(q)
	for {
		cands, err := s.codes.nearest(ctx, tx, principal, f.Layers, qcode, coarse)
		if err != nil {
			return nil, false, err
		}
		if !onlyLayers(f) {
			cond, args := where(principal, f, 1)
			rows, err := tx.Query(ctx, `SELECT m.id FROM memories m WHERE `+cond+fmt.Sprintf(` AND m.id = ANY($%d)`, len(args)+1), append(args, cands)...)
			if err != nil {
				return nil, false, fmt.Errorf("vector search: %w", err)
			}
			if cands, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
				return nil, false, fmt.Errorf("vector search: %w", err)
			}
			if len(cands) < depth {
				if coarse*4 < n && coarse < 16384 {
					coarse *= 4
					continue
				}
				res, err := scoreRows(ctx, tx, `SELECT v.memory_id, v.embedding FROM memory_vectors v JOIN memories m ON m.id = v.memory_id WHERE `+cond, args, q, depth)
				return res, true, err
			}
		}
		res, err := scoreRows(ctx, tx, `SELECT memory_id, embedding FROM memory_vectors WHERE memory_id = ANY($1)`, []any{cands}, q, depth)
		return res, false, err
	}
}

// scoreRows scores the (id, embedding) rows of query by cosine similarity
// to the unit vector q and returns the best depth, ties by id.
func scoreRows(ctx context.Context, tx pgx.Tx, query string, args []any, q []float32, depth int) ([]memory.Scored, error) {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	defer rows.Close()
	var out []memory.Scored
	var buf []float32
	for rows.Next() {
		var id int64
		var blob []byte
		if err := rows.Scan(&id, &blob); err != nil {
			return nil, fmt.Errorf("vector search: %w", err)
		}
		if buf, err = memory.DecodeVector(blob, buf); err != nil {
			return nil, fmt.Errorf("vector search: %w", err)
		}
		var dot float64
		for i, x := range buf {
			dot += float64(x) * float64(q[i])
		}
		// As sqlite-vec's cosine distance, turned back to a similarity:
		// rounded to float32 so that both backends rank alike.
		out = append(out, memory.Scored{ID: id, Score: float64(float32(dot))})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	slices.SortFunc(out, func(a, b memory.Scored) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return int(a.ID - b.ID)
	})
	if len(out) > depth {
		out = out[:depth]
	}
	return out, nil
}

// keywordSearch ranks the principal's memories that pass f and hold any
// word of text by ts_rank_cd, best first, ties by id. When the principal
// has more than commonLimit memories (0: no limit), words found in more
// than commonLimit of them are left out of the ranking, as on SQLite
// (memory.KeywordCommonDocs), unless every word is that common; it
// returns them.
func keywordSearch(ctx context.Context, tx pgx.Tx, principal string, f memory.Filter, text string, depth, commonLimit int) ([]memory.Scored, []string, error) {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) == 0 {
		return nil, nil, nil
	}
	seen := map[string]bool{}
	words = slices.DeleteFunc(words, func(w string) bool {
		dup := seen[w]
		seen[w] = true
		return dup
	})
	words = words[:min(len(words), 64)]
	var common []string
	if commonLimit > 0 {
		var err error
		if words, common, err = commonWords(ctx, tx, principal, words, commonLimit); err != nil {
			return nil, nil, err
		}
	}
	cond, args := where(principal, f, 2)
	// Words OR-ed, each stemmed as the column was; a word that is a stop
	// word drops out of the query.
	query := strings.Join(words, " | ")
	// MATERIALIZED: the query is parsed once. Inlined, the generic plan
	// of pgx's prepared statement called to_tsquery for every row, in the
	// recheck and in the rank.
	rows, err := tx.Query(ctx, `WITH q AS MATERIALIZED (SELECT to_tsquery('english', $1) AS q)
		SELECT m.id, ts_rank_cd(m.tsv, q.q, 1) AS r FROM memories m, q WHERE m.tsv @@ q.q AND `+cond+`
		ORDER BY r DESC, m.id LIMIT `+fmt.Sprint(depth), append([]any{query}, args...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("keyword search: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (memory.Scored, error) {
		var sc memory.Scored
		var rank float32
		err := r.Scan(&sc.ID, &rank)
		sc.Score = float64(rank)
		return sc, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("keyword search: %w", err)
	}
	return out, common, nil
}

// commonWords splits the query words into those to rank by and those
// found in more than limit of the principal's memories; words found in
// none are dropped. A principal with at most limit memories ranks on
// every word.
func commonWords(ctx context.Context, tx pgx.Tx, principal string, words []string, limit int) (keep, common []string, err error) {
	var total int
	if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT n FROM memory_counts WHERE principal = $1), 0)`, principal).Scan(&total); err != nil {
		return nil, nil, fmt.Errorf("keyword search: %w", err)
	}
	if total <= limit {
		return words, nil, nil
	}
	// Every word's count in one round trip, each stopping at limit+1.
	rows, err := tx.Query(ctx, `SELECT (SELECT count(*) FROM (SELECT 1 FROM memories WHERE principal = $1 AND tsv @@ to_tsquery('english', u.w) LIMIT $3) c)
		FROM unnest($2::text[]) WITH ORDINALITY AS u(w, i) ORDER BY u.i`, principal, words, limit+1)
	if err != nil {
		return nil, nil, fmt.Errorf("keyword search: %w", err)
	}
	counts, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, nil, fmt.Errorf("keyword search: %w", err)
	}
	for i, w := range words {
		switch n := counts[i]; {
		case n > limit:
			common = append(common, w)
		case n > 0:
			keep = append(keep, w)
		}
	}
	if len(keep) == 0 {
		return words, nil, nil
	}
	return keep, common, nil
}

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
