package engine

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
)

// TestPlanSeal: sealed steps open with the plan's secret under the same
// installation key, and not once anything about them changed.
func TestPlanSeal(t *testing.T) {
	t.Parallel()
	key, _ := filter.NewKey()
	ps, err := newPlanSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	steps := []plannedStep{
		{PlanStep: memory.PlanStep{Tool: "api.create_user", Args: json.RawMessage(`{"password":"hunter2-xyz"}`), Provenance: json.RawMessage(`{"sources":["vault.get_secret"]}`)},
			known: []filter.Known{{Class: filter.ClassPassword, Confidence: 0.95, Value: "hunter2-xyz"}}},
		{PlanStep: memory.PlanStep{Tool: "api.delete_user", Args: json.RawMessage(`{"id":1}`)}},
	}
	sealed, secret, err := ps.seal(steps)
	if err != nil {
		t.Fatal(err)
	}
	for i := range sealed {
		sealed[i].Seq = i + 1 // as the store numbers them
		if bytes.Contains(sealed[i].Args, []byte("hunter2")) || !json.Valid(sealed[i].Args) {
			t.Fatalf("step %d as stored: %s", i+1, sealed[i].Args)
		}
	}
	opened, err := ps.open(sealed, secret)
	if err != nil || string(opened[0].Args) != `{"password":"hunter2-xyz"}` || len(opened[0].known) != 1 || opened[1].Tool != "api.delete_user" {
		t.Fatalf("open: %v %+v", err, opened)
	}

	other, _ := filter.NewKey()
	otherSealer, _ := newPlanSealer(other)
	_, otherSecret, _ := ps.seal(steps)
	mod := func(f func([]memory.PlanStep) []memory.PlanStep) []memory.PlanStep {
		return f(slices.Clone(sealed))
	}
	for name, tc := range map[string]struct {
		sealer *planSealer
		steps  []memory.PlanStep
		secret []byte
	}{
		"another key":    {otherSealer, sealed, secret},
		"another secret": {ps, sealed, otherSecret},
		"arguments":      {ps, mod(func(s []memory.PlanStep) []memory.PlanStep { s[1].Args = json.RawMessage(`{"id":2}`); return s }), secret},
		"tool":           {ps, mod(func(s []memory.PlanStep) []memory.PlanStep { s[1].Tool = "api.delete_all"; return s }), secret},
		"sources":        {ps, mod(func(s []memory.PlanStep) []memory.PlanStep { s[0].Provenance = nil; return s }), secret},
		"order":          {ps, mod(func(s []memory.PlanStep) []memory.PlanStep { s[0], s[1] = s[1], s[0]; return s }), secret},
		"a step dropped": {ps, sealed[1:], secret},
		"every step":     {ps, nil, secret},
	} {
		if _, err := tc.sealer.open(tc.steps, tc.secret); err != errPlanSeal {
			t.Errorf("%s changed: opened (%v)", name, err)
		}
	}

	id := planClientID("plan_abc", secret)
	if sid, sec, ok := splitPlanID(id); !ok || sid != "plan_abc" || !bytes.Equal(sec, secret) {
		t.Errorf("split %q: %q %v", id, sid, ok)
	}
	for _, bad := range []string{"plan_abc", "plan_abc.", "plan_abc.short", "plan_abc.!!!"} {
		if _, _, ok := splitPlanID(bad); ok {
			t.Errorf("%q split into an id and a secret", bad)
		}
	}
}
