package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

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
	err = s.beginFunc(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
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
		var related []memory.Scored
		if text := in.RelatedText(); text != "" {
			if related, _, err = keywordSearch(ctx, tx, principal, in.Filter, text, depth, s.cfg.KeywordCommonDocs); err != nil {
				return err
			}
		}
		hits := memory.FuseRelated(in.Mode, vec, kw, related)
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
