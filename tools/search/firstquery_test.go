package search_test

import (
	"os"
	"testing"

	"github.com/codecell/codecell/tools/search"
	"github.com/codecell/codecell/vfs"
)

// BenchmarkSearchFirstQuery measures a caller's first search over every
// API of apis.txt loaded together (over 5,000 tools): the search that
// makes the index.
func BenchmarkSearchFirstQuery(b *testing.B) {
	if os.Getenv("CODECELL_SEARCH_BENCH") == "" {
		b.Skip("make bench-search runs it: it loads thirteen real API descriptions")
	}
	reg := loadAPIs(b, "dev", "heldout", "extra")
	f := vfs.New(reg)
	for b.Loop() {
		ix := search.New(reg, docsOf(f))
		if _, err := ix.Search(search.Query{Text: "list the open issues of a repository", Limit: 5}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(reg.List())), "tools")
}
