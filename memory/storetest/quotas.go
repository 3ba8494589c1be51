package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// Quotas checks the per-principal quotas of memories and of the
// knowledge graph (issue 19, third round L11: nothing bounded them, so
// one principal could add ~96 MiB of memories a minute): past its count
// or bytes, a write fails with CodeQuotaExceeded naming the setting to
// raise, whole (a batch stores nothing), for that principal only; what
// makes a measure smaller passes, and forgetting makes room. open opens
// a fresh store with the limits given.
func Quotas(t *testing.T, open func(t *testing.T, lim memory.Limits) Backend) {
	st := open(t, memory.Limits{MaxMemories: 3, MaxMemoryBytes: 1000, MaxGraphEntities: 3, MaxGraphRelations: 2, MaxGraphBytes: 2000})
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	quota := func(t *testing.T, err error, key string) {
		t.Helper()
		if !errors.Is(err, memory.ErrQuota) {
			t.Fatalf("error = %v, want quota_exceeded", err)
		}
		if !strings.Contains(err.Error(), key) {
			t.Errorf("the error does not name %s: %v", key, err)
		}
	}
	ok := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	remember := func(ctx context.Context, content string) (memory.Memory, error) {
		return st.Remember(ctx, memory.RememberInput{Content: content})
	}

	t.Run("memories", func(t *testing.T) {
		var ids []int64
		for i := range 3 {
			m, err := remember(alice, fmt.Sprint("note ", i))
			ok(t, err)
			ids = append(ids, m.ID)
		}
		_, err := remember(alice, "one too many")
		quota(t, err, "memory.max_memories")
		batcher, _ := st.(interface {
			RememberBatch(ctx context.Context, ins []memory.RememberInput) ([]memory.Memory, error)
		})
		if batcher == nil {
			t.Fatal("the store has no RememberBatch")
		}
		_, err = batcher.RememberBatch(bob, []memory.RememberInput{{Content: "b1"}, {Content: "b2"}, {Content: "b3"}, {Content: "b4"}})
		quota(t, err, "memory.max_memories")
		if s, err := st.MemoryStats(bob); err != nil || s.Memories != 0 {
			t.Fatalf("a refused batch stored %d memories (%v), want none", s.Memories, err)
		}
		_, err = remember(bob, "bob has his own quota")
		ok(t, err)
		_, err = st.Forget(alice, memory.ForgetInput{IDs: ids[:1]})
		ok(t, err)
		_, err = remember(alice, "room again")
		ok(t, err)
		_, err = st.Forget(alice, memory.ForgetInput{All: true})
		ok(t, err)
	})

	t.Run("memory bytes", func(t *testing.T) {
		carol := as(t.Context(), "carol")
		m, err := remember(carol, strings.Repeat("a", 600))
		ok(t, err)
		_, err = remember(carol, strings.Repeat("b", 600))
		quota(t, err, "memory.max_memory_bytes")
		longer := strings.Repeat("c", 1200)
		_, err = st.Update(carol, memory.UpdateInput{ID: m.ID, Content: &longer})
		quota(t, err, "memory.max_memory_bytes")
		shorter := strings.Repeat("d", 100)
		_, err = st.Update(carol, memory.UpdateInput{ID: m.ID, Content: &shorter})
		ok(t, err)
		_, err = remember(carol, strings.Repeat("e", 600))
		ok(t, err)
	})

	t.Run("graph", func(t *testing.T) {
		dave := as(t.Context(), "dave")
		for _, name := range []string{"e1", "e2", "e3"} {
			_, _, err := st.UpsertEntity(dave, memory.EntityInput{Name: name, Type: "thing"})
			ok(t, err)
		}
		_, _, err := st.UpsertEntity(dave, memory.EntityInput{Name: "e4"})
		quota(t, err, "memory.max_graph_entities")
		_, _, err = st.UpsertEntity(dave, memory.EntityInput{Name: "e1", Description: "an update of an entity it has"})
		ok(t, err)
		_, err = st.Relate(dave, memory.RelateInput{From: "e1", To: "e4", Type: "knows"})
		quota(t, err, "memory.max_graph_entities")
		_, err = st.Remember(dave, memory.RememberInput{Content: "names a new entity", Entities: []string{"e5"}})
		quota(t, err, "memory.max_graph_entities")
		ok(t, func() error {
			_, err := st.Relate(dave, memory.RelateInput{From: "e1", To: "e2", Type: "knows"})
			return err
		}())
		ok(t, func() error {
			_, err := st.Relate(dave, memory.RelateInput{From: "e2", To: "e3", Type: "knows"})
			return err
		}())
		_, err = st.Relate(dave, memory.RelateInput{From: "e1", To: "e3", Type: "knows"})
		quota(t, err, "memory.max_graph_relations")
		_, err = st.Relate(dave, memory.RelateInput{From: "e1", To: "e2", Type: "knows", Properties: []byte(`{"since":2020}`)})
		ok(t, err)
		// Bytes: descriptions and properties together.
		_, _, err = st.UpsertEntity(dave, memory.EntityInput{Name: "e2", Description: strings.Repeat("x", 1500)})
		ok(t, err)
		_, _, err = st.UpsertEntity(dave, memory.EntityInput{Name: "e3", Description: strings.Repeat("y", 600)})
		quota(t, err, "memory.max_graph_bytes")
		// Another principal's graph is its own.
		_, _, err = st.UpsertEntity(bob, memory.EntityInput{Name: "e4"})
		ok(t, err)
	})
}

// PlanQuota checks the bound on a principal's live plans (issue 19,
// attack7's B2: nothing bounded them, so one principal's dry runs could
// fill the disk for an hour): a plan that would take the caller's
// planned, unexpired plans past Limits.MaxPrincipalPlanBytes fails with
// CodeQuotaExceeded naming the setting, for that principal only;
// claiming a plan for a commit, or its expiry, frees its share. open
// opens a fresh store with the limits given.
func PlanQuota(t *testing.T, open func(t *testing.T, lim memory.Limits) Backend) {
	one := memory.PlanBytes(planSteps())
	st := open(t, memory.Limits{MaxPrincipalPlanBytes: 2 * one})
	alice, bob, carol := as(t.Context(), "alice"), as(t.Context(), "bob"), as(t.Context(), "carol")
	save := func(ctx context.Context, ttl time.Duration) (string, memory.Plan, error) {
		return st.SavePlan(ctx, memory.SavePlanInput{Steps: planSteps(), TTL: ttl})
	}
	must := func(ctx context.Context, ttl time.Duration) (string, memory.Plan) {
		t.Helper()
		id, p, err := save(ctx, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return id, p
	}
	refused := func(t *testing.T, err error) {
		t.Helper()
		var te *tools.Error
		if !errors.As(err, &te) || te.Code != memory.CodeQuotaExceeded || !errors.Is(err, memory.ErrQuota) {
			t.Fatalf("error = %v, want quota_exceeded", err)
		}
		for _, want := range []string{"limits.max_principal_plan_bytes", fmt.Sprint(2 * one), "commit", "expire"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not say %q: %v", want, err)
			}
		}
	}

	first, _ := must(alice, time.Hour)
	must(alice, time.Hour)
	_, _, err := save(alice, time.Hour)
	refused(t, err)
	// Another principal's plans are its own.
	must(bob, time.Hour)
	must(bob, time.Hour)
	// A plan claimed for its commit no longer counts.
	if _, err := st.ClaimPlan(alice, first, "commit-1"); err != nil {
		t.Fatal(err)
	}
	must(alice, time.Hour)
	_, _, err = save(alice, time.Hour)
	refused(t, err)
	// Nor does an expired one.
	must(carol, time.Hour)
	_, short := must(carol, time.Millisecond)
	waitPast(short.ExpiresAt)
	must(carol, time.Hour)
	_, _, err = save(carol, time.Hour)
	refused(t, err)
}

// MergeQuota checks that what consolidation keeps of the memories it
// merges counts toward the principal's memory bytes (issue 19,
// attack10's E4: memory_merges kept each merged memory whole — 16 KB of
// content and 16 KB of metadata — outside every quota, so remembering
// and consolidating, repeated, filled the disk while the principal held
// one memory). A record keeps at most memory.MergeExcerptBytes of the
// content, with the whole content's size and hash; the records count
// until the survivor is forgotten. open opens a fresh store with the
// limits given.
func MergeQuota(t *testing.T, open func(t *testing.T, lim memory.Limits) Backend) {
	const quota = 100000
	st := open(t, memory.Limits{MaxMemoryBytes: quota})
	bob := as(t.Context(), "bob")
	content := "quarterly numbers " + strings.Repeat("x", 8000)
	meta := []byte(`{"pad": "` + strings.Repeat("y", 4000) + `"}`)
	sum := sha256.Sum256([]byte(content))
	var survivor int64
	var refused error
	rounds := 0
	for ; rounds < 40 && refused == nil; rounds++ {
		for range 4 {
			if _, err := st.Remember(bob, memory.RememberInput{Content: content, Metadata: meta}); err != nil {
				refused = err
				break
			}
		}
		if refused != nil {
			break
		}
		res, err := st.Consolidate(bob, memory.ConsolidateInput{Layers: []memory.Layer{memory.Semantic}})
		if err != nil {
			refused = err
			break
		}
		if len(res.Groups) != 1 {
			t.Fatalf("round %d: consolidate made %d groups, want 1: %+v", rounds, len(res.Groups), res)
		}
		survivor = res.Groups[0].Survivor.ID
	}
	s, err := st.MemoryStats(bob)
	if err != nil {
		t.Fatal(err)
	}
	if refused == nil {
		t.Fatalf("after %d rounds of 4 memories of %d bytes consolidated, bob holds %d memory and %d merged records under a quota of %d bytes: the records are outside the quota",
			rounds, len(content)+len(meta), s.Memories, s.Merged, quota)
	}
	if !errors.Is(refused, memory.ErrQuota) || !strings.Contains(refused.Error(), "memory.max_memory_bytes") {
		t.Fatalf("round %d: error = %v, want quota_exceeded naming memory.max_memory_bytes", rounds, refused)
	}
	// Each record is bounded: the memory's first MergeExcerptBytes, its
	// size and hash, without its metadata.
	m, err := st.Get(bob, survivor)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.MergedFrom) != s.Merged || s.Merged < 8 {
		t.Fatalf("the survivor lists %d merged memories, stats say %d", len(m.MergedFrom), s.Merged)
	}
	for _, mg := range m.MergedFrom {
		if mg.Content != content[:memory.MergeExcerptBytes] || mg.ContentBytes != len(content) || mg.ContentSHA256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("merged %d: content of %d bytes, content_bytes %d, content_sha256 %q; want the first %d bytes, %d, %x",
				mg.ID, len(mg.Content), mg.ContentBytes, mg.ContentSHA256, memory.MergeExcerptBytes, len(content), sum)
		}
		if mg.Record == nil || string(mg.Record.Metadata) != "{}" {
			t.Fatalf("merged %d keeps its metadata: %+v", mg.ID, mg.Record)
		}
	}
	// A record costs a small fraction of the memory it replaced, so
	// consolidating still makes room: the rounds held far more memories
	// than the quota would hold whole.
	if whole := quota / (len(content) + len(meta)); s.Merged+s.Memories <= 2*whole {
		t.Errorf("%d memories and %d records under a quota that holds %d memories: the records cost too much", s.Memories, s.Merged, whole)
	}
	// Forgetting the survivor drops its records and gives their bytes back.
	if _, err := st.Forget(bob, memory.ForgetInput{All: true}); err != nil {
		t.Fatal(err)
	}
	if s, err := st.MemoryStats(bob); err != nil || s.Memories != 0 || s.Merged != 0 {
		t.Fatalf("after forgetting everything bob holds %d memories and %d merged records (%v)", s.Memories, s.Merged, err)
	}
	for i := range quota / (len(content) + len(meta)) {
		if _, err := st.Remember(bob, memory.RememberInput{Content: content, Metadata: meta}); err != nil {
			t.Fatalf("memory %d after forgetting: %v; the records' bytes were not given back", i, err)
		}
	}
}

// testEntityLinks checks that a memory links at most 32 entities however
// it gets them (issue 19, attack10's E4 follow-up: add_entities and
// consolidation's survivor added links without bound, rows no quota
// counted): an update that would pass it fails with invalid; a
// consolidation keeps the survivor's links and as many of the others' as
// fit.
func testEntityLinks(t *testing.T, open Opener) {
	st, _ := open(t)
	alice := as(t.Context(), "alice")
	names := func(from, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprint("entity ", from+i))
		}
		return out
	}
	m, err := st.Remember(alice, memory.RememberInput{Content: "the deploy of the billing service", Entities: names(0, 30)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(alice, memory.UpdateInput{ID: m.ID, AddEntities: names(30, 2)}); err != nil {
		t.Fatalf("up to 32 links: %v", err)
	}
	_, err = st.Update(alice, memory.UpdateInput{ID: m.ID, AddEntities: names(32, 1)})
	if !errors.Is(err, memory.ErrInvalid) || !strings.Contains(err.Error(), "at most 32") {
		t.Fatalf("a 33rd link: %v, want invalid naming the limit", err)
	}
	if _, err := st.Update(alice, memory.UpdateInput{ID: m.ID, AddEntities: names(0, 3)}); err != nil {
		t.Fatalf("adding links it has: %v", err)
	}
	replace := names(100, 32)
	if _, err := st.Update(alice, memory.UpdateInput{ID: m.ID, Entities: &replace}); err != nil {
		t.Fatalf("replacing 32 links with 32 others: %v", err)
	}
	// Two duplicates with 32 links each: the survivor keeps 32.
	for range 2 {
		if _, err := st.Remember(alice, memory.RememberInput{Content: "the deploy of the billing service", Entities: names(200, 32)}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := st.Consolidate(alice, memory.ConsolidateInput{})
	if err != nil || len(res.Groups) != 1 {
		t.Fatalf("consolidate: %+v, %v; want one group", res, err)
	}
	got, err := st.Get(alice, res.Groups[0].Survivor.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Entities) != 32 {
		t.Fatalf("the survivor of three memories of 32 links each links %d entities, want 32", len(got.Entities))
	}
}
