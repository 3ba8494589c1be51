package search_test

import (
	"fmt"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/search"
)

// TestSameAnswerEveryTime asks the same questions again and again: the
// hits and their scores never change (a query's synonyms once depended
// on the order Go happened to range over a map in).
func TestSameAnswerEveryTime(t *testing.T) {
	t.Parallel()
	ix := newIndex(t, newCatalog(t))
	for _, q := range []string{"search memories", "find a file", "delete old records", "list open issues", "send a message to the team"} {
		t.Run(q, func(t *testing.T) {
			var first string
			for i := range 50 {
				hits, err := ix.Search(search.Query{Caller: tools.Caller{}, Text: q, Detail: search.DetailName, Limit: 20})
				if err != nil {
					t.Fatal(err)
				}
				got := fmt.Sprint(hits)
				if i == 0 {
					first = got
				} else if got != first {
					t.Fatalf("search %d differs from the first:\n%s\n%s", i, got, first)
				}
			}
		})
	}
}
