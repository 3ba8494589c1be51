package security

import (
	"strings"
	"testing"
)

// TestDryRunPlanHeldInMemory (issue 19, fourth round, A10): a dry run
// (mode "plan") recorded each write's arguments, at most 1,000 writes
// but with no bound on their bytes, in the server's memory for the whole
// run, then showed, sealed and stored them (more copies). A program that
// sent one 4 MiB string as the arguments of 40 writes held it once; the
// server grew by 1.7 GiB. A plan's arguments are bounded in bytes, and a
// write past the bound fails with plan_too_large.
func TestDryRunPlanHeldInMemory(t *testing.T) {
	s := ruledWith(t, "")
	h := s.connect(t, aliceToken, &user{})
	pid := s.cmd.Process.Pid
	before := rss(pid)
	if before < 0 {
		t.Skip("no /proc/<pid>/status here")
	}
	rec := h.run(`const big = "x".repeat(4 << 20); for (let i = 0; i < 40; i++) await http.post_webhook({url: "https://hooks.example/x", payload: {v: big}}); return 1`,
		"mode", "plan", "timeout_ms", 60000)
	after := peakRSS(pid)
	t.Logf("the server's peak RSS grew by %d MiB (from %d MiB) for a dry run of 40 writes of 4 MiB: %.300s", (after-before)>>20, before>>20, rec.raw)
	if after-before > 128<<20 {
		t.Errorf("one dry run grew the server's memory by %d MiB: a plan's recorded writes are not bounded in bytes", (after-before)>>20)
	}
	if rec.Status == "ok" || !strings.Contains(rec.raw, "plan_too_large") {
		t.Errorf("the dry run does not say its plan is too large: %.400s", rec.raw)
	}
	// A small plan is still recorded.
	if rec := h.run(`await http.post_webhook({url: "https://hooks.example/x", payload: {v: 1}}); return 1`, "mode", "plan"); rec.Status != "ok" || !strings.Contains(rec.raw, "post_webhook") {
		t.Errorf("a small dry run: %.400s", rec.raw)
	}
}
