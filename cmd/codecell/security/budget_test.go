package security

import (
	"testing"
)

// TestErrorTextIsBudgeted (issue 9): a 20 MB error message once came back
// as a 42 MB response; every string the model reads passes the budget.
func TestErrorTextIsBudgeted(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.open(t, aliceToken)
	for _, code := range []string{
		`throw new Error("e".repeat(20*1024*1024))`,
		`throw "s".repeat(8*1024*1024)`,
		`await tools.call("x".repeat(1 << 20), {})`,
		`await util.echo({text: 1, ["k".repeat(1 << 20)]: 2})`,
	} {
		rec := alice.run(code, "timeout_ms", 60000)
		if rec.Status != "error" || len(rec.raw) > 16<<10 {
			t.Errorf("%.40s…: status %s, %d bytes to the model", code, rec.Status, len(rec.raw))
		}
	}
	alice.normal()
}
