package vfs

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/codecell/codecell/tools"
)

// TestSnapshotsAreShared checks that callers who share a view share its
// rendered files, and that a caller with tools of its own gets its
// snapshot once per view.
func TestSnapshotsAreShared(t *testing.T) {
	r := tools.NewRegistry()
	h := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	if err := r.Register(tools.Tool{Name: "a.b", Summary: "B.", Handler: h}); err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterScoped("alice", tools.Tool{Name: "a.c", Summary: "C.", Handler: h}); err != nil {
		t.Fatal(err)
	}
	root := New(r)
	global := root.current()
	if root.For(tools.Caller{Principal: "bob"}).current() != global || root.For(tools.Caller{Principal: "carol", Session: "s"}).current() != global {
		t.Error("callers without tools of their own do not share the global snapshot")
	}
	alice := root.For(tools.Caller{Principal: "alice"})
	s := alice.current()
	if s == global || alice.current() != s || root.For(tools.Caller{Principal: "alice"}).current() != s {
		t.Error("alice's snapshot is the global one, or is built more than once")
	}
	if other := New(r); other.current() == global {
		t.Error("two trees of one registry share a snapshot (their options may differ)")
	}
}
