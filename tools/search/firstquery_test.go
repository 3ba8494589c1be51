package search_test

import (
	"os"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/search"
	"github.com/codecell/codecell/vfs"
)

// BenchmarkSearchFirstQuery measures a caller's first search over every
// API of apis.txt loaded together (over 5,000 tools): the search that
// makes the index. "made" analyses every tool, as a first start does;
// "kept" reads their terms from the files a previous start kept
// (tools.Registry.SetSnapshots), as a restart does.
func BenchmarkSearchFirstQuery(b *testing.B) {
	if os.Getenv("CODECELL_SEARCH_BENCH") == "" {
		b.Skip("make bench-search runs it: it loads thirteen real API descriptions")
	}
	reg := loadAPIs(b, "dev", "heldout", "extra")
	f := vfs.New(reg)
	first := func(b *testing.B, reg *tools.Registry) {
		ix := search.New(reg, docsOf(f))
		if _, err := ix.Search(search.Query{Text: "list the open issues of a repository", Limit: 5}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("made", func(b *testing.B) {
		for b.Loop() {
			first(b, reg)
		}
		b.ReportMetric(float64(len(reg.List())), "tools")
	})
	b.Run("kept", func(b *testing.B) {
		dir := b.TempDir()
		reg.SetSnapshots(dir, func() string { return "bench" })
		defer reg.SetSnapshots("", nil)
		first(b, reg) // keeps the terms
		for b.Loop() {
			first(b, reg)
		}
	})
}
