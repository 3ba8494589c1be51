package mcpserver

import (
	"fmt"
	"log/slog"
	"testing"
)

// TestLearningShares (issue 19, third attack round, L2): one principal's
// searches of random words filled the links awaiting their quorum, and
// nobody's new links were learned until a restart; and once a link was
// agreed, every later learning of it by one principal counted, so the
// first agreement unlocked that principal's unlimited weight.
func TestLearningShares(t *testing.T) {
	t.Parallel()
	newL := func() *learner {
		return newLearner(t.Context(), LearnConfig{}, 3, nil, nil, slog.New(slog.DiscardHandler))
	}
	t.Run("one principal cannot fill the table", func(t *testing.T) {
		l := newL()
		for i := range learnMaxPending + 100 {
			l.agreed("mallory", []string{fmt.Sprintf("w%d", i)}, "crm.delete_all")
		}
		for _, p := range []string{"alice", "bob", "carol"} {
			l.agreed(p, []string{"invoice"}, "billing.send_invoice")
		}
		if !l.agreedLinks[learnLink{"invoice", "billing.send_invoice"}] {
			t.Errorf("after one principal's %d links, three principals' link is not learned (%d awaiting their quorum)", learnMaxPending+100, len(l.makers))
		}
	})
	t.Run("an agreed link counts once per principal", func(t *testing.T) {
		l := newL()
		counts := 0
		for _, p := range []string{"alice", "bob", "carol"} {
			counts += len(l.agreed(p, []string{"invoice"}, "billing.send_invoice"))
		}
		for range 50 {
			counts += len(l.agreed("carol", []string{"invoice"}, "billing.send_invoice"))
		}
		if counts != 1 {
			t.Errorf("the link was counted %d times: once when agreed, and carol's 50 more learnings counted", counts)
		}
		if got := l.agreed("dave", []string{"invoice"}, "billing.send_invoice"); len(got) != 1 {
			t.Errorf("a new principal's learning of an agreed link does not count: %v", got)
		}
		if got := l.agreed("dave", []string{"invoice"}, "billing.send_invoice"); len(got) != 0 {
			t.Errorf("a principal's second learning of an agreed link counts again: %v", got)
		}
	})
	t.Run("one principal's counts are bounded", func(t *testing.T) {
		l := newL()
		for i := range learnPerPrincipal + 10 {
			l.agreedLinks[learnLink{fmt.Sprintf("w%d", i), "t"}] = true
		}
		n := 0
		for i := range learnPerPrincipal + 10 {
			n += len(l.agreed("mallory", []string{fmt.Sprintf("w%d", i)}, "t"))
		}
		if n != learnPerPrincipal {
			t.Errorf("one principal counted for %d agreed links, want %d", n, learnPerPrincipal)
		}
	})
}
