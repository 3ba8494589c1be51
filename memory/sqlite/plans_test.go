package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
)

func threeSteps() []memory.PlanStep {
	return []memory.PlanStep{
		{Tool: "workspace.write", Args: json.RawMessage(`{"path":"a","data":"1"}`)},
		{Tool: "workspace.write", Args: json.RawMessage(`{"path":"b","data":"2"}`), Provenance: json.RawMessage(`["crm"]`)},
		{Tool: "memory.remember", Args: json.RawMessage(`{"content":"x"}`)},
	}
}

func TestPlanLifecycle(t *testing.T) {
	clock := &testClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := openTest(t, Config{Now: clock.now})
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")

	id, saved, err := s.SavePlan(alice, memory.SavePlanInput{Session: "s1", ExecutionID: "e1", Steps: threeSteps(), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(id) < 30 || saved.IDHash != memory.PlanIDHash(id) || len(saved.Steps) != 3 || saved.Steps[2].Seq != 3 {
		t.Fatalf("saved %q %+v", id, saved)
	}
	t.Run("another principal's plan is not found", func(t *testing.T) {
		_, err := s.ClaimPlan(bob, id, "c0")
		wantCode(t, err, tools.CodeNotFound)
		_, err = s.GetPlan(bob, id)
		wantCode(t, err, tools.CodeNotFound)
	})
	t.Run("an unknown id is not found", func(t *testing.T) {
		_, err := s.ClaimPlan(alice, "plan_nope", "c0")
		wantCode(t, err, tools.CodeNotFound)
	})
	t.Run("claim once", func(t *testing.T) {
		p, err := s.ClaimPlan(alice, id, "c1")
		if err != nil {
			t.Fatal(err)
		}
		if p.State != memory.PlanCommitting || p.Session != "s1" || len(p.Steps) != 3 || string(p.Steps[1].Provenance) != `["crm"]` {
			t.Fatalf("claimed %+v", p)
		}
		_, err = s.ClaimPlan(alice, id, "c2")
		if te := wantCode(t, err, memory.CodePlanCommitted); !errors.Is(te, memory.ErrPlanCommitted) {
			t.Fatalf("error %v does not wrap ErrPlanCommitted", err)
		}
	})
	t.Run("outcomes", func(t *testing.T) {
		if err := s.FinishPlanStep(alice, id, 1, memory.StepOK, ""); err != nil {
			t.Fatal(err)
		}
		if err := s.FinishPlanStep(alice, id, 2, memory.StepError, "tool_failed"); err != nil {
			t.Fatal(err)
		}
		if err := s.FinishPlan(alice, id, memory.PlanFailed); err != nil {
			t.Fatal(err)
		}
		p, err := s.GetPlan(alice, id)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, st := range p.Steps {
			got = append(got, st.Status+":"+st.ErrorCode)
		}
		if want := []string{"ok:", "error:tool_failed", "not_run:"}; !equalStrings(got, want) || p.State != memory.PlanFailed {
			t.Fatalf("state %s, steps %v; want failed, %v", p.State, got, want)
		}
	})
	t.Run("expired", func(t *testing.T) {
		id2, _, err := s.SavePlan(alice, memory.SavePlanInput{Steps: threeSteps(), TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		clock.t = clock.t.Add(time.Minute)
		_, err = s.ClaimPlan(alice, id2, "c3")
		wantCode(t, err, memory.CodePlanExpired)
		rep, err := s.Prune(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Plans != 1 {
			t.Fatalf("pruned %d plans, want the expired one", rep.Plans)
		}
	})
	t.Run("altered", func(t *testing.T) {
		id3, p, err := s.SavePlan(alice, memory.SavePlanInput{Steps: threeSteps(), TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.w.ExecContext(t.Context(), `UPDATE plan_steps SET args = CAST('{"path":"evil","data":"1"}' AS BLOB) WHERE plan_hash = ? AND seq = 1`, p.IDHash); err != nil {
			t.Fatal(err)
		}
		_, err = s.ClaimPlan(alice, id3, "c4")
		wantCode(t, err, memory.CodePlanAltered)
	})
	t.Run("invalid", func(t *testing.T) {
		_, _, err := s.SavePlan(alice, memory.SavePlanInput{TTL: time.Hour})
		wantCode(t, err, tools.CodeInvalidArguments)
		_, _, err = s.SavePlan(alice, memory.SavePlanInput{Steps: threeSteps()})
		wantCode(t, err, tools.CodeInvalidArguments)
	})
}

func TestPlanConcurrentClaims(t *testing.T) {
	s := openTest(t, Config{})
	ctx := as(context.Background(), "alice")
	id, _, err := s.SavePlan(ctx, memory.SavePlanInput{Steps: threeSteps(), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = s.ClaimPlan(ctx, id, "c") })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, memory.ErrPlanCommitted):
			t.Errorf("claim: %v, want success or ErrPlanCommitted", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d claims won, want exactly 1", won)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
