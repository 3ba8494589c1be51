package security

import (
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// treeBytes is the size of the files under dir.
func treeBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// TestAuditKeepsEveryProgramWhole (issue 19, fourth round, A9): the
// audit log kept every run's code whole (up to sandbox.max_code_bytes,
// 100 KiB) for memory.audit_max_age (30 days), with no bound at write
// time: one principal's cheap runs of 100 KB programs wrote about 70 MB a
// minute. A principal's programs are kept whole up to 8 MiB a day; past
// it the audit keeps a program's first KiB, its size and the whole one's
// hash. Here bob sends 49 MiB of programs; the data directory must grow
// by less than half of that.
func TestAuditKeepsEveryProgramWhole(t *testing.T) {
	data := t.TempDir()
	s := start(t, "CODECELL_SERVER_DATA_DIR="+data)
	h := s.connect(t, bobToken, &user{})
	r := rand.New(rand.NewSource(1))
	const runs, size = 500, 100<<10 - 64
	before := treeBytes(data)
	started := time.Now()
	sent := 0
	for i := 0; i < runs; i++ {
		b := make([]byte, size)
		for j := range b {
			b[j] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[r.Intn(62)]
		}
		code := "/* " + string(b) + " */ 1"
		sent += len(code)
		for {
			rec := h.run(code)
			if rec.Status == "ok" {
				break
			}
			if !strings.Contains(rec.raw, "rate_limited") {
				t.Fatalf("run %d: %.300s", i, rec.raw)
			}
			time.Sleep(200 * time.Millisecond) // 600 a minute, bursts of 60
		}
	}
	// The audit is written in batches, off the requests' path: wait for
	// the last run's record rather than for a time.
	deadline := time.Now().Add(time.Minute)
	grew := treeBytes(data) - before
	for time.Now().Before(deadline) {
		time.Sleep(time.Second)
		now := treeBytes(data) - before
		if now == grew {
			break
		}
		grew = now
	}
	t.Logf("%d runs of %d KB in %v grew the data directory by %d MiB (sent %d MiB)", runs, size>>10, time.Since(started).Round(time.Second), grew>>20, sent>>20)
	if grew > int64(sent)/2 {
		t.Errorf("the audit log keeps every run's code whole with no bound at write time: %d MiB for %d runs of one principal", grew>>20, runs)
	}
}
