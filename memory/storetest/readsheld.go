package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// holdSpy is a tools.DecodedHolder that records what a call asks to
// hold and refuses past limit (0: never).
type holdSpy struct {
	limit int64

	mu     sync.Mutex
	raises []int64
}

var errPastHold = errors.New("past the hold")

func (h *holdSpy) ctx(ctx context.Context) context.Context {
	return tools.WithDecodedHolder(ctx, func(_ context.Context, n int64) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.raises = append(h.raises, n)
		if h.limit > 0 && n > h.limit {
			return errPastHold
		}
		return nil
	})
}

// testReadsHeld (issue 19, attack18 K8): what a store tool reads to build
// its result is held in the call's results in flight row by row, before
// the next row is read (tools.HoldMore), and reading stops at the
// bound: tasks, a graph walk's entities and relations, a workspace
// listing.
func testReadsHeld(t *testing.T, open Opener) {
	st, _ := open(t)
	bob := as(t.Context(), "bob")
	meta := json.RawMessage(`{"z":[` + strings.Repeat("0,", 999) + `0]}`)
	for i := range 40 {
		if _, err := st.AddTask(bob, memory.TaskInput{Content: fmt.Sprintf("task %d", i), Metadata: meta}); err != nil {
			t.Fatal(err)
		}
	}
	row := tools.DecodedSize(tools.ResultCopies*int64(len(meta)), 1000) // a row holds at least this
	spy := &holdSpy{}
	if ts, err := st.ListTasks(spy.ctx(bob), memory.TaskQuery{Limit: 500}); err != nil || len(ts) != 40 {
		t.Fatalf("tasks: %d, %v", len(ts), err)
	}
	if len(spy.raises) != 40 || spy.raises[39] < 40*row {
		t.Fatalf("40 tasks held as %d raises, the last of %v; want one a row, at least %d in all", len(spy.raises), spy.raises[len(spy.raises)-1:], 40*row)
	}
	spy = &holdSpy{limit: 10 * row}
	if _, err := st.ListTasks(spy.ctx(bob), memory.TaskQuery{Limit: 500}); !errors.Is(err, errPastHold) {
		t.Fatalf("tasks past the hold: %v", err)
	}
	if n := len(spy.raises); n > 11 {
		t.Errorf("%d rows read past a hold of 10 rows", n)
	}

	for i := range 12 {
		if _, err := st.Relate(bob, memory.RelateInput{From: "hub", To: fmt.Sprintf("spoke%d", i), Type: "links"}); err != nil {
			t.Fatal(err)
		}
	}
	spy = &holdSpy{}
	res, err := st.Neighbors(spy.ctx(bob), memory.NeighborsInput{Entity: "hub"})
	if err != nil || len(res.Neighbors) != 12 {
		t.Fatalf("neighbors: %d, %v", len(res.Neighbors), err)
	}
	if len(spy.raises) < 12 {
		t.Errorf("12 neighbors held as %d raises", len(spy.raises))
	}

	for i := range 5 {
		if _, _, err := st.WriteFile(bob, fmt.Sprintf("notes/%d.txt", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	spy = &holdSpy{}
	if l, err := st.ListFiles(spy.ctx(bob), "notes/"); err != nil || len(l.Files) != 5 || len(spy.raises) != 5 {
		t.Fatalf("a listing of 5 files: %d files, %d raises, %v", len(l.Files), len(spy.raises), err)
	}
}
