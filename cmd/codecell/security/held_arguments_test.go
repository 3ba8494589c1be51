package security

import (
	"fmt"
	"strings"
	"testing"
)

// TestLargeArgumentsHeld (issue 19, attack25 F7): a call's arguments were
// held as their bytes in the sandbox, but the server's path copied them
// many times over, held by nothing: alice's four runs at once, each
// posting a 30 MB string to http.post_webhook, grew the server by
// 0.9–1 GiB against 12–34 MiB for 1 KB. A call of large arguments now
// holds four copies of them of its run's and its principal's results in
// flight while it is in the gate: a 30 MB string could only wait for
// itself there, and is refused at once saying to send less. (The
// growth of four runs at once is measured by attack25's
// TestCheckOfLargeArguments, on a pool of four: docs/benchmarks.md.)
func TestLargeArgumentsHeld(t *testing.T) {
	t.Parallel()
	s := ruled(t)
	alice := s.open(t, aliceToken)
	post := func(size int) string {
		return fmt.Sprintf(`const c = await crm.get_contact({id: "c_8812"}); const s = "QUJD".repeat(%d); await http.post_webhook({url: "https://hooks.example/x", payload: {v: s}}); return "SENT"`, size/4)
	}
	rec := alice.run(post(30_000_000), "timeout_ms", 30000)
	if rec.Error == nil || rec.Error.Code != "result_bytes_limit" || !strings.Contains(rec.raw, "send less in one call") {
		t.Errorf("a 30 MB argument: %.400s", rec.raw)
	}
	if rec := alice.run(post(1_000_000), "timeout_ms", 30000); string(rec.Result) != `"SENT"` {
		t.Errorf("control: a 1 MB argument was not sent: %.400s", rec.raw)
	}
}
