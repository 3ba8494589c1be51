package storetest

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
)

// ResultsBound checks the bounds of stored results at write time (issue
// 19, third round M7: results were bounded only by an hourly prune of
// every principal's, oldest first, so that one principal could fill the
// disk within the hour and then have the others' results pruned). open
// opens a fresh store with memory.Limits.MaxPrincipalResultsBytes =
// perPrincipal and MaxResultsBytes = total. A principal past its bound
// loses its own oldest results, never another's; the store past its
// bound loses the oldest results of the principal holding the most; a
// result that cannot fit is refused and evicts nothing.
func ResultsBound(t *testing.T, open func(t *testing.T, perPrincipal, total int64) Backend) {
	const size = 10 << 10 // random bytes: compressed, a little more
	// Three results per principal, six in all.
	st := open(t, 3*size+512, 6*size+1024)
	put := func(ctx context.Context, n int) string {
		t.Helper()
		data := make([]byte, n)
		rand.Read(data)
		info, err := st.PutResult(ctx, memory.PutResultInput{ContentType: "application/octet-stream", Data: data})
		if err != nil {
			t.Fatal(err)
		}
		waitPast(info.CreatedAt.Add(time.Millisecond)) // the next is newer
		return info.ID
	}
	kept := func(ctx context.Context, id string) bool {
		t.Helper()
		_, _, err := st.GetResult(ctx, id)
		if err != nil && !errors.Is(err, memory.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	alice, bob, carol := as(t.Context(), "alice"), as(t.Context(), "bob"), as(t.Context(), "carol")
	a := []string{put(alice, size), put(alice, size)}
	var b []string
	for range 4 {
		b = append(b, put(bob, size))
	}
	if kept(bob, b[0]) {
		t.Error("a principal's results outgrew its bound: its oldest was kept")
	}
	for i, id := range b[1:] {
		if !kept(bob, id) {
			t.Errorf("bob's result %d was evicted within his bound", i+1)
		}
	}
	for i, id := range a {
		if !kept(alice, id) {
			t.Errorf("bob's results evicted alice's result %d", i)
		}
	}
	// Five results now (alice 2, bob 3); carol's second is the seventh:
	// the largest holder, bob, loses his oldest.
	c := []string{put(carol, size), put(carol, size)}
	if kept(bob, b[1]) {
		t.Error("past the bound of all, the largest holder's oldest result was kept")
	}
	for _, k := range []struct {
		ctx context.Context
		id  string
	}{{alice, a[0]}, {alice, a[1]}, {bob, b[2]}, {bob, b[3]}, {carol, c[0]}, {carol, c[1]}} {
		if !kept(k.ctx, k.id) {
			t.Errorf("result %s of a smaller holder (or the newest) was evicted", k.id)
		}
	}
	// A result larger than a principal may keep is refused, and costs
	// nothing kept.
	data := make([]byte, 4*size)
	rand.Read(data)
	if _, err := st.PutResult(alice, memory.PutResultInput{Data: data}); !errors.Is(err, memory.ErrTooLarge) {
		t.Errorf("a result past the principal's bound: %v, want ErrTooLarge", err)
	}
	if !kept(alice, a[0]) || !kept(alice, a[1]) {
		t.Error("a refused result evicted the principal's results")
	}
}
