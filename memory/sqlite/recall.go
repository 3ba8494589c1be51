package sqlite

import (
	"github.com/codecell/codecell/memory"

	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/codecell/codecell/tools"
)

// Recall searches the caller's memories: vector similarity and BM25 each
// rank candidates, and reciprocal rank fusion merges the two lists. Ties
// are broken by id, so the same query on the same data gives the same
// answer. Returned memories have their access counted.
func (s *Store) Recall(ctx context.Context, in memory.RecallInput) (memory.RecallResult, error) {
	principal := tools.CallerFrom(ctx).Principal
	if err := memory.NormalizeRecall(&in, s.lim); err != nil {
		return memory.RecallResult{}, err
	}
	s.vmu.RLock()
	defer s.vmu.RUnlock()
	if err := s.vectorsReady(); err != nil {
		return memory.RecallResult{}, err
	}
	depth := in.Limit
	if in.Mode == memory.ModeHybrid {
		depth = min(max(in.Limit*5, 50), 500)
	}
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
	err := s.read(ctx, func(tx *sql.Tx) error {
		var vec, kw []memory.Scored
		var err error
		if qvec != nil {
			if vec, out.Exact, err = s.vectorSearch(ctx, tx, principal, in.Filter, qvec, depth, in.Limit, in.Exact); err != nil {
				return err
			}
		}
		if in.Mode != memory.ModeVector {
			commonLimit := s.commonDocs
			if in.Exact {
				commonLimit = 0
			}
			if kw, out.CommonWords, err = keywordSearch(ctx, tx, principal, in.Filter, in.Query, depth, commonLimit); err != nil {
				return err
			}
		}
		var related []memory.Scored
		if text := in.RelatedText(); text != "" {
			if related, _, err = keywordSearch(ctx, tx, principal, in.Filter, text, depth, s.commonDocs); err != nil {
				return err
			}
		}
		hits := memory.FuseRelated(in.Mode, vec, kw, related)
		if in.RecencyWeight > 0 {
			if err := applyRecency(ctx, tx, hits, now, in.RecencyWeight, in.HalfLifeDays); err != nil {
				return err
			}
		}
		memory.SortHits(hits)
		if len(hits) > in.Limit {
			hits = hits[:in.Limit]
		}
		ids := make([]int64, len(hits))
		for i, h := range hits {
			ids[i] = h.ID
		}
		ms, err := loadMemories(ctx, tx, principal, ids)
		if err != nil {
			return err
		}
		for i := range ms {
			hits[i].Memory = ms[i]
		}
		out.Results = hits[:len(ms)]
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

func applyRecency(ctx context.Context, tx *sql.Tx, hits []memory.Hit, now time.Time, w, halfLifeDays float64) error {
	if len(hits) == 0 {
		return nil
	}
	args := make([]any, len(hits))
	for i, h := range hits {
		args[i] = h.ID
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, coalesce(occurred_at, created_at) FROM memories WHERE id IN (`+placeholders(len(hits))+`)`, args...)
	if err != nil {
		return fmt.Errorf("recency: %w", err)
	}
	defer rows.Close()
	created := map[int64]time.Time{}
	for rows.Next() {
		var id, t int64
		if err := rows.Scan(&id, &t); err != nil {
			return fmt.Errorf("recency: %w", err)
		}
		created[id] = fromMS(t)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	memory.Recency(hits, created, now, w, halfLifeDays)
	return nil
}

// vectorCount returns how many memories the principal has.
func vectorCount(ctx context.Context, q queryer, principal string) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT n FROM memory_counts WHERE principal = ?`, principal).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("count memories: %w", err)
	}
	return n, nil
}

// vectorSearch returns the depth memories most similar to q (unit length)
// that pass f, most similar first, ties by id. It scans every vector when
// exact is set or the candidates are few (Config.ExactSearchLimit);
// otherwise it takes the limit·CoarseFactor nearest binary codes (see
// coarseSearch) and re-scores them with the full vectors. It reports
// whether the scan was exact.
func (s *Store) vectorSearch(ctx context.Context, tx *sql.Tx, principal string, f memory.Filter, q []float32, depth, limit int, exact bool) ([]memory.Scored, bool, error) {
	var n int
	var err error
	if onlyLayers(f) {
		n, err = vectorCount(ctx, tx, principal)
	} else {
		where, args := filterWhere(f, principal)
		err = tx.QueryRowContext(ctx, `SELECT count(*) FROM memories m WHERE `+where, args...).Scan(&n)
	}
	if err != nil {
		return nil, false, fmt.Errorf("vector search: %w", err)
	}
	if n == 0 {
		return nil, true, nil
	}
	if exact || n <= s.cfg.ExactSearchLimit || s.codesStale {
		res, err := exactSearch(ctx, tx, principal, f, q, depth)
		return res, true, err
	}
	coarse := max(limit*s.cfg.CoarseFactor, depth)
	qcode := s.quant.Code(q)
	for {
		cands, err := s.coarseSearch(ctx, tx, principal, f.Layers, qcode, coarse)
		if err != nil {
			return nil, false, err
		}
		if !onlyLayers(f) {
			if cands, err = filterIDs(ctx, tx, principal, f, cands); err != nil {
				return nil, false, err
			}
		}
		// Too few candidates passed the filter: widen the pass, or
		// scan exactly once the pass would cover most of the store.
		if len(cands) < depth && !onlyLayers(f) {
			total, err := vectorCount(ctx, tx, principal)
			if err != nil {
				return nil, false, err
			}
			if coarse*4 < total && coarse < 16384 {
				coarse *= 4
				continue
			}
			res, err := exactSearch(ctx, tx, principal, f, q, depth)
			return res, true, err
		}
		res, err := rescore(ctx, tx, cands, q, depth)
		return res, false, err
	}
}

// exactSearch scans every vector that passes f.
func exactSearch(ctx context.Context, tx *sql.Tx, principal string, f memory.Filter, q []float32, depth int) ([]memory.Scored, error) {
	var query string
	var args []any
	blob := memory.EncodeVector(q)
	if onlyLayers(f) {
		query = `SELECT memory_id, vec_distance_cosine(embedding, ?) AS d FROM memory_vectors WHERE principal = ?`
		args = []any{blob, principal}
		if len(f.Layers) > 0 {
			query += ` AND layer IN (` + placeholders(len(f.Layers)) + `)`
			for _, l := range f.Layers {
				args = append(args, string(l))
			}
		}
		query += ` ORDER BY d, memory_id LIMIT ?`
	} else {
		where, wargs := filterWhere(f, principal)
		query = `SELECT m.id, vec_distance_cosine(v.embedding, ?) AS d FROM memories m JOIN memory_vectors v ON v.memory_id = m.id
			WHERE ` + where + ` ORDER BY d, m.id LIMIT ?`
		args = append([]any{blob}, wargs...)
	}
	args = append(args, depth)
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	defer rows.Close()
	var out []memory.Scored
	for rows.Next() {
		var c memory.Scored
		var d sql.NullFloat64
		if err := rows.Scan(&c.ID, &d); err != nil {
			return nil, fmt.Errorf("vector search: %w", err)
		}
		if !d.Valid {
			// A zero vector has no direction: it matches nothing.
			continue
		}
		c.Score = 1 - d.Float64
		out = append(out, c)
	}
	return out, rows.Err()
}

// coarseSearch returns the ids of the k binary codes of the layers (all
// when empty) nearest to code by Hamming distance, nearest first, ties by
// id: from the in-process copy when it holds the principal's codes, else
// by a scan in SQL that ranks the same way.
func (s *Store) coarseSearch(ctx context.Context, tx *sql.Tx, principal string, layers []memory.Layer, code []byte, k int) ([]int64, error) {
	ids, ok, err := s.codes.nearest(ctx, tx, s.quant, principal, layers, code, k)
	if err != nil || ok {
		return ids, err
	}
	return coarseSearchSQL(ctx, tx, principal, layers, code, k)
}

func coarseSearchSQL(ctx context.Context, tx *sql.Tx, principal string, layers []memory.Layer, code []byte, k int) ([]int64, error) {
	query := `SELECT memory_id FROM memory_codes WHERE principal = ?`
	args := []any{principal}
	if len(layers) > 0 {
		query += ` AND layer IN (` + placeholders(len(layers)) + `)`
		for _, l := range layers {
			args = append(args, string(l))
		}
	}
	query += ` ORDER BY vec_distance_hamming(vec_bit(code), vec_bit(?)), memory_id LIMIT ?`
	args = append(args, code, k)
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("coarse vector search: %w", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("coarse vector search: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// filterIDs keeps the ids that pass f.
func filterIDs(ctx context.Context, tx *sql.Tx, principal string, f memory.Filter, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	where, args := filterWhere(f, principal)
	var out []int64
	for start := 0; start < len(ids); start += 500 {
		chunk := ids[start:min(start+500, len(ids))]
		a := slices.Clone(args)
		for _, id := range chunk {
			a = append(a, id)
		}
		// NOT INDEXED: see loadMemories.
		rows, err := tx.QueryContext(ctx, `SELECT m.id FROM memories m NOT INDEXED WHERE `+where+` AND m.id IN (`+placeholders(len(chunk))+`)`, a...)
		if err != nil {
			return nil, fmt.Errorf("filter candidates: %w", err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("filter candidates: %w", err)
			}
			out = append(out, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rescore computes the exact similarity of each candidate and returns the
// best depth.
func rescore(ctx context.Context, tx *sql.Tx, ids []int64, q []float32, depth int) ([]memory.Scored, error) {
	out := make([]memory.Scored, 0, len(ids))
	var buf []float32
	for start := 0; start < len(ids); start += 500 {
		chunk := ids[start:min(start+500, len(ids))]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := tx.QueryContext(ctx, `SELECT memory_id, embedding FROM memory_vectors WHERE memory_id IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("re-score: %w", err)
		}
		for rows.Next() {
			var id int64
			var blob sql.RawBytes
			if err := rows.Scan(&id, &blob); err != nil {
				rows.Close()
				return nil, fmt.Errorf("re-score: %w", err)
			}
			if buf, err = memory.DecodeVector(blob, buf); err != nil {
				rows.Close()
				return nil, fmt.Errorf("re-score memory %d: %w", id, err)
			}
			out = append(out, memory.Scored{ID: id, Score: float64(memory.Dot(buf, q))})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	sortScored(out)
	if len(out) > depth {
		out = out[:depth]
	}
	return out, nil
}

func sortScored(xs []memory.Scored) {
	slices.SortFunc(xs, func(a, b memory.Scored) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// ftsWords returns the words of a free-text query (QueryWords), each
// quoted as an FTS5 phrase so that no word is read as an operator.
func ftsWords(text string) []string {
	var terms []string
	for _, w := range memory.QueryWords(text) {
		terms = append(terms, `"`+strings.ReplaceAll(w, `"`, `""`)+`"`)
	}
	return terms
}

// commonWords splits the query words into those to rank by and those found
// in more than limit of the principal's memories, whose index is table
// (see keywordCommonDocs). Words found in no memory are dropped: they
// would add nothing to any score.
func commonWords(ctx context.Context, tx *sql.Tx, principal, table string, words []string, limit int) (keep, common []string, err error) {
	total, err := vectorCount(ctx, tx, principal)
	if err != nil {
		return nil, nil, fmt.Errorf("keyword search: %w", err)
	}
	if total <= limit {
		return words, nil, nil
	}
	for _, w := range words {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM `+table+` WHERE `+table+` MATCH ? LIMIT ?)`,
			w, limit+1).Scan(&n); err != nil {
			return nil, nil, fmt.Errorf("keyword search: %w", err)
		}
		switch {
		case n > limit:
			common = append(common, w)
		case n > 0:
			keep = append(keep, w)
		}
	}
	if len(keep) == 0 {
		// Nothing but common words: rank on them all.
		return words, nil, nil
	}
	return keep, common, nil
}

// keywordSearch ranks the principal's memories that pass f by BM25 over
// content (weight 1) and tags (weight 0.5) in the principal's own index,
// best first, ties by id: the statistics behind the scores are the
// principal's alone. Words found in more than commonLimit of its memories
// are left out (see keywordCommonDocs; 0 keeps every word); it returns
// them, unquoted.
func keywordSearch(ctx context.Context, tx *sql.Tx, principal string, f memory.Filter, text string, depth, commonLimit int) ([]memory.Scored, []string, error) {
	words := ftsWords(text)
	if len(words) == 0 {
		return nil, nil, nil
	}
	table, ok, err := ftsTable(ctx, tx, principal)
	if err != nil || !ok {
		return nil, nil, err
	}
	var common []string
	if commonLimit > 0 {
		if words, common, err = commonWords(ctx, tx, principal, table, words, commonLimit); err != nil {
			return nil, nil, err
		}
	}
	for i, w := range common {
		common[i] = strings.ReplaceAll(strings.Trim(w, `"`), `""`, `"`)
	}
	q := strings.Join(words, " OR ")
	if f.Empty() {
		out, err := bm25Top(ctx, tx, table, q, depth)
		return out, common, err
	}
	// Rank the whole index, then keep the memories that pass f: this
	// reads the memories rows of the best few rather than of every
	// match. Widen while too few pass, up to 64·depth.
	for limit := depth; limit <= 64*depth; limit *= 4 {
		all, err := bm25Top(ctx, tx, table, q, limit)
		if err != nil {
			return nil, nil, err
		}
		ids := make([]int64, len(all))
		for i, c := range all {
			ids[i] = c.ID
		}
		pass, err := filterIDs(ctx, tx, principal, f, ids)
		if err != nil {
			return nil, nil, err
		}
		ok := make(map[int64]bool, len(pass))
		for _, id := range pass {
			ok[id] = true
		}
		out := make([]memory.Scored, 0, min(depth, len(pass)))
		for _, c := range all {
			if ok[c.ID] && len(out) < depth {
				out = append(out, c)
			}
		}
		if len(out) == depth || len(all) < limit {
			return out, common, nil
		}
	}
	// The filter passes few of the matches: filter while ranking.
	where, args := filterWhere(f, principal)
	rows, err := tx.QueryContext(ctx, `SELECT m.id, bm25(`+table+`, 1.0, 0.5) AS s FROM `+table+` JOIN memories m ON m.id = `+table+`.rowid
		WHERE `+table+` MATCH ? AND `+where+` ORDER BY s, m.id LIMIT ?`, append(append([]any{q}, args...), depth)...)
	if err != nil {
		return nil, nil, fmt.Errorf("keyword search: %w", err)
	}
	out, err := scanBM25(rows)
	return out, common, err
}

// bm25Top returns the limit best matches of the FTS5 query q in the index
// table.
func bm25Top(ctx context.Context, tx *sql.Tx, table, q string, limit int) ([]memory.Scored, error) {
	rows, err := tx.QueryContext(ctx, `SELECT rowid, bm25(`+table+`, 1.0, 0.5) AS s FROM `+table+`
		WHERE `+table+` MATCH ? ORDER BY s, rowid LIMIT ?`, q, limit)
	if err != nil {
		return nil, fmt.Errorf("keyword search: %w", err)
	}
	return scanBM25(rows)
}

func scanBM25(rows *sql.Rows) ([]memory.Scored, error) {
	defer rows.Close()
	var out []memory.Scored
	for rows.Next() {
		var c memory.Scored
		if err := rows.Scan(&c.ID, &c.Score); err != nil {
			return nil, fmt.Errorf("keyword search: %w", err)
		}
		c.Score = -c.Score // FTS5's bm25 is lower-is-better
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("keyword search: %w", err)
	}
	return out, nil
}
