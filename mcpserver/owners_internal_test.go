package mcpserver

import (
	"fmt"
	"testing"
)

// TestEndedSessionsForgottenOldestFirst: past maxEnded ended sessions,
// each one more forgets the oldest, and only it (attack16: the oldest
// was found by a scan of all 10,000 under the owners' lock).
func TestEndedSessionsForgottenOldestFirst(t *testing.T) {
	o := newSessionOwners("local", 0)
	end := func(id string) {
		o.open(id, fmt.Sprintf("p%d", len(id)%7))
		o.end(id)
	}
	for i := range maxEnded + 10 {
		end(fmt.Sprintf("s%d", i))
	}
	for i := range maxEnded + 10 {
		_, ended := o.check(fmt.Sprintf("s%d", i), "p")
		if want := i >= 10; ended != want {
			t.Fatalf("session s%d of %d ended: answered as ended %v, want %v", i, maxEnded+10, ended, want)
		}
	}
	if len(o.ended) != maxEnded || len(o.endedRing) != maxEnded {
		t.Fatalf("remembered %d ended IDs (ring %d), want %d", len(o.ended), len(o.endedRing), maxEnded)
	}
	// A session ended twice is remembered once.
	o.rememberEnded("s20")
	if _, ended := o.check("s10", "p"); !ended {
		t.Fatal("an ID ended again forgot another")
	}
}

// BenchmarkSessionEnd is a session's end once maxEnded ended IDs are
// remembered: what every DELETE or eviction pays under the owners' lock.
func BenchmarkSessionEnd(b *testing.B) {
	o := newSessionOwners("local", 1<<30)
	for i := range maxEnded {
		o.open(fmt.Sprintf("old%d", i), "alice")
		o.end(fmt.Sprintf("old%d", i))
	}
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprintf("s%d", i)
		o.open(ids[i], "alice")
	}
	b.ResetTimer()
	for i := range b.N {
		o.end(ids[i])
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/end")
}
