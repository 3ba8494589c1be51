package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
)

// TestMultiRoundTripCommit: on protocol 2026-07-28 a plan's commit whose
// steps [approval] guards asks the client through input_required, step by
// step; the retries go on from the step that asked, and no step is made
// twice. A declined step fails the commit; a state is good for its own
// plan only.
func TestMultiRoundTripCommit(t *testing.T) {
	t.Parallel()
	srv, _ := storeServerTB(t, filepath.Join(t.TempDir(), "m.db"), mcpserver.Config{
		Approval: engine.ApprovalConfig{ApprovalPolicy: engine.ApprovalPolicy{RequiredFor: []string{"crm.write"}}}})
	l := newCRM(t, srv)
	var elicited atomic.Int32
	decline := atomic.Bool{}
	h := host{elicit: func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		elicited.Add(1)
		res := &mcp.ElicitationResult{}
		res.Action = mcp.ElicitationResponseActionAccept
		if decline.Load() {
			res.Action = mcp.ElicitationResponseActionDecline
		}
		return res, nil
	}}
	rw := &stateRewriter{}
	c := connectModern(t, srv, rw, client.WithElicitationHandler(h))
	plan := func(t *testing.T) string {
		t.Helper()
		_, rec := execute(t, c, map[string]any{"mode": "plan", "code": `await crm.write({a: 1}); await crm.write({a: 2}); return "planned"`})
		if rec.Error != nil || rec.Plan == nil || rec.Plan.ID == "" {
			t.Fatalf("dry run: %+v %+v", rec.Error, rec.Plan)
		}
		return rec.Plan.ID
	}

	t.Run("each guarded step asks, once", func(t *testing.T) {
		id := plan(t)
		writes, asked := l.writes.Load(), elicited.Load()
		_, rec := execute(t, c, map[string]any{"plan_id": id})
		if rec.Error != nil || rec.Status != "ok" || rec.Plan == nil || len(rec.Plan.Steps) == 0 {
			t.Fatalf("commit: %s %+v", rec.Result, rec.Error)
		}
		if n := l.writes.Load() - writes; n != 2 {
			t.Errorf("crm.write made %d times, want 2 (one per step)", n)
		}
		if n := elicited.Load() - asked; n != 2 {
			t.Errorf("the user was asked %d times, want 2", n)
		}
		if _, again := execute(t, c, map[string]any{"plan_id": id}); again.Error == nil || again.Error.Kind != engine.KindPlanCommitted {
			t.Errorf("a second commit: %+v, want plan_committed", again.Error)
		}
	})

	t.Run("a declined step fails the commit", func(t *testing.T) {
		id := plan(t)
		decline.Store(true)
		defer decline.Store(false)
		writes := l.writes.Load()
		_, rec := execute(t, c, map[string]any{"plan_id": id})
		if rec.Error == nil || rec.Error.Kind != engine.KindPlanStepFailed || !strings.Contains(rec.Error.Message, "step 1 of 2") {
			t.Fatalf("commit declined: %s %+v", rec.Result, rec.Error)
		}
		if l.writes.Load() != writes {
			t.Errorf("a declined step was made")
		}
	})

	t.Run("a state resumes its own plan only", func(t *testing.T) {
		first, second := plan(t), plan(t)
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(ts.Close)
		raw := &client26{url: ts.URL + mcpserver.PathStreamable, caps: map[string]any{"elicitation": map[string]any{}}}
		r := raw.execute(t, map[string]any{"plan_id": first})
		state, _ := r.Raw["requestState"]
		if string(r.Raw["resultType"]) != `"input_required"` || len(state) == 0 {
			t.Fatalf("the commit should ask: %s %+v", r.Result, r.Error)
		}
		writes := l.writes.Load()
		var st string
		json.Unmarshal(state, &st)
		r = raw.send(t, "tools/call", "execute_code", map[string]any{"name": "execute_code", "arguments": map[string]any{"plan_id": second},
			"requestState": st, "inputResponses": map[string]any{"c1.elicit.0": map[string]any{"action": "accept"}}})
		if !strings.Contains(string(r.Raw["structuredContent"]), string(engine.KindStateRefused)) {
			t.Errorf("another plan's state: %s, want %s", r.Result, engine.KindStateRefused)
		}
		if l.writes.Load() != writes {
			t.Errorf("a step was made with another plan's state")
		}
		// The state, sent back with its own plan, goes on.
		r = raw.send(t, "tools/call", "execute_code", map[string]any{"name": "execute_code", "arguments": map[string]any{"plan_id": first},
			"requestState": st, "inputResponses": map[string]any{"c1.elicit.0": map[string]any{"action": "accept"}}})
		if string(r.Raw["resultType"]) != `"input_required"` || !strings.Contains(string(r.Raw["inputRequests"]), "c2.elicit.0") {
			t.Errorf("the retry should make step 1 and ask for step 2: %s", r.Result)
		}
		if n := l.writes.Load() - writes; n != 1 {
			t.Errorf("crm.write made %d times, want 1", n)
		}
	})
}
