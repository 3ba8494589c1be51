package search

import (
	"slices"
	"testing"
)

func TestTerms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"getUser", []string{"get", "user"}},
		{"get_user", []string{"get", "user"}},
		{"Get the user", []string{"get", "user"}},
		{"HTTPServer.listen", []string{"http", "server", "listen"}},
		{"github.search_issues", []string{"github", "search", "issu"}},
		{"created, creating and creates", []string{"creat", "creat", "creat"}},
		{"scheduled meetings", []string{"schedul", "meet"}},
		{"activities replies", []string{"activity", "reply"}},
		{"days bugs this", []string{"day", "bug"}},
		{"stopped running", []string{"stop", "run"}},
		{"matches boxes classes", []string{"match", "box", "class"}},
		{"status analysis", []string{"status", "analysis"}},
		{"données café", []string{"données", "café"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := terms(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSynonymsAreSymmetricAndStemmed(t *testing.T) {
	t.Parallel()
	for _, g := range synonymGroups {
		for _, w := range g {
			if len(synonyms[stem(w)]) == 0 {
				t.Errorf("%q (stem %q) has no synonyms", w, stem(w))
			}
		}
	}
	for a, bs := range synonyms {
		for _, b := range bs {
			if !slices.Contains(synonyms[b], a) {
				t.Errorf("%q → %q but not back", a, b)
			}
		}
	}
	if !slices.Contains(synonyms["delet"], "remov") {
		t.Errorf("delete does not match remove: %v", synonyms["delet"])
	}
}
