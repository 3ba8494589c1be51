package memory

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/codecell/codecell/tools"
)

// Recall modes.
const (
	ModeHybrid  = "hybrid"
	ModeVector  = "vector"
	ModeKeyword = "keyword"
)

// rrfK is the constant of reciprocal rank fusion (Cormack et al. 2009):
// a result at rank r in a list contributes 1/(rrfK + r).
const rrfK = 60

// RecallInput is a search of the caller's memories.
type RecallInput struct {
	Query string `json:"query"`
	// Layer is a shorthand for Filter.Layers with one layer.
	Layer Layer `json:"layer,omitempty"`
	Filter
	Limit int `json:"limit,omitempty"` // default 10, at most 100
	// Mode is hybrid (default), vector or keyword.
	Mode string `json:"mode,omitempty"`
	// RecencyWeight in [0, 1] blends in how recent a memory is:
	// score = (1-w)·relevance + w·0.5^(age/half-life).
	RecencyWeight float64 `json:"recency_weight,omitempty"`
	// HalfLifeDays is the age at which recency counts half (default 30).
	HalfLifeDays float64 `json:"half_life_days,omitempty"`
	// Exact forces an exact search even on a large store: every vector is
	// scanned and every query word ranks (see RecallResult.CommonWords).
	Exact bool `json:"exact,omitempty"`
}

// Hit is one recalled memory with its scores.
type Hit struct {
	Memory
	// Score orders the results, higher is better. In hybrid mode it is the
	// reciprocal-rank-fusion score scaled to [0, 1] (1: first in both
	// lists); in vector mode the cosine similarity; in keyword mode the
	// BM25 score. Recency, if weighted, is blended in.
	Score float64 `json:"score"`
	// VectorScore is the cosine similarity to the query and VectorRank its
	// rank (1-based) in the vector list, when the memory was in it.
	VectorScore *float64 `json:"vector_score,omitempty"`
	VectorRank  int      `json:"vector_rank,omitempty"`
	// KeywordScore is the BM25 score (higher is better) and KeywordRank
	// its rank in the keyword list, when the memory was in it.
	KeywordScore *float64 `json:"keyword_score,omitempty"`
	KeywordRank  int      `json:"keyword_rank,omitempty"`
	// Recency is 0.5^(age/half-life), when recency is weighted.
	Recency *float64 `json:"recency,omitempty"`
}

// RecallResult is the answer of Recall.
type RecallResult struct {
	Results []Hit  `json:"results"`
	Mode    string `json:"mode"`
	// Exact is false when the vector list came from the binary-code pass
	// (large stores) rather than an exact scan.
	Exact bool `json:"exact"`
	// CommonWords are query words left out of the keyword ranking because
	// they occur in so many memories that they hardly tell them apart
	// (large stores only; the vector ranking still uses them). Exact keeps
	// them.
	CommonWords []string `json:"common_words,omitempty"`
}

// Scored is a memory id with the score one retriever gave it.
type Scored struct {
	ID    int64
	Score float64
}

// Recall searches the caller's memories: vector similarity and BM25 each
// rank candidates, and reciprocal rank fusion merges the two lists. Ties
// are broken by id, so the same query on the same data gives the same
// answer. Returned memories have their access counted.
func (s *Store) Recall(ctx context.Context, in RecallInput) (RecallResult, error) {
	principal := tools.CallerFrom(ctx).Principal
	if err := NormalizeRecall(&in, s.lim); err != nil {
		return RecallResult{}, err
	}
	s.vmu.RLock()
	defer s.vmu.RUnlock()
	if err := s.vectorsReady(); err != nil {
		return RecallResult{}, err
	}
	depth := in.Limit
	if in.Mode == ModeHybrid {
		depth = min(max(in.Limit*5, 50), 500)
	}
	var qvec []float32
	if in.Mode != ModeKeyword {
		vs, err := Embed(ctx, s.emb, []string{in.Query})
		if err != nil {
			return RecallResult{}, err
		}
		qvec = vs[0]
	}
	out := RecallResult{Mode: in.Mode, Results: []Hit{}, Exact: true}
	now := s.now()
	err := s.read(ctx, func(tx *sql.Tx) error {
		var vec, kw []Scored
		var err error
		if qvec != nil {
			if vec, out.Exact, err = s.vectorSearch(ctx, tx, principal, in.Filter, qvec, depth, in.Limit, in.Exact); err != nil {
				return err
			}
		}
		if in.Mode != ModeVector {
			commonLimit := s.commonDocs
			if in.Exact {
				commonLimit = 0
			}
			if kw, out.CommonWords, err = keywordSearch(ctx, tx, principal, in.Filter, in.Query, depth, commonLimit); err != nil {
				return err
			}
		}
		hits := Fuse(in.Mode, vec, kw)
		if in.RecencyWeight > 0 {
			if err := applyRecency(ctx, tx, hits, now, in.RecencyWeight, in.HalfLifeDays); err != nil {
				return err
			}
		}
		SortHits(hits)
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
		return RecallResult{}, fmt.Errorf("recall: %w", err)
	}
	ids := make([]int64, len(out.Results))
	for i, h := range out.Results {
		ids[i] = h.ID
	}
	if err := s.touch(ctx, ids); err != nil {
		return RecallResult{}, fmt.Errorf("recall: %w", err)
	}
	return out, nil
}

func cmpID(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// NormalizeRecall checks a recall against lim and sets its defaults, as
// Recall does.
func NormalizeRecall(in *RecallInput, lim Limits) error {
	in.Query = strings.TrimSpace(in.Query)
	if in.Query == "" {
		return Invalid("query is empty; describe what to recall")
	}
	if err := validateText("query", in.Query, lim.Defaults().MaxContentBytes, true); err != nil {
		return err
	}
	if in.Layer != "" {
		in.Layers = append(in.Layers, in.Layer)
	}
	if err := in.Filter.Normalize(); err != nil {
		return err
	}
	if in.Limit == 0 {
		in.Limit = 10
	}
	if in.Limit < 1 || in.Limit > 100 {
		return Invalid("limit is %d; it must be between 1 and 100", in.Limit)
	}
	switch in.Mode {
	case "":
		in.Mode = ModeHybrid
	case ModeHybrid, ModeVector, ModeKeyword:
	default:
		return Invalid("mode %q: use hybrid, vector or keyword", Clip(in.Mode, 20))
	}
	if in.RecencyWeight < 0 || in.RecencyWeight > 1 || math.IsNaN(in.RecencyWeight) {
		return Invalid("recency_weight is %v; it must be between 0 and 1", in.RecencyWeight)
	}
	if in.HalfLifeDays == 0 {
		in.HalfLifeDays = 30
	}
	if in.HalfLifeDays <= 0 || math.IsNaN(in.HalfLifeDays) || in.HalfLifeDays > 36500 {
		return Invalid("half_life_days is %v; it must be more than 0 and at most 36500", in.HalfLifeDays)
	}
	return nil
}

// Fuse merges a vector list and a keyword list, each best first, into
// hits as Recall does: in hybrid mode by reciprocal rank fusion (each list
// contributes 1/(rrfK+rank), scaled so that first place in both lists
// scores 1), else by the list's own score.
// The hits are in no particular order; see SortHits.
func Fuse(mode string, vec, kw []Scored) []Hit {
	byID := map[int64]*Hit{}
	var order []int64
	get := func(id int64) *Hit {
		h, ok := byID[id]
		if !ok {
			h = &Hit{Memory: Memory{ID: id}}
			byID[id] = h
			order = append(order, id)
		}
		return h
	}
	lists := 0
	if mode == ModeHybrid || mode == ModeVector {
		lists++
	}
	if mode == ModeHybrid || mode == ModeKeyword {
		lists++
	}
	for i, c := range vec {
		h := get(c.ID)
		v := c.Score
		h.VectorScore, h.VectorRank = &v, i+1
		switch mode {
		case ModeHybrid:
			h.Score += 1 / float64(rrfK+i+1)
		case ModeVector:
			h.Score = v
		}
	}
	for i, c := range kw {
		h := get(c.ID)
		v := c.Score
		h.KeywordScore, h.KeywordRank = &v, i+1
		switch mode {
		case ModeHybrid:
			h.Score += 1 / float64(rrfK+i+1)
		case ModeKeyword:
			h.Score = v
		}
	}
	out := make([]Hit, 0, len(order))
	for _, id := range order {
		h := byID[id]
		if mode == ModeHybrid {
			h.Score = h.Score * float64(rrfK+1) / float64(lists)
		}
		out = append(out, *h)
	}
	return out
}

func applyRecency(ctx context.Context, tx *sql.Tx, hits []Hit, now time.Time, w, halfLifeDays float64) error {
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
	Recency(hits, created, now, w, halfLifeDays)
	return nil
}

// recencyOf is 0.5^(age/half-life) of a memory of time t.
func recencyOf(now, t time.Time, halfLifeDays float64) float64 {
	halfLife := halfLifeDays * 24 * float64(time.Hour.Milliseconds())
	age := math.Max(0, float64(now.UnixMilli()-t.UnixMilli()))
	return math.Pow(0.5, age/halfLife)
}

// SortHits orders hits best first, ties by id.
func SortHits(hits []Hit) {
	slices.SortFunc(hits, func(a, b Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return cmpID(a.ID, b.ID)
	})
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
func (s *Store) vectorSearch(ctx context.Context, tx *sql.Tx, principal string, f Filter, q []float32, depth, limit int, exact bool) ([]Scored, bool, error) {
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
func exactSearch(ctx context.Context, tx *sql.Tx, principal string, f Filter, q []float32, depth int) ([]Scored, error) {
	var query string
	var args []any
	blob := EncodeVector(q)
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
	var out []Scored
	for rows.Next() {
		var c Scored
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
func (s *Store) coarseSearch(ctx context.Context, tx *sql.Tx, principal string, layers []Layer, code []byte, k int) ([]int64, error) {
	ids, ok, err := s.codes.nearest(ctx, tx, s.quant, principal, layers, code, k)
	if err != nil || ok {
		return ids, err
	}
	return coarseSearchSQL(ctx, tx, principal, layers, code, k)
}

func coarseSearchSQL(ctx context.Context, tx *sql.Tx, principal string, layers []Layer, code []byte, k int) ([]int64, error) {
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
func filterIDs(ctx context.Context, tx *sql.Tx, principal string, f Filter, ids []int64) ([]int64, error) {
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
func rescore(ctx context.Context, tx *sql.Tx, ids []int64, q []float32, depth int) ([]Scored, error) {
	out := make([]Scored, 0, len(ids))
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
			if buf, err = DecodeVector(blob, buf); err != nil {
				rows.Close()
				return nil, fmt.Errorf("re-score memory %d: %w", id, err)
			}
			out = append(out, Scored{ID: id, Score: float64(Dot(buf, q))})
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

func sortScored(xs []Scored) {
	slices.SortFunc(xs, func(a, b Scored) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// KeywordCommonDocs bounds the work of the keyword ranking on a large
// store (the default of both backends). FTS5 computes BM25 for every
// memory that contains a query word, at about half a microsecond each, so
// a word found in most memories (in 100k synthetic memories, "deploy" is
// in 60k) costs tens of milliseconds while it weighs little: a word's IDF,
// ln((N-n+0.5)/(n+0.5)), falls as the number n of memories holding it
// grows, and FTS5 sets it to almost zero once n > N/2. So a query word
// found in more than KeywordCommonDocs of the caller's memories is left
// out of the keyword ranking and reported in RecallResult.CommonWords,
// unless every word of the query is that common or the search is exact;
// the vector ranking still sees it. The scores of the other words do not
// change: FTS5 computes each word's IDF over the whole index whatever else
// the query holds. Principals with at most KeywordCommonDocs memories are
// always ranked on every word.
const KeywordCommonDocs = 2000

// QueryWords returns the words of a free-text query that keyword recall
// ranks by: tokenized as the hashing embedder does, stop words dropped,
// each once, at most 64.
func QueryWords(text string) []string {
	seen := map[string]bool{}
	var words []string
	for _, w := range tokenize(text) {
		if stopwords[w] || seen[w] {
			continue
		}
		seen[w] = true
		words = append(words, w)
		if len(words) == 64 {
			break
		}
	}
	return words
}

// ftsWords returns the words of a free-text query (QueryWords), each
// quoted as an FTS5 phrase so that no word is read as an operator.
func ftsWords(text string) []string {
	var terms []string
	for _, w := range QueryWords(text) {
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
func keywordSearch(ctx context.Context, tx *sql.Tx, principal string, f Filter, text string, depth, commonLimit int) ([]Scored, []string, error) {
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
		out := make([]Scored, 0, min(depth, len(pass)))
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
func bm25Top(ctx context.Context, tx *sql.Tx, table, q string, limit int) ([]Scored, error) {
	rows, err := tx.QueryContext(ctx, `SELECT rowid, bm25(`+table+`, 1.0, 0.5) AS s FROM `+table+`
		WHERE `+table+` MATCH ? ORDER BY s, rowid LIMIT ?`, q, limit)
	if err != nil {
		return nil, fmt.Errorf("keyword search: %w", err)
	}
	return scanBM25(rows)
}

func scanBM25(rows *sql.Rows) ([]Scored, error) {
	defer rows.Close()
	var out []Scored
	for rows.Next() {
		var c Scored
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

// Recency blends recency into hits as Recall does: score =
// (1-w)·score + w·0.5^(age/half-life), where created gives each hit's
// creation time.
func Recency(hits []Hit, created map[int64]time.Time, now time.Time, w, halfLifeDays float64) {
	for i := range hits {
		t, ok := created[hits[i].ID]
		if !ok {
			continue
		}
		r := recencyOf(now, t, halfLifeDays)
		hits[i].Recency = &r
		hits[i].Score = (1-w)*hits[i].Score + w*r
	}
}
