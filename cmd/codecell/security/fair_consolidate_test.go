package security

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// fillShared gives ss's principal n semantic memories that all share
// three words, so that consolidation compares every pair of them.
func fillShared(t *testing.T, ss *session, n int) {
	t.Helper()
	for done := 0; done < n; {
		k := min(800, n-done)
		rec := ss.run(fmt.Sprintf(`const ps = [];
for (let i = 0; i < %d; i++) ps.push(memory.remember({content: "harbour crane ledger w" + (%d + i) + "x w" + (%d + i) * 7 + "y"}));
const r = await Promise.allSettled(ps); return r.filter(x => x.status === "fulfilled").length`, k, done, done), "timeout_ms", 60000)
		got, _ := strconv.Atoi(string(rec.Result))
		if rec.Status != "ok" || got == 0 {
			t.Fatalf("fill: %.400s", rec.raw)
		}
		done += got
		if got < k {
			time.Sleep(2 * time.Second) // the tool-call rate limit
		}
	}
}

// TestConsolidateLeavesTheReaders (issue 19, attack9 D2): one principal's
// memory.consolidate compared every pair of up to 5,000 memories inside
// its read transaction, holding one of the store's few read connections
// for the whole time; bob's run of 8 at once, again and again, held
// them all, and alice's memory.recall ran past her deadline. Now a
// consolidate reads, gives the connection back, then compares; bob runs
// one at a time (the others are refused as busy), and alice's recalls
// are served meanwhile.
func TestConsolidateLeavesTheReaders(t *testing.T) {
	s := start(t)
	bob, alice := s.open(t, bobToken), s.open(t, aliceToken)
	const n = 1500
	fillShared(t, bob, n)
	alice.run(`await memory.remember({content: "the quarterly report is due on friday"}); return 1`)

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	bobs := bob.background(ctx, fmt.Sprintf(`let ok = 0, busy = 0; const other = [];
for (let round = 0; round < 4; round++) {
  const rs = await Promise.allSettled(Array.from({length: 8}, () =>
    memory.consolidate({dry_run: true, limit: %d, threshold: 1, min_overlap: 0.01, layers: ["semantic"]})));
  for (const r of rs) {
    if (r.status === "fulfilled") ok++;
    else if (r.reason.code === "busy") busy++;
    else other.push(String(r.reason));
  }
}
return {ok, busy, other}`, n), "timeout_ms", 60000)

	served := 0
	var rb record
wait:
	for {
		select {
		case rb = <-bobs:
			break wait
		case <-time.After(250 * time.Millisecond): // within alice's execution rate
		}
		rec := alice.run(`const r = await memory.recall({query: "when is the report due", limit: 1}); return r.results.length`)
		if rec.Status != "ok" || string(rec.Result) != "1" {
			t.Fatalf("alice's memory.recall while bob's run consolidates %d memories 8 at a time (served %d before): %.300s", n, served, rec.raw)
		}
		served++
	}
	var got struct {
		OK    int      `json:"ok"`
		Busy  int      `json:"busy"`
		Other []string `json:"other"`
	}
	if rb.Status != "ok" || json.Unmarshal(rb.Result, &got) != nil {
		t.Fatalf("bob's run: %.400s", rb.raw)
	}
	t.Logf("bob's consolidates: %d done, %d refused as busy; alice's recalls served meanwhile: %d", got.OK, got.Busy, served)
	if got.Busy == 0 || len(got.Other) > 0 || got.OK+got.Busy != 32 {
		t.Errorf("bob's 4 rounds of 8 consolidates at once: %d done, %d busy, others %q; want one at a time, the rest busy", got.OK, got.Busy, got.Other)
	}
	if served < 3 {
		t.Errorf("alice's recall was served %d times while bob's consolidates ran", served)
	}
	alice.normal()
}
