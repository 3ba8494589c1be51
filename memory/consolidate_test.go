package memory

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// allPairs is consolidation's grouping as it was before candidates were
// chosen by shared words: every survivor compared with every item.
func allPairs(items []ConsolidateItem, in ConsolidateInput) []DuplicateGroup {
	order := make([]*consolidateItem, len(items))
	for i, it := range items {
		order[i] = &consolidateItem{mem: it.Memory, vec: it.Vector, words: wordSet(it.Memory.Content)}
	}
	slices.SortStableFunc(order, func(a, b *consolidateItem) int {
		switch {
		case a.mem.Importance != b.mem.Importance:
			if a.mem.Importance > b.mem.Importance {
				return -1
			}
			return 1
		case a.mem.AccessCount != b.mem.AccessCount:
			if a.mem.AccessCount > b.mem.AccessCount {
				return -1
			}
			return 1
		}
		return cmpID(a.mem.ID, b.mem.ID)
	})
	var groups []DuplicateGroup
	taken := map[int64]bool{}
	for _, sv := range order {
		if taken[sv.mem.ID] {
			continue
		}
		g := DuplicateGroup{Survivor: sv.mem}
		for _, c := range order {
			if c == sv || taken[c.mem.ID] {
				continue
			}
			sim := float64(Dot(sv.vec, c.vec))
			if sim < in.Threshold {
				continue
			}
			ov := jaccard(sv.words, c.words)
			if ov < in.MinOverlap {
				continue
			}
			g.Members = append(g.Members, c.mem)
			g.Similarities = append(g.Similarities, sim)
			g.Overlaps = append(g.Overlaps, ov)
		}
		if len(g.Members) == 0 {
			continue
		}
		taken[sv.mem.ID] = true
		for _, m := range g.Members {
			taken[m.ID] = true
		}
		groups = append(groups, g)
	}
	return groups
}

// TestFindDuplicatesSameAsAllPairs: choosing the candidates by shared
// words finds the same groups, members and figures, in the same order,
// as comparing every pair (random memories over a small vocabulary, so
// that words are shared, with and without words, at several thresholds).
func TestFindDuplicatesSameAsAllPairs(t *testing.T) {
	emb := NewWordsEmbedder()
	vocab := strings.Fields("deploy script lives ops staging cluster spot instance report due friday lunch noon the a of")
	stop := strings.Fields("the a of and to")
	rng := rand.New(rand.NewPCG(1, 2))
	totalGroups := 0
	for trial := range 40 {
		n := 20 + rng.IntN(120)
		items := make([]ConsolidateItem, n)
		texts := make([]string, n)
		for i := range items {
			k := rng.IntN(6) // 0: no words, or stop words only
			var ws []string
			stopOnly := rng.IntN(5) == 0 // words, but none that count
			for range k {
				if stopOnly {
					ws = append(ws, stop[rng.IntN(len(stop))])
				} else {
					ws = append(ws, vocab[rng.IntN(len(vocab))])
				}
			}
			texts[i] = strings.Join(ws, " ")
			items[i].Memory = Memory{ID: int64(i + 1), Content: texts[i], Importance: float64(rng.IntN(3)) / 2, AccessCount: int64(rng.IntN(2))}
		}
		vs, err := emb.Embed(t.Context(), texts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range items {
			items[i].Vector = vs[i]
		}
		for _, in := range []ConsolidateInput{{Threshold: 0.5, MinOverlap: 0.01}, {Threshold: 0.7, MinOverlap: 0.3}, {Threshold: 0.9, MinOverlap: 0.5}, {Threshold: 0.6, MinOverlap: 1}} {
			want := allPairs(items, in)
			totalGroups += len(want)
			got, err := FindDuplicates(t.Context(), [][]ConsolidateItem{items}, in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("trial %d, %+v: groups differ from comparing every pair:\ngot  %s\nwant %s", trial, in, groupIDs(got), groupIDs(want))
			}
		}
	}
	// Memories without words that count overlap fully: an embedder that
	// gives them close vectors groups them.
	bare := []ConsolidateItem{{Memory: Memory{ID: 1, Content: "the"}, Vector: []float32{1, 0}}, {Memory: Memory{ID: 2, Content: "a"}, Vector: []float32{0, 1}},
		{Memory: Memory{ID: 3, Content: "of the"}, Vector: []float32{1, 0}}, {Memory: Memory{ID: 4, Content: "deploy"}, Vector: []float32{1, 0}}}
	in := ConsolidateInput{Threshold: 0.9, MinOverlap: 0.5}
	got, err := FindDuplicates(t.Context(), [][]ConsolidateItem{bare}, in)
	if want := allPairs(bare, in); err != nil || !reflect.DeepEqual(got, want) || groupIDs(got) != "1<3 > " {
		t.Fatalf("memories without words: got %s, want %s (%v)", groupIDs(got), groupIDs(want), err)
	}
	if totalGroups < 100 {
		t.Fatalf("only %d groups in all trials: the test compares too little", totalGroups)
	}
	t.Logf("%d groups, the same both ways", totalGroups)
}

func groupIDs(gs []DuplicateGroup) string {
	var b strings.Builder
	for _, g := range gs {
		fmt.Fprintf(&b, "%d<", g.Survivor.ID)
		for _, m := range g.Members {
			fmt.Fprintf(&b, "%d ", m.ID)
		}
		b.WriteString("> ")
	}
	return b.String()
}

// TestFindDuplicatesEndsWithContext: the comparison stops when its
// context ends, as a run's deadline ends it.
func TestFindDuplicatesEndsWithContext(t *testing.T) {
	items := make([]ConsolidateItem, 50)
	for i := range items {
		items[i] = ConsolidateItem{Memory: Memory{ID: int64(i + 1), Content: "shared words here"}, Vector: []float32{1}}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := FindDuplicates(ctx, [][]ConsolidateItem{items}, ConsolidateInput{Threshold: 0.9, MinOverlap: 0.5}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

// TestConsolidateGate: one consolidate at a time per principal; another
// principal is not held; leaving admits the next.
func TestConsolidateGate(t *testing.T) {
	var g ConsolidateGate
	leave, err := g.Enter("alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Enter("alice"); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "one at a time") {
		t.Fatalf("second consolidate of alice: %v, want busy", err)
	}
	leaveBob, err := g.Enter("bob")
	if err != nil {
		t.Fatalf("bob held by alice's consolidate: %v", err)
	}
	leaveBob()
	leave()
	if leave, err = g.Enter("alice"); err != nil {
		t.Fatalf("after leaving: %v", err)
	}
	leave()
}

// BenchmarkFindDuplicates: one layer of 5,000 memories, as one
// memory.consolidate at its largest limit compares them — memories of
// words of their own (the attack's random words: no candidate), and
// memories that all share three words (every pair a candidate) — beside
// comparing every pair as before. ms/op is the CPU one consolidate takes
// outside the store.
func BenchmarkFindDuplicates(b *testing.B) {
	emb := NewWordsEmbedder()
	make5000 := func(shared bool) []ConsolidateItem {
		rng := rand.New(rand.NewPCG(3, 4))
		word := func() string {
			w := make([]byte, 7)
			for i := range w {
				w[i] = byte('a' + rng.IntN(26))
			}
			return string(w)
		}
		items := make([]ConsolidateItem, 5000)
		texts := make([]string, len(items))
		for i := range items {
			ws := []string{word(), word(), word(), word(), word(), word()}
			if shared {
				ws = append(ws[:3], "harbour", "crane", "ledger")
			}
			texts[i] = strings.Join(ws, " ")
			items[i].Memory = Memory{ID: int64(i + 1), Content: texts[i]}
		}
		vs, err := emb.Embed(b.Context(), texts)
		if err != nil {
			b.Fatal(err)
		}
		for i := range items {
			items[i].Vector = vs[i]
		}
		return items
	}
	in := ConsolidateInput{Threshold: 0.9, MinOverlap: 0.5}
	for _, bc := range []struct {
		name   string
		shared bool
		all    bool
	}{{"own_words", false, false}, {"own_words_all_pairs", false, true}, {"shared_words", true, false}, {"shared_words_all_pairs", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			items := make5000(bc.shared)
			start := time.Now()
			for b.Loop() {
				if bc.all {
					allPairs(items, in)
				} else if _, err := FindDuplicates(b.Context(), [][]ConsolidateItem{items}, in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/op")
		})
	}
}
