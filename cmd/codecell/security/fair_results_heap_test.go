package security

import (
	"strings"
	"testing"
)

// TestReadsAtOnceRunOutOfMemory: a program that awaits 64 reads of one
// 4 MiB workspace file at once runs out of its 64 MiB heap as the
// results arrive. Running out inside Promise.allSettled's own handler,
// which the engine drops, left its promise pending and the run ended
// unsettled_promise, "no tool call is in flight" (issue 19, attack9 D7);
// it ends memory_limit, saying to await fewer large results at once — in
// either isolation mode.
func TestReadsAtOnceRunOutOfMemory(t *testing.T) {
	t.Parallel()
	for _, isolation := range []string{"process", "inprocess"} {
		t.Run(isolation, func(t *testing.T) {
			t.Parallel()
			s := start(t, "CODECELL_SANDBOX_ISOLATION="+isolation)
			bob := s.open(t, bobToken)
			if rec := bob.run(`const a = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "; let b = ""; for (let i = 0; i < 65536; i++) b += a[(Math.random() * 63) | 0]; await workspace.write({path: "big.txt", data: b.repeat(64)}); return 1`, "timeout_ms", 60000); rec.Status != "ok" {
				t.Fatalf("workspace.write of 4 MiB: %.600s", rec.raw)
			}
			rec := bob.run(`const rs = await Promise.allSettled(Array.from({length: 64}, () => workspace.read({path: "big.txt"}))); return rs.filter(r => r.status === "fulfilled").length`, "timeout_ms", 60000)
			if rec.Error == nil || rec.Error.Kind != "memory_limit" || !strings.Contains(rec.Error.Message, "Await fewer large results at once") {
				t.Errorf("64 reads of 4 MiB at once: %.600s", rec.raw)
			}
			bob.normal()
		})
	}
}
