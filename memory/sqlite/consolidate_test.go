package sqlite

import (
	"github.com/codecell/codecell/memory"

	"slices"
	"strings"
	"testing"
)

func TestConsolidate(t *testing.T) {
	s := openTest(t, Config{})
	ctx := t.Context()
	a := mustRemember(t, s, ctx, memory.RememberInput{Content: "The staging database runs PostgreSQL 16 on port 5433", Tags: []string{"db"}, Importance: ptr(0.4)})
	b := mustRemember(t, s, ctx, memory.RememberInput{Content: "The staging database runs PostgreSQL 16 on port 5433.", Tags: []string{"staging"}, Importance: ptr(0.9), Entities: []string{"staging-db"}})
	c := mustRemember(t, s, ctx, memory.RememberInput{Content: "the staging database runs postgresql 16, on port 5433", Importance: ptr(0.4)})
	other := mustRemember(t, s, ctx, memory.RememberInput{Content: "The production database runs MySQL 8 on port 3306"})
	episode := mustRemember(t, s, ctx, memory.RememberInput{Layer: memory.Episodic, Content: "The staging database runs PostgreSQL 16 on port 5433"})
	s.Get(ctx, a.ID)
	s.Get(ctx, c.ID)

	dry, err := s.Consolidate(ctx, memory.ConsolidateInput{Threshold: 0.8, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if dry.Merged != 2 || len(dry.Groups) != 1 || dry.Groups[0].Survivor.ID != b.ID || dry.Examined != 5 {
		t.Fatalf("dry run: %+v", dry)
	}
	if st, _ := s.MemoryStats(ctx); st.Memories != 5 {
		t.Fatalf("dry run changed the store: %d memories", st.Memories)
	}
	res, err := s.Consolidate(ctx, memory.ConsolidateInput{Threshold: 0.8})
	if err != nil || res.Merged != 2 {
		t.Fatalf("consolidate: %+v %v", res, err)
	}
	got, err := s.Get(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Tags, []string{"db", "staging"}) || got.AccessCount != 3 || got.Importance != 0.9 || len(got.MergedFrom) != 2 {
		t.Fatalf("survivor: %+v", got)
	}
	if got.MergedFrom[0].ID != a.ID || got.MergedFrom[0].Similarity < 0.8 || got.MergedFrom[0].Record == nil || got.MergedFrom[0].Content != a.Content {
		t.Fatalf("provenance: %+v", got.MergedFrom[0])
	}
	_, err = s.Get(ctx, a.ID)
	if te := wantCode(t, err, "not_found"); !strings.Contains(te.Message, "merged into memory") {
		t.Fatalf("get of a merged memory: %s", te.Message)
	}
	// Different facts and other layers are kept.
	for _, id := range []int64{other.ID, episode.ID} {
		if _, err := s.Get(ctx, id); err != nil {
			t.Fatalf("memory %d was merged: %v", id, err)
		}
	}
	// Merged memories are gone from recall; the survivor is found by the
	// merged one's tag.
	r, _ := s.Recall(ctx, memory.RecallInput{Query: "staging database port", Layer: memory.Semantic})
	if ids := hitIDs(r); slices.Contains(ids, a.ID) || slices.Contains(ids, c.ID) || !slices.Contains(ids, b.ID) {
		t.Fatalf("recall after consolidation: %v", ids)
	}
	// A second pass finds nothing.
	res, _ = s.Consolidate(ctx, memory.ConsolidateInput{Threshold: 0.8})
	if res.Merged != 0 {
		t.Fatalf("second pass merged %d", res.Merged)
	}
	// Strict word overlap keeps near-duplicates apart.
	mustRemember(t, s, ctx, memory.RememberInput{Content: "deploys happen every Tuesday afternoon"})
	mustRemember(t, s, ctx, memory.RememberInput{Content: "deploys happen every Tuesday"})
	res, _ = s.Consolidate(ctx, memory.ConsolidateInput{Threshold: 0.5, MinOverlap: 1, DryRun: true})
	if res.Merged != 0 {
		t.Fatalf("min_overlap 1 merged %+v", res.Groups)
	}
	res, _ = s.Consolidate(ctx, memory.ConsolidateInput{Threshold: 0.5, MinOverlap: 0.5, DryRun: true})
	if res.Merged != 1 {
		t.Fatalf("min_overlap 0.5 merged %d, want 1: %+v", res.Merged, res.Groups)
	}
}
