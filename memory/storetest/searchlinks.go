package storetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/codecell/codecell/memory"
)

// testSearchLinks: learning from use counts each query word and called
// tool, keeps nothing else, refuses what is out of bounds, and forgets
// everything on reset; a second instance reads what the first learned.
func testSearchLinks(t *testing.T, open Opener) {
	st, second := open(t)
	ctx := t.Context()
	if err := st.LearnSearch(ctx, []string{"kick", "workflow"}, []string{"gh.actions_create_workflow_dispatch"}); err != nil {
		t.Fatal(err)
	}
	if err := st.LearnSearch(ctx, []string{"workflow"}, []string{"gh.actions_create_workflow_dispatch", "gh.actions_list_workflows"}); err != nil {
		t.Fatal(err)
	}
	want := []memory.SearchLink{
		{Term: "workflow", Tool: "gh.actions_create_workflow_dispatch", Count: 2},
		{Term: "kick", Tool: "gh.actions_create_workflow_dispatch", Count: 1},
		{Term: "workflow", Tool: "gh.actions_list_workflows", Count: 1},
	}
	got, err := st.SearchLinks(ctx)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("SearchLinks = %v, %v; want %v", got, err, want)
	}
	if o := second(); o != nil {
		got, err := o.SearchLinks(ctx)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("the second instance reads %v, %v; want %v", got, err, want)
		}
	}
	for _, bad := range [][2][]string{
		{{""}, {"gh.x"}},
		{{"a\nb"}, {"gh.x"}},
		{{strings.Repeat("w", 200)}, {"gh.x"}},
		{make([]string, memory.MaxSearchLinkTerms+1), {"gh.x"}},
	} {
		if err := st.LearnSearch(ctx, bad[0], bad[1]); err == nil {
			t.Errorf("LearnSearch(%q, %q) stored it", bad[0], bad[1])
		}
	}
	if err := st.LearnSearch(ctx, nil, []string{"gh.x"}); err != nil {
		t.Errorf("no terms: %v", err)
	}
	n, err := st.ResetSearchLinks(ctx)
	if err != nil || n != 3 {
		t.Errorf("ResetSearchLinks = %d, %v; want 3", n, err)
	}
	if got, err := st.SearchLinks(ctx); err != nil || len(got) != 0 {
		t.Errorf("after reset: %v, %v", got, err)
	}
}
