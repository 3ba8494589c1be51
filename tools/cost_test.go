package tools_test

import (
	"testing"

	"github.com/codecell/codecell/tools"
)

func TestEstimateTokens(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]int{-5: 0, 0: 0, 1: 1, 3: 1, 4: 1, 5: 2, 8: 2, 9: 3, 1000: 250, 1001: 251} {
		if got := tools.EstimateTokens(n); got != want {
			t.Errorf("EstimateTokens(%d) = %d, want %d", n, got, want)
		}
		if c := tools.CostOf(n); c.Bytes != n || c.Tokens != want {
			t.Errorf("CostOf(%d) = %+v", n, c)
		}
	}
}
