package memory

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// referenceKeyword is the plain BM25 ranking of the FTS5 query made of
// words, filtered in SQL: what keywordSearch must return.
func referenceKeyword(tb testing.TB, tx *sql.Tx, principal string, f Filter, words []string, depth int) []scored {
	tb.Helper()
	where, args := f.where(principal)
	rows, err := tx.QueryContext(tb.Context(), `SELECT m.id, bm25(memory_fts, 1.0, 0.5) AS s FROM memory_fts JOIN memories m ON m.id = memory_fts.rowid
		WHERE memory_fts MATCH ? AND `+where+` ORDER BY s, m.id LIMIT ?`, append(append([]any{strings.Join(words, " OR ")}, args...), depth)...)
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
// BM25 over the words it
// keeps, for the main principal (ranked over the table, then filtered) and
// for one that owns few memories (filtered while ranking at small depths),
// with filters;
// that it keeps every word when exact; and that the words it leaves out
// are the ones in more than the limit of memories.
func TestKeywordSearchMatchesBM25(t *testing.T) {
	const limit = 150
	s := openTest(t, Config{})
	ctx := t.Context()
	fillSynthetic(t, s, 2*limit, 11)
	r := rand.New(rand.NewPCG(8, 8))
	alice := as(ctx, "alice")
	for i := 0; i < 60; i++ {
		mustRemember(t, s, alice, RememberInput{Layer: Layers[i%3], Content: synthText(r), Tags: []string{fmt.Sprintf("t%d", i%7)}})
	}
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	df := func(w string) int {
		var n int
		if err := tx.QueryRow(`SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?`, w).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	filters := map[string]Filter{"none": {}, "layer": {Layers: []Layer{Semantic}}, "tag": {Tags: []string{"t3"}}}
	sawCommon := false
	for q := 0; q < 12; q++ {
		text := synthText(r) + " deploy"
		all := ftsWords(text)
		var keep, common []string
		for _, w := range all {
			switch n := df(w); {
			case n > limit:
				common = append(common, w)
			case n > 0:
				keep = append(keep, w)
			}
		}
		if len(common) == 0 {
			t.Fatalf("query %q has no common word; the store is too small for this test", text)
		}
		sawCommon = true
		depth := []int{50, 5, 1}[q%3] // a small depth filters while ranking sooner
		for _, principal := range []string{"", "alice"} {
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
	got, common, err := keywordSearch(ctx, tx, "", Filter{}, "deploy", 10, limit)
	if err != nil || len(common) != 0 {
		t.Fatalf("common-only query: %v, common %q", err, common)
	}
	if want := referenceKeyword(t, tx, "", Filter{}, []string{`"deploy"`}, 10); !slices.Equal(got, want) {
		t.Fatalf("common-only query:\n got %v\nwant %v", got, want)
	}
}

// TestRecallReportsCommonWords checks that Recall names the words it left
// out of the keyword ranking, and that Exact keeps them.
func TestRecallReportsCommonWords(t *testing.T) {
	s := openTest(t, Config{})
	s.commonDocs = 150
	ctx := context.Background()
	fillSynthetic(t, s, 300, 12)
	r, err := s.Recall(ctx, RecallInput{Query: "deploy kubernetes tugudu"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.CommonWords, "deploy") {
		t.Fatalf("common words %q, want deploy among them", r.CommonWords)
	}
	r, err = s.Recall(ctx, RecallInput{Query: "deploy kubernetes tugudu", Exact: true})
	if err != nil || len(r.CommonWords) != 0 {
		t.Fatalf("exact recall: %v, common words %q", err, r.CommonWords)
	}
	// A small store ranks on every word.
	small := openTest(t, Config{})
	small.commonDocs = 150
	fillSynthetic(t, small, 150, 13)
	if r, err := small.Recall(ctx, RecallInput{Query: "deploy kubernetes"}); err != nil || len(r.CommonWords) != 0 {
		t.Fatalf("small store: %v, common words %q", err, r.CommonWords)
	}
}
