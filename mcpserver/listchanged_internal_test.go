package mcpserver

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
)

// TestListChangesCoalesced (attack15 L1): each change of the catalogue
// was told to every client at once, so one principal's skills.publish
// and skills.unpublish in a loop sent two notifications of each kind to
// every client per turn. A change opens a window; the changes within it
// are told once, when it ends — every one of them, the scoped ones to
// their principal — and a
// change after it opens the next.
func TestListChangesCoalesced(t *testing.T) {
	t.Parallel()
	type told struct {
		global bool
		scopes []string
	}
	var mu sync.Mutex
	var got []told
	var ends []func()
	l := newListChanges(time.Hour, func(global bool, scopes []string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, told{global, scopes})
	})
	l.after = func(d time.Duration, f func()) func() bool {
		if d != time.Hour {
			t.Errorf("window %v", d)
		}
		ends = append(ends, f)
		return func() bool { return false }
	}
	for i := range 20 {
		l.changed(tools.Change{Added: []string{"skills.flip"}})
		l.changed(tools.Change{Removed: []string{"skills.flip"}})
		l.changed(tools.Change{Scope: "bob", Added: []string{fmt.Sprintf("skills.s%d", i%2)}})
	}
	l.changed(tools.Change{}) // a category's description
	if len(ends) != 1 || len(got) != 0 {
		t.Fatalf("%d windows opened, %d told before the end of the first", len(ends), len(got))
	}
	ends[0]()
	if len(got) != 1 || !got[0].global || !slices.Equal(got[0].scopes, []string{"bob"}) {
		t.Fatalf("told %+v", got)
	}
	l.changed(tools.Change{Scope: "alice", Added: []string{"skills.x"}})
	if len(ends) != 2 {
		t.Fatalf("a change after a window's end opened no window")
	}
	ends[1]()
	if len(got) != 2 || got[1].global || !slices.Equal(got[1].scopes, []string{"alice"}) {
		t.Errorf("told %+v", got)
	}
	// Closed, it tells nothing more: the window open is stopped.
	stopped := false
	l.after = func(time.Duration, func()) func() bool {
		return func() bool { stopped = true; return true }
	}
	l.changed(tools.Change{})
	l.close()
	l.changed(tools.Change{})
	if len(got) != 2 || !stopped {
		t.Errorf("told %d, window stopped %v, after close", len(got), stopped)
	}
}
