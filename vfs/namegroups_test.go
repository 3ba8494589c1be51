package vfs_test

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/vfs"
)

// TestLargeCategoryWithoutGroups (issue 19): an MCP server's tools carry
// no groups; with thousands of them its index.json once ran to 170 KB.
// Such a category is grouped by the words of its tools' names: every
// index within IndexBudget, and every tool found by walking the tree.
func TestLargeCategoryWithoutGroups(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		names func(i int) string
		n     int
	}{
		{"numbered", func(i int) string { return fmt.Sprintf("tool_%04d", i) }, 5000},
		{"verbs and nouns", func(i int) string {
			verbs := []string{"get", "list", "create", "update", "delete", "search", "sync", "archive"}
			return fmt.Sprintf("%s_%s_%d", verbs[i%len(verbs)], []string{"issue", "repo", "user", "team", "label"}[i/len(verbs)%5], i)
		}, 3000},
		{"all different", func(i int) string { return fmt.Sprintf("t%dx", i) }, 400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tools.NewRegistry()
			ts := make([]tools.Tool, tt.n)
			for i := range ts {
				ts[i] = tools.Tool{Name: "big." + tt.names(i), Summary: "Does thing number " + fmt.Sprint(i) + " to a record of the big server.", Handler: nopHandler}
			}
			if err := r.Register(ts...); err != nil {
				t.Fatal(err)
			}
			f := vfs.New(r)
			found := 0
			err := fs.WalkDir(f, "big", func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				switch {
				case strings.HasSuffix(p, "/index.json"):
					b, err := f.ReadFile(p)
					if err != nil {
						return err
					}
					if len(b) > vfs.IndexBudget {
						t.Errorf("%s: %d bytes, budget %d", p, len(b), vfs.IndexBudget)
					}
				case strings.HasSuffix(p, ".d.ts"):
					found++
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if found != tt.n {
				t.Errorf("a walk finds %d declarations, want %d", found, tt.n)
			}
			root, err := f.ReadFile("big/index.json")
			if err != nil || !strings.Contains(string(root), `"groups"`) {
				t.Errorf("big/index.json lists no groups (%v):\n%.400s", err, root)
			}
		})
	}
}
