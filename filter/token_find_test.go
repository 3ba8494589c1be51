package filter_test

import (
	"slices"
	"testing"

	"github.com/codecell/codecell/filter"
)

func TestFindTokens(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"none", "plain text", nil},
		{"two", "mail ⟦email:0a1b2c3d⟧ and ⟦national_id:00112233445566ff⟧.", []string{"⟦email:0a1b2c3d⟧", "⟦national_id:00112233445566ff⟧"}},
		{"marker left out", "⟦password:redacted⟧ ⟦email:0a1b2c3d⟧", []string{"⟦email:0a1b2c3d⟧"}},
		{"not a token", "⟦email:xyz⟧ ⟦:0a1b2c3d⟧", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := filter.FindTokens(tc.text); !slices.Equal(got, tc.want) {
				t.Errorf("FindTokens(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
	if c, ok := filter.TokenClass("⟦national_id:0a1b2c3d⟧"); !ok || c != "national_id" {
		t.Errorf("TokenClass = %q, %v", c, ok)
	}
	if _, ok := filter.TokenClass("⟦email:0a1b2c3d⟧ tail"); ok {
		t.Error("TokenClass took text with a tail for a token")
	}
}
