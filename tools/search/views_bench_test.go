package search_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/search"
)

// BenchmarkSearchViews measures what a search costs beside the warm one
// (BenchmarkSearch) over the ~1,000-tool catalogue: "principal" is a new
// principal's first search — its own view, one skill of its own beside
// the catalogue — and "publish" a search after a global tool came and
// went (a skill published and unpublished), each in ms of a search:
//
//	go test ./tools/search -run '^$' -bench SearchViews -count 3
func BenchmarkSearchViews(b *testing.B) {
	h := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	b.Run("principal", func(b *testing.B) {
		r := bigCatalog(b)
		ix := newIndex(b, r)
		if _, err := ix.Search(search.Query{Text: "list issues"}); err != nil {
			b.Fatal(err)
		}
		var total time.Duration
		for i := 0; b.Loop(); i++ {
			p := fmt.Sprintf("p%d", i)
			if err := r.RegisterScoped(p, tools.Tool{Name: "skills.report_" + p, Summary: "Report on the fleet.", Handler: h}); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			if _, err := ix.Search(search.Query{Text: "list issues", Caller: tools.Caller{Principal: p}}); err != nil {
				b.Fatal(err)
			}
			total += time.Since(start)
		}
		b.ReportMetric(float64(total.Microseconds())/1e3/float64(b.N), "ms/first-search")
	})
	b.Run("publish", func(b *testing.B) {
		r := bigCatalog(b)
		ix := newIndex(b, r)
		if _, err := ix.Search(search.Query{Text: "list issues"}); err != nil {
			b.Fatal(err)
		}
		var total time.Duration
		for b.Loop() {
			if err := r.Register(tools.Tool{Name: "skills.flip", Summary: "Flip.", Handler: h}); err != nil {
				b.Fatal(err)
			}
			r.Unregister("skills.flip")
			start := time.Now()
			if _, err := ix.Search(search.Query{Text: "merge a branch"}); err != nil {
				b.Fatal(err)
			}
			total += time.Since(start)
		}
		b.ReportMetric(float64(total.Microseconds())/1e3/float64(b.N), "ms/search")
	})
}
