package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// referenceKeyword is the plain BM25 ranking of the FTS5 query made of
// words over the principal's index, filtered in SQL: what keywordSearch
// must return.
func referenceKeyword(tb testing.TB, tx *sql.Tx, principal string, f memory.Filter, words []string, depth int) []memory.Scored {
	tb.Helper()
	table, ok, err := ftsTable(tb.Context(), tx, principal)
	if err != nil || !ok {
		tb.Fatalf("no index for %q: %v", principal, err)
	}
	where, args := filterWhere(f, principal)
	rows, err := tx.QueryContext(tb.Context(), `SELECT m.id, bm25(`+table+`, 1.0, 0.5) AS s FROM `+table+` JOIN memories m ON m.id = `+table+`.rowid
		WHERE `+table+` MATCH ? AND `+where+` ORDER BY s, m.id LIMIT ?`, append(append([]any{strings.Join(words, " OR ")}, args...), depth)...)
	if err != nil {
		tb.Fatal(err)
	}
	out, err := scanBM25(rows)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func unquote(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = strings.Trim(w, `"`)
	}
	return out
}

// TestKeywordSearchMatchesBM25 checks, on a store large enough for common
// words (with a lowered limit), that the keyword ranking is exactly FTS5's
// BM25 over the words it keeps, in the principal's own index, for the
// main principal (ranked over its index, then filtered) and for one that
// owns few memories (filtered while ranking at small depths), with
// filters; that it keeps every word when exact; and that the words it
// leaves out are the ones in more than the limit of the principal's
// memories.
func TestKeywordSearchMatchesBM25(t *testing.T) {
	const limit = 150
	s := openTest(t, Config{})
	ctx := t.Context()
	fillSynthetic(t, s, 2*limit, 11)
	r := rand.New(rand.NewPCG(8, 8))
	alice := as(ctx, "alice")
	for i := 0; i < 60; i++ {
		mustRemember(t, s, alice, memory.RememberInput{Layer: memory.Layers[i%3], Content: synthText(r), Tags: []string{fmt.Sprintf("t%d", i%7)}})
	}
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	df := func(principal, w string) int {
		table, _, err := ftsTable(ctx, tx, principal)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := tx.QueryRow(`SELECT count(*) FROM `+table+` WHERE `+table+` MATCH ?`, w).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	count := map[string]int{"": 2 * limit, "alice": 60}
	filters := map[string]memory.Filter{"none": {}, "layer": {Layers: []memory.Layer{memory.Semantic}}, "tag": {Tags: []string{"t3"}}}
	sawCommon := false
	for q := 0; q < 12; q++ {
		text := synthText(r) + " deploy"
		all := ftsWords(text)
		depth := []int{50, 5, 1}[q%3] // a small depth filters while ranking sooner
		for _, principal := range []string{"", "alice"} {
			keep, common := all, []string(nil)
			if count[principal] > limit {
				keep = nil
				for _, w := range all {
					switch n := df(principal, w); {
					case n > limit:
						common = append(common, w)
					case n > 0:
						keep = append(keep, w)
					}
				}
			}
			if len(common) > 0 {
				sawCommon = true
			}
			for name, f := range filters {
				t.Run(fmt.Sprintf("q%d/%q/%s", q, principal, name), func(t *testing.T) {
					got, gotCommon, err := keywordSearch(ctx, tx, principal, f, text, depth, limit)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(gotCommon, unquote(common)) {
						t.Fatalf("common words %q, want %q", gotCommon, unquote(common))
					}
					if want := referenceKeyword(t, tx, principal, f, keep, depth); !slices.Equal(got, want) {
						t.Fatalf("ranking differs from BM25 over %q:\n got %v\nwant %v", keep, got, want)
					}
					got, gotCommon, err = keywordSearch(ctx, tx, principal, f, text, depth, 0)
					if err != nil {
						t.Fatal(err)
					}
					if len(gotCommon) != 0 {
						t.Fatalf("exact search left out %q", gotCommon)
					}
					if want := referenceKeyword(t, tx, principal, f, all, depth); !slices.Equal(got, want) {
						t.Fatalf("exact ranking differs from BM25 over every word:\n got %v\nwant %v", got, want)
					}
				})
			}
		}
	}
	if !sawCommon {
		t.Fatal("no query had a common word")
	}

	// A query of common words only is ranked on all of them.
	got, common, err := keywordSearch(ctx, tx, "", memory.Filter{}, "deploy", 10, limit)
	if err != nil || len(common) != 0 {
		t.Fatalf("common-only query: %v, common %q", err, common)
	}
	if want := referenceKeyword(t, tx, "", memory.Filter{}, []string{`"deploy"`}, 10); !slices.Equal(got, want) {
		t.Fatalf("common-only query:\n got %v\nwant %v", got, want)
	}
}

// TestKeywordScoresPerPrincipal is issue 10's leak through BM25: with one
// index for everyone, A's scores for a query moved with how often the
// query's words occur in B's memories. A's scores (and the words left out
// as common) are the same whether or not B holds many memories with the
// words.
func TestKeywordScoresPerPrincipal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var aliceMems []memory.RememberInput
	for i := 0; i < 40; i++ {
		aliceMems = append(aliceMems, memory.RememberInput{Content: synthText(r), Tags: []string{fmt.Sprintf("t%d", i%5)}})
	}
	aliceMems = append(aliceMems, memory.RememberInput{Content: "the payroll export runs on fridays", Tags: []string{"payroll"}})
	queries := []string{"payroll export", "deploy kubernetes", synthText(r), "fridays"}

	recall := func(t *testing.T, withBob bool) [][]float64 {
		s := openTest(t, Config{})
		s.commonDocs = 20
		alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
		if withBob {
			var bobMems []memory.RememberInput
			for i := 0; i < 300; i++ {
				bobMems = append(bobMems, memory.RememberInput{Content: fmt.Sprintf("payroll export deploy kubernetes fridays note %d", i)})
			}
			if _, err := s.RememberBatch(bob, bobMems); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.RememberBatch(alice, aliceMems); err != nil {
			t.Fatal(err)
		}
		var out [][]float64
		for _, q := range queries {
			res, err := s.Recall(alice, memory.RecallInput{Query: q, Mode: memory.ModeKeyword, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var scores []float64
			for _, h := range res.Results {
				scores = append(scores, h.Score)
			}
			scores = append(scores, float64(len(res.CommonWords)))
			out = append(out, scores)
		}
		return out
	}
	alone, beside := recall(t, false), recall(t, true)
	for i, q := range queries {
		if len(alone[i]) < 2 {
			t.Fatalf("query %q found nothing of alice's", q)
		}
		if !slices.Equal(alone[i], beside[i]) {
			t.Errorf("query %q: alice's scores alone %v, beside bob's memories %v", q, alone[i], beside[i])
		}
	}
}

// TestRecallReportsCommonWords checks that Recall names the words it left
// out of the keyword ranking, and that Exact keeps them.
func TestRecallReportsCommonWords(t *testing.T) {
	s := openTest(t, Config{})
	s.commonDocs = 150
	ctx := context.Background()
	fillSynthetic(t, s, 300, 12)
	r, err := s.Recall(ctx, memory.RecallInput{Query: "deploy kubernetes tugudu"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.CommonWords, "deploy") {
		t.Fatalf("common words %q, want deploy among them", r.CommonWords)
	}
	r, err = s.Recall(ctx, memory.RecallInput{Query: "deploy kubernetes tugudu", Exact: true})
	if err != nil || len(r.CommonWords) != 0 {
		t.Fatalf("exact recall: %v, common words %q", err, r.CommonWords)
	}
	// A small store ranks on every word.
	small := openTest(t, Config{})
	small.commonDocs = 150
	fillSynthetic(t, small, 150, 13)
	if r, err := small.Recall(ctx, memory.RecallInput{Query: "deploy kubernetes"}); err != nil || len(r.CommonWords) != 0 {
		t.Fatalf("small store: %v, common words %q", err, r.CommonWords)
	}
}
