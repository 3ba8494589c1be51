package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
)

// CacheJournals checks that the journals of runs waiting for the
// client's input (memory.CacheJournal) are kept apart from the shared
// cache bound (issue 19, third round L3: another principal's cache writes
// evicted a pending run's journal, whose retry was then refused): the
// shared bound neither counts nor evicts them, and a principal's journals
// together are bounded by its own, evicting its own oldest, never
// another's. open opens a fresh store with the limits given.
func CacheJournals(t *testing.T, open func(t *testing.T, lim memory.Limits) Backend) {
	const kib = 1 << 10
	st := open(t, memory.Limits{MaxCacheBytes: 64 * kib, MaxPrincipalJournalBytes: 32 * kib})
	value := func(n int) []byte { return []byte(`"` + strings.Repeat("x", n-2) + `"`) }
	set := func(ctx context.Context, kind, key string, n int) {
		t.Helper()
		if _, err := st.CacheSet(ctx, memory.CacheSetInput{Kind: kind, Key: key, Value: value(n), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	has := func(ctx context.Context, kind, key string) bool {
		t.Helper()
		_, err := st.CacheGet(ctx, kind, key)
		if err != nil && !errors.Is(err, memory.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	// Bob's run waits for its client: its journal is the oldest entry.
	set(bob, memory.CacheJournal, "run-1", 16*kib)
	// Alice's entries fill the bound, then go past it many times over.
	for i := range 24 {
		set(alice, memory.CacheUser, fmt.Sprint("a", i), 8*kib)
	}
	if !has(bob, memory.CacheJournal, "run-1") {
		t.Fatal("another principal's cache writes evicted a pending run's journal")
	}
	// The journal does not count against the shared bound: alice keeps
	// the whole of it (8 entries of 8 KiB), not 16 KiB less.
	live := 0
	for i := range 24 {
		if has(alice, memory.CacheUser, fmt.Sprint("a", i)) {
			live++
		}
	}
	if live != 8 {
		t.Errorf("alice keeps %d entries of 8 KiB under a 64 KiB bound, want 8 (journals are not counted)", live)
	}
	// A principal's journals past its own bound evict its own oldest.
	set(alice, memory.CacheJournal, "run-a1", 16*kib)
	set(alice, memory.CacheJournal, "run-a2", 16*kib)
	set(alice, memory.CacheJournal, "run-a3", 16*kib)
	if has(alice, memory.CacheJournal, "run-a1") {
		t.Error("a principal's journals outlived its bound")
	}
	if !has(alice, memory.CacheJournal, "run-a2") || !has(alice, memory.CacheJournal, "run-a3") {
		t.Error("a principal's newer journals were evicted")
	}
	if !has(bob, memory.CacheJournal, "run-1") {
		t.Error("another principal's journals evicted bob's")
	}
	// Nor do journals evict cache entries.
	if live := func() (n int) {
		for i := range 24 {
			if has(alice, memory.CacheUser, fmt.Sprint("a", i)) {
				n++
			}
		}
		return n
	}(); live != 8 {
		t.Errorf("alice keeps %d entries after her journals, want 8", live)
	}
}

// CacheTotals checks the cache's running total (issue 19, third round
// L4: every write summed every value): replacing, deleting and pruning
// entries keep it exact, so that the bound evicts when, and only when,
// the values together pass it. open opens a fresh store with
// memory.Limits.MaxCacheBytes = max.
func CacheTotals(t *testing.T, open func(t *testing.T, max int64) Backend) {
	const kib = 1 << 10
	st := open(t, 64*kib)
	value := func(n int) []byte { return []byte(`"` + strings.Repeat("x", n-2) + `"`) }
	set := func(ctx context.Context, key string, n int, ttl time.Duration) {
		t.Helper()
		if _, err := st.CacheSet(ctx, memory.CacheSetInput{Kind: memory.CacheUser, Key: key, Value: value(n), TTL: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(ctx context.Context, keys ...string) (n int) {
		t.Helper()
		for _, k := range keys {
			if _, err := st.CacheGet(ctx, memory.CacheUser, k); err == nil {
				n++
			} else if !errors.Is(err, memory.ErrNotFound) {
				t.Fatal(err)
			}
		}
		return n
	}
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"}
	for _, k := range keys {
		set(alice, k, 8*kib, time.Hour) // 64 KiB: at the bound
	}
	set(alice, "k0", 4*kib, time.Hour) // replaced: 60 KiB
	if _, err := st.CacheDelete(alice, memory.CacheUser, "k1"); err != nil {
		t.Fatal(err)
	}
	// 52 KiB; an entry that expires and is pruned leaves it so.
	set(as(t.Context(), "carol"), "gone", 8*kib, 30*time.Millisecond)
	waitPast(time.Now().Add(40 * time.Millisecond))
	if _, err := st.Prune(t.Context()); err != nil {
		t.Fatal(err)
	}
	set(bob, "b0", 4*kib, time.Hour) // 56 KiB
	set(bob, "b1", 8*kib, time.Hour) // 64 KiB: still at the bound
	if n := count(alice, keys...); n != 7 {
		t.Fatalf("%d of alice's entries left at the bound, want 7: the total counted what was replaced, deleted or pruned", n)
	}
	set(bob, "b2", 4*kib, time.Hour) // 68 KiB: the oldest goes
	if n := count(alice, keys...); n != 6 {
		t.Fatalf("%d of alice's entries left past the bound, want 6", n)
	}
	if count(bob, "b0", "b1", "b2") != 3 {
		t.Error("newer entries were evicted")
	}
}

// Legacy is what Upgrade has a backend write, with its own SQL, into a
// database at the schema of the release before the audit log hashed
// sessions and the cache kept a running total (SQLite 18, PostgreSQL 9),
// before it opens the store on it, which migrates it.
type Legacy struct {
	Executions []LegacyExecution
	Cache      []LegacyCacheEntry
	// Entities are knowledge-graph entities of their principals.
	Entities []LegacyEntity
}

// LegacyEntity is an entity the old schema held.
type LegacyEntity struct {
	Principal, Name string
}

// LegacyExecution is an audit record as the old schema kept it: the
// session ID itself.
type LegacyExecution struct {
	ID, Principal, Session string
	StartedAt              time.Time
}

// LegacyCacheEntry is a cache entry the old schema held.
type LegacyCacheEntry struct {
	Principal, Kind, Key string
	Value                []byte
	CreatedAt, ExpiresAt time.Time
}

// Upgrade checks the migrations of issue 19's third round on a store
// that had data: the audit log's session IDs become their hashes
// (memory.SessionHash, as the server log writes them: L9), found by the
// hash and joined with new records; the cache's running total counts the
// entries there were, and not the journals (L3, L4); the graph entities
// there were count against their principal's quota (L11). open writes old into
// a database at the old schema, then opens the store on it with lim.
func Upgrade(t *testing.T, open func(t *testing.T, old Legacy, lim memory.Limits) Backend) {
	const kib = 1 << 10
	created := time.Now().Add(-time.Hour)
	old := Legacy{Executions: []LegacyExecution{
		{ID: "e1", Principal: "alice", Session: "session-one", StartedAt: created},
		{ID: "e2", Principal: "bob", Session: "session-two", StartedAt: created.Add(time.Minute)},
		{ID: "e3", Principal: "alice", StartedAt: created.Add(2 * time.Minute)},
	}}
	for i := range 7 {
		old.Cache = append(old.Cache, LegacyCacheEntry{Principal: "carol", Kind: memory.CacheUser, Key: fmt.Sprint("c", i),
			Value: make([]byte, 8*kib), CreatedAt: created.Add(time.Duration(i) * time.Second), ExpiresAt: time.Now().Add(time.Hour)})
	}
	old.Cache = append(old.Cache, LegacyCacheEntry{Principal: "dave", Kind: memory.CacheJournal, Key: "run-1",
		Value: make([]byte, 16*kib), CreatedAt: created, ExpiresAt: time.Now().Add(time.Hour)})
	for i := range 3 {
		old.Entities = append(old.Entities, LegacyEntity{Principal: "erin", Name: fmt.Sprint("old entity ", i)})
	}
	st := open(t, old, memory.Limits{MaxCacheBytes: 64 * kib, MaxGraphEntities: 3})
	ctx := t.Context()

	t.Run("sessions hashed", func(t *testing.T) {
		all, err := st.ListExecutions(ctx, memory.ExecutionQuery{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"e1": memory.SessionHash("session-one"), "e2": memory.SessionHash("session-two"), "e3": ""}
		for _, e := range all {
			if e.Session != want[e.ID] {
				t.Errorf("%s: session %q after the migration, want %q", e.ID, e.Session, want[e.ID])
			}
		}
		if len(all) != 3 {
			t.Fatalf("%d records after the migration, want 3", len(all))
		}
		// A new record of the same session is found with the old ones,
		// by the hash the server log writes.
		if err := st.RecordExecution(ctx, memory.Execution{ID: "e4", Principal: "alice", Session: "session-one", Language: "javascript", Code: "1", Status: "ok"}); err != nil {
			t.Fatal(err)
		}
		got, err := st.ListExecutions(ctx, memory.ExecutionQuery{Session: memory.SessionHash("session-one")})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].ID != "e4" || got[1].ID != "e1" {
			t.Errorf("the session's records by its hash: %+v, want e4 and e1", got)
		}
		if raw, _ := st.ListExecutions(ctx, memory.ExecutionQuery{Session: "session-one"}); len(raw) != 0 {
			t.Errorf("records found by the raw session ID: %+v", raw)
		}
		if e, _, err := st.GetExecution(ctx, "e4"); err != nil || e.Session != memory.SessionHash("session-one") {
			t.Errorf("a new record keeps session %q (%v), want its hash", e.Session, err)
		}
	})

	t.Run("graph counted", func(t *testing.T) {
		_, _, err := st.UpsertEntity(as(ctx, "erin"), memory.EntityInput{Name: "a fourth"})
		if !errors.Is(err, memory.ErrQuota) {
			t.Fatalf("a fourth entity past a quota of 3, with 3 from before the migration: %v, want quota_exceeded", err)
		}
		if _, _, err := st.UpsertEntity(as(ctx, "frank"), memory.EntityInput{Name: "a first"}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("cache counted", func(t *testing.T) {
		alice := as(ctx, "alice")
		has := func(ctx context.Context, kind, key string) bool {
			t.Helper()
			_, err := st.CacheGet(ctx, kind, key)
			if err != nil && !errors.Is(err, memory.ErrNotFound) {
				t.Fatal(err)
			}
			return err == nil
		}
		carol, dave := as(ctx, "carol"), as(ctx, "dave")
		set := func(key string) {
			t.Helper()
			if _, err := st.CacheSet(alice, memory.CacheSetInput{Kind: memory.CacheUser, Key: key, Value: make([]byte, 8*kib), TTL: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
		set("a0") // 64 KiB with carol's 56: at the bound (dave's journal is not counted)
		if !has(carol, memory.CacheUser, "c0") {
			t.Fatal("an entry was evicted at the bound: the migrated total counts a journal, or more than there was")
		}
		set("a1") // past it: carol's oldest goes
		if has(carol, memory.CacheUser, "c0") {
			t.Error("the bound did not evict: the migrated total missed the entries there were")
		}
		if !has(carol, memory.CacheUser, "c1") || !has(dave, memory.CacheJournal, "run-1") {
			t.Error("more than the oldest entry was evicted, or a journal")
		}
	})
}
