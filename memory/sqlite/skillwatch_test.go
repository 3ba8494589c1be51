package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"path/filepath"
	"testing"
	"time"
)

// changeRecorder collects the skill changes a store delivers.
type changeRecorder struct{ ch chan memory.SkillChange }

func recordChanges(tb testing.TB, s *Store) changeRecorder {
	r := changeRecorder{ch: make(chan memory.SkillChange, 100)}
	tb.Cleanup(s.OnSkillChange(func(c memory.SkillChange) { r.ch <- c }))
	return r
}

// next waits for the next change; the wait is a bound for a failure, not
// a measurement.
func (r changeRecorder) next(tb testing.TB) memory.SkillChange {
	tb.Helper()
	select {
	case c := <-r.ch:
		return c
	case <-time.After(10 * time.Second):
		tb.Fatal("no skill change delivered")
		return memory.SkillChange{}
	}
}

func (r changeRecorder) none(tb testing.TB) {
	tb.Helper()
	select {
	case c := <-r.ch:
		tb.Fatalf("unexpected change %+v", c)
	default:
	}
}

// TestSkillChangesAcrossStores is issue 9's "skills saved by another
// process are invisible": two Stores on one file stand for two processes.
// A change made through one reaches the other's subscribers through its
// watcher, as the same event, and is then resolvable there.
func TestSkillChangesAcrossStores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	// one watches with its goroutine; two polls by hand, so that the test
	// can tell that a store does not deliver its own changes twice.
	one := openTest(t, Config{Path: path, WatchInterval: 20 * time.Millisecond})
	two := openTest(t, Config{Path: path, WatchInterval: -1})
	heard, local := recordChanges(t, one), recordChanges(t, two)
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")

	steps := []struct {
		name string
		do   func() error
		want memory.SkillChange
	}{
		{"save", func() error {
			_, err := two.SaveSkill(alice, memory.Skill{Name: "digest", Description: "d", Code: "return 1"})
			return err
		}, memory.SkillChange{Principal: "alice", Name: "digest", Kind: memory.SkillSaved}},
		{"publish", func() error { _, err := two.PublishSkill(alice, "digest"); return err },
			memory.SkillChange{Principal: "alice", Name: "digest", Kind: memory.SkillPublished, Everyone: true}},
		{"delete", func() error { return two.DeleteSkill(alice, "digest") },
			memory.SkillChange{Principal: "alice", Name: "digest", Kind: memory.SkillDeleted, Deleted: true}},
		{"unpublish", func() error { return two.UnpublishSkill(alice, "digest") },
			memory.SkillChange{Principal: "alice", Name: "digest", Kind: memory.SkillUnpublished, Deleted: true, Everyone: true}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := st.do(); err != nil {
				t.Fatal(err)
			}
			mine := local.next(t)
			got := heard.next(t)
			if got != mine {
				t.Fatalf("the other store heard %+v, the store that made it %+v", got, mine)
			}
			want := st.want
			want.Version = mine.Version
			if got != want {
				t.Fatalf("change %+v, want %+v", got, want)
			}
			// The store that made the change skips it in its own log.
			if err := two.pollSkillChanges(t.Context()); err != nil {
				t.Fatal(err)
			}
			local.none(t)
		})
	}
	// What was published there is callable here.
	if _, err := two.SaveSkill(bob, memory.Skill{Name: "weekly", Description: "d", Code: "return 'w'"}); err != nil {
		t.Fatal(err)
	}
	if _, err := two.PublishSkill(bob, "weekly"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		local.next(t)
		heard.next(t)
	}
	if sk, err := one.ResolveSkill(alice, "weekly"); err != nil || sk.Code != "return 'w'" {
		t.Fatalf("resolve in the other store: %+v %v", sk, err)
	}
	// And the other way round, polled by hand.
	if _, err := one.SaveSkill(bob, memory.Skill{Name: "from_one", Description: "d", Code: "return 1"}); err != nil {
		t.Fatal(err)
	}
	heard.next(t)
	if err := two.pollSkillChanges(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c := local.next(t); c.Name != "from_one" || c.Kind != memory.SkillSaved {
		t.Fatalf("two heard %+v", c)
	}
}

// TestSkillChangesMissed checks that a store that fell behind what Prune
// keeps of the log asks its subscribers to reload.
func TestSkillChangesMissed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	one := openTest(t, Config{Path: path, WatchInterval: -1})
	two := openTest(t, Config{Path: path, WatchInterval: -1})
	heard := recordChanges(t, one)
	ctx := as(context.Background(), "alice")
	for range skillLogKeep + 5 {
		if _, err := two.SaveSkill(ctx, memory.Skill{Name: "busy", Description: "d", Code: "return 1"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := two.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	if err := one.pollSkillChanges(ctx); err != nil {
		t.Fatal(err)
	}
	if c := heard.next(t); c.Kind != memory.SkillsReloaded || !c.Everyone {
		t.Fatalf("after missing changes: %+v", c)
	}
	heard.none(t)
	// Then it follows again.
	if _, err := two.SaveSkill(ctx, memory.Skill{Name: "busy", Description: "d", Code: "return 2"}); err != nil {
		t.Fatal(err)
	}
	if err := one.pollSkillChanges(ctx); err != nil {
		t.Fatal(err)
	}
	if c := heard.next(t); c.Kind != memory.SkillSaved {
		t.Fatalf("after the reload: %+v", c)
	}
}
