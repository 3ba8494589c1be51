package security

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dirBytes is the size of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// TestDryRunPlansKeptOnDisk (issue 19, attack7's B2): a dry run's plan
// was bounded at 4 MiB, but nothing bounded how many plans a principal
// kept for sandbox.plan_ttl: 12 dry runs of one 3.9 MB write in 3 s grew
// the data directory by 79 MiB, and at the rate limit one principal
// filled the disk for everyone. A principal's live plans are bounded
// together (limits.max_principal_plan_bytes): past it a dry run's plan is
// not saved, and the run says why; another principal still saves its own.
func TestDryRunPlansKeptOnDisk(t *testing.T) {
	data := t.TempDir()
	s := ruledWith(t, "", "CODECELL_SERVER_DATA_DIR="+data)
	alice := s.open(t, aliceToken)
	before := dirBytes(data)
	const runs = 12
	saved := 0
	for i := range runs {
		rec := alice.run(`const a = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"; const parts = []; for (let i = 0; i < 65536 / 8; i++) { let w = ""; for (let j = 0; j < 8; j++) w += a[(Math.random() * 62) | 0]; parts.push(w) } const s = parts.join("").repeat(59); await http.post_webhook({url: "https://hooks.example/x", payload: {v: s}}); return s.length`, "mode", "plan", "timeout_ms", 60000)
		if rec.Status != "ok" {
			t.Fatalf("dry run %d: %.500s", i, rec.raw)
		}
		if strings.Contains(rec.raw, `"plan_id"`) {
			saved++
		} else if at := strings.Index(rec.raw, "the plan was not saved"); at >= 0 && strings.Contains(rec.raw[at:], "limits.max_principal_plan_bytes") {
			if i == runs-1 {
				t.Logf("the last dry run says: %.500s", rec.raw[at:])
			}
		} else {
			t.Errorf("dry run %d saved no plan and does not say the quota: %.300s … %.600s", i, rec.raw, rec.raw[max(0, len(rec.raw)-600):])
		}
	}
	grew := dirBytes(data) - before
	t.Logf("%d dry runs of one 3.9 MB write each saved %d plans and grew the data directory by %d MiB", runs, saved, grew>>20)
	if saved > 1 {
		t.Errorf("one principal keeps %d plans of 3.9 MB: its live plans are not bounded together (default 8 MiB)", saved)
	}
	if grew > 16<<20 {
		t.Errorf("one principal's dry runs keep %d MiB in the store (%d runs)", grew>>20, runs)
	}
	bob := s.open(t, bobToken)
	if rec := bob.run(`await http.post_webhook({url: "https://hooks.example/x", payload: {v: 1}}); return 1`, "mode", "plan"); !strings.Contains(rec.raw, `"plan_id"`) {
		t.Errorf("another principal's small plan was not saved: %.400s", rec.raw)
	}
}
