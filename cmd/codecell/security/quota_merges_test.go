package security

import (
	"encoding/json"
	"testing"
)

// TestMergedMemoriesInTheQuota (issue 19, attack10's E4): consolidation
// kept each merged memory whole (16 KB of content, 16 KB of metadata) in
// memory_merges, outside memory.max_memory_bytes, forever: bob could
// remember 40 memories and consolidate them, again and again, and fill
// the disk while holding one memory. Now a merged memory's record keeps
// the first 1,024 bytes of its content (with the whole content's size and
// hash) and counts toward his memory bytes: under a quota of eight such
// memories, each round of remember-and-consolidate leaves him less room,
// where before every round stored as many as the first after it.
func TestMergedMemoriesInTheQuota(t *testing.T) {
	t.Parallel()
	s := start(t, "CODECELL_MEMORY_MAX_MEMORY_BYTES=262144")
	bob := s.open(t, bobToken)
	const rounds = 10
	stored := make([]int, rounds)
	var last struct {
		Stored   int    `json:"stored"`
		First    string `json:"first"`
		Survivor int64  `json:"survivor"`
		Memories int    `json:"memories"`
		Merged   int    `json:"merged"`
		Longest  int    `json:"longest"`
		Sizes    []int  `json:"sizes"`
		Meta     int    `json:"meta"`
	}
	for i := range rounds {
		rec := bob.run(`const content = "quarterly numbers " + "x".repeat(16000);
const meta = {pad: "y".repeat(16000)};
const r = await Promise.allSettled(Array.from({length: 40}, () => memory.remember({content, metadata: meta})));
const failed = r.filter(x => x.status === "rejected").map(x => x.reason.code);
const c = await memory.consolidate({layers: ["semantic"], limit: 5000});
const st = await memory.stats({});
const survivor = c.groups.length ? c.groups[0].survivor.id : 0;
let longest = 0, sizes = [], meta2 = 0;
if (survivor) {
  const m = await memory.get({id: survivor});
  for (const g of m.merged_from) {
    longest = Math.max(longest, g.content.length);
    sizes.push(g.content_bytes || 0);
    if (g.record && Object.keys(g.record.metadata || {}).length) meta2++;
  }
}
return {stored: 40 - failed.length, first: failed[0], survivor, memories: st.memories, merged: st.merged, longest, sizes: [...new Set(sizes)], meta: meta2};`, "timeout_ms", 60000)
		if rec.Status != "ok" {
			t.Fatalf("round %d: %.600s", i, rec.raw)
		}
		if err := json.Unmarshal(rec.Result, &last); err != nil {
			t.Fatalf("round %d: %v: %s", i, err, rec.Result)
		}
		if last.Stored < 40 && last.First != "quota_exceeded" {
			t.Fatalf("round %d: a remember failed with %q, want quota_exceeded: %s", i, last.First, rec.Result)
		}
		stored[i] = last.Stored
		if last.Longest > 1024 || last.Meta != 0 || len(last.Sizes) != 1 || last.Sizes[0] != 16018 {
			t.Fatalf("round %d: the survivor's merged_from keeps up to %d characters of content (content_bytes %v) and %d records with metadata; want at most 1,024, the whole size 16018, none: %s",
				i, last.Longest, last.Sizes, last.Meta, rec.Result)
		}
	}
	t.Logf("memories stored per round under 256 KiB: %v; bob holds %d memory and %d merged records", stored, last.Memories, last.Merged)
	if stored[rounds-1] >= stored[1] {
		t.Errorf("memories stored per round: %v; the records of merged memories take none of bob's 256 KiB quota of memory bytes", stored)
	}
}
