package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/codecell/codecell/memory"
)

// ConsolidateReaders checks that memory.consolidate holds no store
// connection while it compares memories (issue 19, attack9 D2: it
// compared every pair of up to 5,000 memories inside its read
// transaction, so a few of one principal's consolidates held every read
// connection and another principal's recall ran past its deadline).
// open opens a fresh store with a single connection for reads (SQLite's
// Readers: 1; PostgreSQL's MaxConns: 2, one of them the listener's).
//
// Bob's memories all share words, so that every pair is compared; while
// his consolidate compares them, alice's recalls are served one after
// the other. Holding the connection, a consolidate lets at most the
// recall already under way finish before it does. Meanwhile a second
// consolidate of bob's is refused as busy: one at a time per principal.
func ConsolidateReaders(t *testing.T, open func(t *testing.T) Backend) {
	st := open(t)
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	const n = 1500
	for i := range n {
		if _, err := st.Remember(bob, memory.RememberInput{Content: fmt.Sprintf("harbour crane ledger w%dx w%dy", i, i*7)}); err != nil {
			t.Fatal(err)
		}
	}
	remember(t, st, alice, memory.RememberInput{Content: "The quarterly report is due on Friday"})

	type outcome struct {
		res memory.ConsolidateResult
		err error
	}
	done := make(chan outcome, 1)
	started := make(chan struct{})
	go func() {
		close(started)
		// Threshold 1 and a low overlap: every pair passes the word
		// test's candidates, almost none the vectors'.
		for {
			res, err := st.Consolidate(bob, memory.ConsolidateInput{DryRun: true, Limit: n, Threshold: 1, MinOverlap: 0.01, Layers: []memory.Layer{memory.Semantic}})
			if !errors.Is(err, memory.ErrBusy) { // busy: the probe below held the gate for a moment
				done <- outcome{res, err}
				return
			}
		}
	}()
	<-started
	served, busy := 0, 0
	ended, cancel := context.WithCancel(bob)
	cancel()
	var out outcome
wait:
	for {
		select {
		case out = <-done:
			break wait
		default:
		}
		// A second consolidate of bob's meanwhile is refused as busy
		// before it reads anything (this one's context has ended, so
		// that, admitted, it ends at once).
		switch _, err := st.Consolidate(ended, memory.ConsolidateInput{DryRun: true}); {
		case errors.Is(err, memory.ErrBusy):
			busy++
		case !errors.Is(err, context.Canceled):
			t.Fatalf("bob's second consolidate: %v, want busy or canceled", err)
		}
		res, err := st.Recall(alice, memory.RecallInput{Query: "when is the report due", Limit: 1})
		if err != nil || len(res.Results) != 1 {
			t.Fatalf("alice's recall during bob's consolidate: %+v %v", res.Results, err)
		}
		served++
	}
	if out.err != nil || out.res.Examined != n {
		t.Fatalf("bob's consolidate: examined %d, %v", out.res.Examined, out.err)
	}
	if served < 3 {
		t.Errorf("alice's recall was served %d times while bob's consolidate compared %d memories: the consolidate holds the store's read connection while it computes", served, n)
	}
	if busy == 0 {
		t.Errorf("bob's second consolidate was never refused as busy while his first compared %d memories", n)
	}
	t.Logf("alice's recalls served during bob's consolidate of %d memories: %d; bob's second consolidate refused %d times", n, served, busy)
}
