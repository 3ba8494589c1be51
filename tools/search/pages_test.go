package search_test

import (
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/search"
	"github.com/codecell/codecell/vfs"
)

// docsOnly hides the pages of a Docs: it has only Docs' methods.
type docsOnly struct{ search.Docs }

// TestPages: the pages of a PageDocs are ranked with the tools, under
// their names, with their files' costs; a Docs without pages adds none.
func TestPages(t *testing.T) {
	t.Parallel()
	r := newCatalog(t)
	fsys := vfs.New(r)
	for _, tt := range []struct {
		query, want string
	}{
		{"dry run writes", "plan"},
		{"commit a plan", "plan"},
		{"long running task", "tasks"},
		{"report progress", "progress"},
	} {
		t.Run(tt.query, func(t *testing.T) {
			hits, err := newIndex(t, r).Search(search.Query{Text: tt.query, Limit: 3})
			if err != nil || len(hits) == 0 {
				t.Fatalf("hits %v, %v", hits, err)
			}
			h := hits[0]
			if h.Name != tt.want || h.Cost.SignaturePath != "runtime/"+tt.want+".d.ts" || h.Cost.Full.Bytes == 0 {
				t.Fatalf("first hit %+v, want the page %s", h, tt.want)
			}
			without := search.New(r, func(c tools.Caller) search.Docs { return docsOnly{fsys.For(c)} })
			hits, err = without.Search(search.Query{Text: tt.query, Limit: search.MaxLimit})
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hits {
				if h.Name == tt.want {
					t.Fatalf("a Docs without pages ranks the page %s", h.Name)
				}
			}
		})
	}
	// A page is its own category.
	hits, err := newIndex(t, r).Search(search.Query{Category: "plan"})
	if err != nil || len(hits) != 1 || hits[0].Name != "plan" {
		t.Fatalf("category plan: %+v, %v", hits, err)
	}
}
