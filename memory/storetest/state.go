package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// The contract of plans, the cache and the state instances share
// (memory/plans.go, cache.go, shared.go), and the audit's run modes.

// StateBackend is the part of Backend these cases use.
type StateBackend interface {
	SavePlan(ctx context.Context, in memory.SavePlanInput) (string, memory.Plan, error)
	ClaimPlan(ctx context.Context, id, commitExecutionID string) (memory.Plan, error)
	GetPlan(ctx context.Context, id string) (memory.Plan, error)
	FinishPlanStep(ctx context.Context, id string, seq int, status, errorCode string) error
	FinishPlan(ctx context.Context, id, state string) error
	CacheGet(ctx context.Context, kind, key string) (memory.CacheEntry, error)
	CacheSet(ctx context.Context, in memory.CacheSetInput) (time.Time, error)
	CacheDelete(ctx context.Context, kind, key string) (bool, error)
	PutVaultTokens(ctx context.Context, tokens ...memory.VaultToken) error
	GetVaultToken(ctx context.Context, principal, session, token string) (memory.VaultToken, error)
	DeleteVaultTokens(ctx context.Context, principal, session string) error
	ReserveQuota(ctx context.Context, key string, start time.Time, limit, n int) (int, error)
	PruneShared(ctx context.Context, windowsBefore time.Time) (int64, error)
	CheckFilterKey(ctx context.Context, id string) error
	Ready(ctx context.Context) error
	PoolStats() memory.PoolStats
}

// Option adds to what Run checks.
type Option func(*options)

type options struct {
	alterPlan func(t *testing.T, st Backend, idHash string)
}

// WithAlterPlan gives Run a way to change the stored arguments of the
// first step of the plan whose id hashes to idHash behind the store's
// back (in SQL), so that it checks that such a plan is refused. Without
// it, that case is skipped.
func WithAlterPlan(alter func(t *testing.T, st Backend, idHash string)) Option {
	return func(o *options) { o.alterPlan = alter }
}

// wantToolCode fails unless err wraps sentinel in a *tools.Error of code.
func wantToolCode(t *testing.T, err error, code string, sentinel error) {
	t.Helper()
	var te *tools.Error
	if !errors.As(err, &te) || te.Code != code || !errors.Is(err, sentinel) {
		t.Fatalf("error = %v, want a %s error wrapping %v", err, code, sentinel)
	}
}

// waitPast sleeps until the wall clock, which both backends' stores read
// by default, is past t.
func waitPast(t time.Time) {
	time.Sleep(time.Until(t) + 2*time.Millisecond)
}

// instances returns a store and a second instance on its database, or
// the same store when the backend has no second instance.
func instances(t *testing.T, open Opener) (Backend, Backend) {
	a, second := open(t)
	if second == nil {
		return a, a
	}
	return a, second()
}

func planSteps() []memory.PlanStep {
	return []memory.PlanStep{
		{Tool: "workspace.write", Args: json.RawMessage(`{"path":"a","data":"1"}`)},
		{Tool: "workspace.write", Args: json.RawMessage(`{"path":"b","data":"2"}`), Provenance: json.RawMessage(`["crm"]`)},
		{Tool: "memory.remember", Args: json.RawMessage(`{"content":"x"}`)},
	}
}

func testPlans(t *testing.T, open Opener, o options) {
	a, b := instances(t, open)
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	id, saved, err := a.SavePlan(alice, memory.SavePlanInput{Session: "s1", ExecutionID: "e1", Steps: planSteps(), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(id, "plan_") || len(id) < 30 || saved.IDHash != memory.PlanIDHash(id) || saved.State != memory.PlanPlanned ||
		len(saved.Steps) != 3 || saved.Steps[2].Seq != 3 || saved.Steps[0].Status != memory.StepPending {
		t.Fatalf("saved %q %+v", id, saved)
	}
	t.Run("read back", func(t *testing.T) {
		p, err := b.GetPlan(alice, id)
		if err != nil {
			t.Fatal(err)
		}
		if p.State != memory.PlanPlanned || p.Session != "s1" || p.ExecutionID != "e1" || len(p.Steps) != 3 ||
			string(p.Steps[1].Provenance) != `["crm"]` || p.Steps[0].Provenance != nil || string(p.Steps[2].Args) != `{"content":"x"}` ||
			!p.ExpiresAt.Equal(saved.ExpiresAt.Truncate(time.Millisecond)) || p.CommittedAt != nil {
			t.Fatalf("read back %+v", p)
		}
	})
	t.Run("another principal's plan is not found", func(t *testing.T) {
		_, err := b.ClaimPlan(bob, id, "c0")
		wantToolCode(t, err, tools.CodeNotFound, memory.ErrNotFound)
		_, err = a.GetPlan(bob, id)
		wantToolCode(t, err, tools.CodeNotFound, memory.ErrNotFound)
	})
	t.Run("an unknown id is not found", func(t *testing.T) {
		_, err := a.ClaimPlan(alice, "plan_nope", "c0")
		wantToolCode(t, err, tools.CodeNotFound, memory.ErrNotFound)
	})
	t.Run("claim once", func(t *testing.T) {
		p, err := a.ClaimPlan(alice, id, "c1")
		if err != nil {
			t.Fatal(err)
		}
		if p.State != memory.PlanCommitting || p.Session != "s1" || len(p.Steps) != 3 || string(p.Steps[1].Provenance) != `["crm"]` {
			t.Fatalf("claimed %+v", p)
		}
		_, err = b.ClaimPlan(alice, id, "c2")
		wantToolCode(t, err, memory.CodePlanCommitted, memory.ErrPlanCommitted)
		// attack8 C1: a claimed plan left the principal's plan quota, so
		// its arguments leave the store with it, whether or not its
		// commit ever finishes (a client gone, a retry never sent); the
		// claim returned them to the commit.
		stored, err := b.GetPlan(alice, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range stored.Steps {
			if len(st.Args) != 0 || st.Provenance != nil || st.Tool == "" {
				t.Fatalf("step %d of a claimed plan keeps args %q, provenance %q (tool %q)", st.Seq, st.Args, st.Provenance, st.Tool)
			}
		}
	})
	t.Run("outcomes", func(t *testing.T) {
		if err := a.FinishPlanStep(alice, id, 1, memory.StepOK, ""); err != nil {
			t.Fatal(err)
		}
		if err := a.FinishPlanStep(alice, id, 2, memory.StepError, "tool_failed"); err != nil {
			t.Fatal(err)
		}
		if err := a.FinishPlan(alice, id, memory.PlanFailed); err != nil {
			t.Fatal(err)
		}
		p, err := b.GetPlan(alice, id)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, st := range p.Steps {
			got = append(got, st.Status+":"+st.ErrorCode)
		}
		if fmt.Sprint(got) != "[ok: error:tool_failed not_run:]" || p.State != memory.PlanFailed || p.CommittedAt == nil {
			t.Fatalf("state %s, committed at %v, steps %v; want failed, a time, [ok: error:tool_failed not_run:]", p.State, p.CommittedAt, got)
		}
		// attack8 C1: a finished plan's arguments are not kept.
		for _, st := range p.Steps {
			if len(st.Args) != 0 || st.Provenance != nil {
				t.Fatalf("step %d of a finished plan keeps args %q, provenance %q", st.Seq, st.Args, st.Provenance)
			}
		}
		_, err = a.ClaimPlan(alice, id, "c3")
		wantToolCode(t, err, memory.CodePlanCommitted, memory.ErrPlanCommitted)
	})
	t.Run("concurrent claims on two instances", func(t *testing.T) {
		id, _, err := a.SavePlan(alice, memory.SavePlanInput{Steps: planSteps(), TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		errs := make([]error, 8)
		var wg sync.WaitGroup
		for i := range errs {
			st := a
			if i%2 == 1 {
				st = b
			}
			wg.Go(func() { _, errs[i] = st.ClaimPlan(alice, id, fmt.Sprintf("c%d", i)) })
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
	})
	t.Run("expired", func(t *testing.T) {
		id, p, err := a.SavePlan(alice, memory.SavePlanInput{Steps: planSteps(), TTL: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		waitPast(p.ExpiresAt)
		_, err = b.ClaimPlan(alice, id, "c4")
		wantToolCode(t, err, memory.CodePlanExpired, memory.ErrPlanExpired)
		rep, err := a.Prune(t.Context())
		if err != nil || rep.Plans != 1 {
			t.Fatalf("pruned %d plans, %v; want the expired one (claimed plans stay as long as the audit)", rep.Plans, err)
		}
		_, err = a.GetPlan(alice, id)
		wantToolCode(t, err, tools.CodeNotFound, memory.ErrNotFound)
	})
	t.Run("altered", func(t *testing.T) {
		if o.alterPlan == nil {
			t.Skip("no WithAlterPlan for this backend")
		}
		id, p, err := a.SavePlan(alice, memory.SavePlanInput{Steps: planSteps(), TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		o.alterPlan(t, a, p.IDHash)
		_, err = b.ClaimPlan(alice, id, "c5")
		wantToolCode(t, err, memory.CodePlanAltered, memory.ErrPlanAltered)
	})
	t.Run("invalid", func(t *testing.T) {
		for _, in := range []memory.SavePlanInput{
			{TTL: time.Hour},
			{Steps: planSteps()},
			{Steps: []memory.PlanStep{{Tool: "t", Args: json.RawMessage(`{`)}}, TTL: time.Hour},
		} {
			_, _, err := a.SavePlan(alice, in)
			wantToolCode(t, err, tools.CodeInvalidArguments, memory.ErrInvalid)
		}
	})
}

func testCache(t *testing.T, open Opener) {
	a, b := instances(t, open)
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")
	set := func(st Backend, ctx context.Context, kind, key, value string, ttl time.Duration) time.Time {
		t.Helper()
		exp, err := st.CacheSet(ctx, memory.CacheSetInput{Kind: kind, Key: key, Value: []byte(value), TTL: ttl, MaxEntries: 2})
		if err != nil {
			t.Fatal(err)
		}
		return exp
	}
	get := func(st Backend, ctx context.Context, kind, key string) string {
		t.Helper()
		e, err := st.CacheGet(ctx, kind, key)
		if errors.Is(err, memory.ErrNotFound) {
			return "(none)"
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(e.Value)
	}
	exp := set(a, alice, memory.CacheUser, "k", `{"v":1}`, time.Minute)
	set(a, alice, memory.CacheMemo, "k", `"memo"`, time.Hour)
	for _, c := range []struct {
		name       string
		ctx        context.Context
		kind, want string
	}{
		{"own value, on the other instance", alice, memory.CacheUser, `{"v":1}`},
		{"kinds apart", alice, memory.CacheMemo, `"memo"`},
		{"principals apart", bob, memory.CacheUser, "(none)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := get(b, c.ctx, c.kind, "k"); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
	t.Run("expiry returned and stored", func(t *testing.T) {
		e, err := b.CacheGet(alice, memory.CacheUser, "k")
		if err != nil || e.ExpiresAt.Sub(exp).Abs() >= time.Millisecond || !e.CreatedAt.Before(e.ExpiresAt) {
			t.Fatalf("entry %+v %v; CacheSet said it expires at %v", e, err, exp)
		}
	})
	t.Run("max entries", func(t *testing.T) {
		set(a, alice, memory.CacheUser, "k2", `2`, time.Minute)
		set(b, alice, memory.CacheUser, "k", `3`, time.Minute) // a replacement is no new entry
		_, err := b.CacheSet(alice, memory.CacheSetInput{Kind: memory.CacheUser, Key: "k3", Value: []byte(`3`), TTL: time.Minute, MaxEntries: 2})
		wantToolCode(t, err, memory.CodeQuotaExceeded, memory.ErrQuota)
		if got := get(a, alice, memory.CacheUser, "k"); got != `3` {
			t.Fatalf("replaced entry reads %s", got)
		}
	})
	t.Run("max entries, set at once on two instances", func(t *testing.T) {
		carol := as(t.Context(), "carol")
		var won atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			st := a
			if i%2 == 1 {
				st = b
			}
			wg.Go(func() {
				_, err := st.CacheSet(carol, memory.CacheSetInput{Kind: memory.CacheUser, Key: fmt.Sprintf("k%d", i), Value: []byte(`1`), TTL: time.Minute, MaxEntries: 3})
				switch {
				case err == nil:
					won.Add(1)
				case !errors.Is(err, memory.ErrQuota):
					t.Errorf("set k%d: %v, want success or ErrQuota", i, err)
				}
			})
		}
		wg.Wait()
		if won.Load() != 3 {
			t.Fatalf("%d entries set, want the limit, 3", won.Load())
		}
	})
	t.Run("expired", func(t *testing.T) {
		exp := set(a, bob, memory.CacheUser, "short", `1`, time.Millisecond)
		waitPast(exp)
		if got := get(b, bob, memory.CacheUser, "short"); got != "(none)" {
			t.Fatalf("expired entry read: %s", got)
		}
		rep, err := b.Prune(t.Context())
		if err != nil || rep.Cache != 1 {
			t.Fatalf("swept %d entries, %v; want the expired one", rep.Cache, err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		set(a, alice, memory.CacheMemo, "d", `1`, time.Minute)
		if ok, err := b.CacheDelete(bob, memory.CacheMemo, "d"); err != nil || ok {
			t.Fatalf("bob deleted alice's entry: %v %v", ok, err)
		}
		if ok, err := b.CacheDelete(alice, memory.CacheMemo, "d"); err != nil || !ok {
			t.Fatalf("delete: %v %v", ok, err)
		}
		if got := get(a, alice, memory.CacheMemo, "d"); got != "(none)" {
			t.Fatalf("deleted entry read: %s", got)
		}
		if ok, err := a.CacheDelete(alice, memory.CacheMemo, "d"); err != nil || ok {
			t.Fatalf("deleted twice: %v %v", ok, err)
		}
		exp := set(a, alice, memory.CacheMemo, "dead", `1`, time.Millisecond)
		waitPast(exp)
		if ok, err := a.CacheDelete(alice, memory.CacheMemo, "dead"); err != nil || ok {
			t.Fatalf("deleting an expired entry reports it was there: %v %v", ok, err)
		}
	})
	// An entry keeps the sources of its value, as a memory or a
	// workspace file does: from the context (WithProvenance) or the
	// input, the input winning; a replacement keeps only its own.
	t.Run("provenance", func(t *testing.T) {
		dave := as(t.Context(), "dave")
		put := func(st Backend, ctx context.Context, in memory.CacheSetInput) error {
			in.TTL = time.Minute
			_, err := st.CacheSet(ctx, in)
			return err
		}
		prov := func(st Backend, kind string) string {
			t.Helper()
			e, err := st.CacheGet(dave, kind, "p")
			if err != nil {
				t.Fatal(err)
			}
			return string(e.Provenance)
		}
		crm := memory.WithProvenance(dave, json.RawMessage(`["crm.get_contact"]`))
		if err := put(a, crm, memory.CacheSetInput{Kind: memory.CacheUser, Key: "p", Value: []byte(`{"email":"x@example.com"}`)}); err != nil {
			t.Fatal(err)
		}
		if got := prov(b, memory.CacheUser); got != `["crm.get_contact"]` {
			t.Fatalf("provenance %q on the other instance, want the context's", got)
		}
		if err := put(a, crm, memory.CacheSetInput{Kind: memory.CacheMemo, Key: "p", Value: []byte(`1`),
			Provenance: json.RawMessage(` ["gh.get_issue", "crm.get_contact"] `)}); err != nil {
			t.Fatal(err)
		}
		if got := prov(b, memory.CacheMemo); got != `["gh.get_issue","crm.get_contact"]` {
			t.Fatalf("provenance %q, want the input's, compacted", got)
		}
		if err := put(b, dave, memory.CacheSetInput{Kind: memory.CacheUser, Key: "p", Value: []byte(`2`)}); err != nil {
			t.Fatal(err)
		}
		if got := prov(a, memory.CacheUser); got != "" {
			t.Fatalf("a replacement without provenance reads %q", got)
		}
		err := put(a, dave, memory.CacheSetInput{Kind: memory.CacheUser, Key: "p", Value: []byte(`1`), Provenance: json.RawMessage(`[`)})
		wantToolCode(t, err, tools.CodeInvalidArguments, memory.ErrInvalid)
	})
	t.Run("invalid", func(t *testing.T) {
		for _, in := range []memory.CacheSetInput{
			{Kind: memory.CacheUser, Key: "k", Value: []byte(`1`)},
			{Kind: memory.CacheUser, Value: []byte(`1`), TTL: time.Minute},
			{Key: "k", Value: []byte(`1`), TTL: time.Minute},
		} {
			_, err := a.CacheSet(alice, in)
			wantToolCode(t, err, tools.CodeInvalidArguments, memory.ErrInvalid)
		}
	})
}

func testVaultTokens(t *testing.T, open Opener) {
	a, b := instances(t, open)
	ctx := t.Context()
	now := time.Now()
	exp := now.Add(time.Hour)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.PutVaultTokens(ctx,
		memory.VaultToken{Principal: "alice", Session: "s1", Token: "⟦email:01⟧", Sealed: []byte("a1"), Expires: exp},
		memory.VaultToken{Principal: "alice", Session: "", Token: "⟦email:01⟧", Sealed: []byte("a0"), Expires: exp},
		memory.VaultToken{Principal: "bob", Session: "s1", Token: "⟦email:01⟧", Sealed: []byte("b1"), Expires: exp},
		memory.VaultToken{Principal: "alice", Session: "s1", Token: "⟦email:02⟧", Sealed: []byte("old"), Expires: now.Add(time.Minute)},
		memory.VaultToken{Principal: "alice", Session: "s1", Token: "⟦email:03⟧", Sealed: []byte("dead"), Expires: now.Add(-time.Minute)},
	))
	// Replaced on the other instance: new sealed value, later expiry.
	must(b.PutVaultTokens(ctx, memory.VaultToken{Principal: "alice", Session: "s1", Token: "⟦email:02⟧", Sealed: []byte("new"), Expires: exp}))
	for _, tt := range []struct {
		name                      string
		principal, session, token string
		want                      string // "" for not found
	}{
		{"own session", "alice", "s1", "⟦email:01⟧", "a1"},
		{"session-less", "alice", "", "⟦email:01⟧", "a0"},
		{"another principal's same session id", "bob", "s1", "⟦email:01⟧", "b1"},
		{"another session", "alice", "s2", "⟦email:01⟧", ""},
		{"replaced", "alice", "s1", "⟦email:02⟧", "new"},
		{"expired", "alice", "s1", "⟦email:03⟧", ""},
		{"unknown", "alice", "s1", "⟦email:99⟧", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for i, st := range []Backend{a, b} {
				got, err := st.GetVaultToken(ctx, tt.principal, tt.session, tt.token)
				if tt.want == "" {
					if !errors.Is(err, memory.ErrNotFound) {
						t.Fatalf("instance %d: got %q, %v; want ErrNotFound", i, got.Sealed, err)
					}
					continue
				}
				if err != nil || string(got.Sealed) != tt.want || got.Principal != tt.principal || got.Session != tt.session || got.Token != tt.token {
					t.Fatalf("instance %d: got %+v, %v; want %q", i, got, err, tt.want)
				}
			}
		})
	}
	t.Run("the replacement's expiry", func(t *testing.T) {
		got, err := a.GetVaultToken(ctx, "alice", "s1", "⟦email:02⟧")
		if err != nil || !got.Expires.Equal(exp.Truncate(time.Millisecond)) {
			t.Fatalf("expires %v, %v; want %v", got.Expires, err, exp.Truncate(time.Millisecond))
		}
	})
	t.Run("sources are added to, never replaced", func(t *testing.T) {
		// A value minted on one instance from crm, then again on the
		// other from no source, and from another: the token keeps every
		// source, on both instances (issue 19: it kept the last
		// writer's only, and a data-flow rule passed).
		tok := memory.VaultToken{Principal: "alice", Session: "s5", Token: "⟦email:07⟧", Sealed: []byte("s"), Expires: exp}
		put := func(st Backend, sources ...string) {
			t.Helper()
			tk := tok
			tk.Sources = sources
			must(st.PutVaultTokens(ctx, tk))
		}
		want := func(sources ...string) {
			t.Helper()
			for i, st := range []Backend{a, b} {
				got, err := st.GetVaultToken(ctx, tok.Principal, tok.Session, tok.Token)
				if err != nil || !slices.Equal(got.Sources, sources) {
					t.Fatalf("instance %d: sources %q, %v; want %q", i, got.Sources, err, sources)
				}
			}
		}
		put(a, "crm.get_contact")
		want("crm.get_contact")
		put(b)
		want("crm.get_contact")
		put(b, "http.fetch", "crm.get_contact", "http.fetch")
		want("crm.get_contact", "http.fetch")
		var many []string
		for i := range memory.MaxVaultSources + 8 {
			many = append(many, fmt.Sprintf("api.op_%02d", i))
		}
		put(a, many...)
		want(append([]string{"crm.get_contact", "http.fetch"}, many[:memory.MaxVaultSources-2]...)...)
		// A token stored with none has none.
		must(a.PutVaultTokens(ctx, memory.VaultToken{Principal: "alice", Session: "s5", Token: "⟦email:08⟧", Sealed: []byte("s"), Expires: exp}))
		if got, err := b.GetVaultToken(ctx, "alice", "s5", "⟦email:08⟧"); err != nil || len(got.Sources) != 0 {
			t.Fatalf("a token stored without sources: %q, %v", got.Sources, err)
		}
	})
	t.Run("delete a session", func(t *testing.T) {
		must(b.DeleteVaultTokens(ctx, "alice", "s1"))
		if _, err := a.GetVaultToken(ctx, "alice", "s1", "⟦email:02⟧"); !errors.Is(err, memory.ErrNotFound) {
			t.Errorf("after delete: %v, want ErrNotFound", err)
		}
		if _, err := a.GetVaultToken(ctx, "bob", "s1", "⟦email:01⟧"); err != nil {
			t.Errorf("bob's session went too: %v", err)
		}
		if _, err := a.GetVaultToken(ctx, "alice", "", "⟦email:01⟧"); err != nil {
			t.Errorf("alice's session-less tokens went too: %v", err)
		}
	})
	t.Run("an invalid token stores none", func(t *testing.T) {
		err := a.PutVaultTokens(ctx,
			memory.VaultToken{Principal: "alice", Session: "s3", Token: "⟦email:04⟧", Sealed: []byte("ok"), Expires: exp},
			memory.VaultToken{Principal: "alice", Session: "s3", Token: "⟦email:05⟧", Expires: exp})
		wantCode(t, err, memory.ErrInvalid)
		if _, err := a.GetVaultToken(ctx, "alice", "s3", "⟦email:04⟧"); !errors.Is(err, memory.ErrNotFound) {
			t.Errorf("the valid token of a refused batch: %v, want ErrNotFound", err)
		}
	})
	t.Run("prune", func(t *testing.T) {
		must(a.PutVaultTokens(ctx, memory.VaultToken{Principal: "alice", Session: "s4", Token: "⟦email:06⟧", Sealed: []byte("gone"), Expires: now.Add(-time.Second)}))
		old := time.UnixMilli(1_700_000_040_000)
		for _, start := range []time.Time{old, now} {
			if _, err := a.ReserveQuota(ctx, "executions/alice", start, 10, 1); err != nil {
				t.Fatal(err)
			}
		}
		n, err := b.PruneShared(ctx, now.Add(-time.Minute))
		if err != nil || n != 2 { // alice's expired token and the old window
			t.Fatalf("pruned %d, %v; want 2", n, err)
		}
		if got, err := a.ReserveQuota(ctx, "executions/alice", old, 1, 1); err != nil || got != 1 {
			t.Fatalf("the pruned window: reserved %d, %v; want it empty", got, err)
		}
		if got, err := a.ReserveQuota(ctx, "executions/alice", now, 1, 1); err != nil || got != 0 {
			t.Fatalf("the kept window: reserved %d, %v; want it spent", got, err)
		}
	})
}

// testReserveQuota reserves one window's quota from two instances, from
// many goroutines each: together they get exactly the limit, never more.
func testReserveQuota(t *testing.T, open Opener) {
	a, b := instances(t, open)
	start := time.UnixMilli(1_700_000_040_000)
	for _, tt := range []struct {
		name         string
		limit, batch int
	}{
		{"one at a time", 50, 1},
		{"batches that do not divide the limit", 50, 7},
		{"batch over the limit", 5, 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got atomic.Int64
			var wg sync.WaitGroup
			for i := range 8 {
				st := a
				if i%2 == 1 {
					st = b
				}
				wg.Go(func() {
					for range 20 {
						n, err := st.ReserveQuota(context.Background(), "executions/"+tt.name, start, tt.limit, tt.batch)
						if err != nil {
							t.Error(err)
							return
						}
						if n < 0 || n > tt.batch {
							t.Errorf("reserved %d of a batch of %d", n, tt.batch)
						}
						got.Add(int64(n))
					}
				})
			}
			wg.Wait()
			if got.Load() != int64(tt.limit) {
				t.Errorf("reserved %d in all, want %d", got.Load(), tt.limit)
			}
			if n, err := b.ReserveQuota(t.Context(), "executions/"+tt.name, start.Add(time.Minute), tt.limit, 1); n != 1 || err != nil {
				t.Errorf("next window: %d, %v; want 1", n, err)
			}
		})
	}
	for _, bad := range [][2]int{{10, 0}, {0, 1}} {
		if _, err := a.ReserveQuota(t.Context(), "k", start, bad[0], bad[1]); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("limit %d, n %d: %v, want ErrInvalid", bad[0], bad[1], err)
		}
	}
}

func testFilterKey(t *testing.T, open Opener) {
	a, b := instances(t, open)
	if err := a.CheckFilterKey(t.Context(), "0123abcd"); err != nil {
		t.Fatalf("first instance: %v", err)
	}
	if err := b.CheckFilterKey(t.Context(), "0123abcd"); err != nil {
		t.Errorf("same key: %v", err)
	}
	if err := b.CheckFilterKey(t.Context(), "ffff0000"); !errors.Is(err, memory.ErrKeyMismatch) {
		t.Errorf("another key: %v, want ErrKeyMismatch", err)
	}
}

func testReadyAndPool(t *testing.T, open Opener) {
	st, _ := open(t)
	if err := st.Ready(t.Context()); err != nil {
		t.Fatalf("ready: %v", err)
	}
	ps := st.PoolStats()
	if ps.MaxOpen < 1 || ps.Open < 1 || ps.InUse+ps.Idle > ps.Open || ps.Open > ps.MaxOpen || ps.WaitCount < 0 || ps.WaitDuration < 0 {
		t.Fatalf("pool stats %+v: want connections open, in use and idle within them, at most the maximum", ps)
	}
}

// testAuditModes: a run's toolset, mode and plan hash, and its calls'
// cached and planned marks, come back from the audit.
func testAuditModes(t *testing.T, open Opener) {
	st, _ := open(t)
	ctx := t.Context()
	h := memory.PlanIDHash("plan_x")
	for _, e := range []memory.Execution{
		{ID: "all", Principal: "alice", Status: "ok"},
		{ID: "plan", Principal: "bob", Status: "running", Mode: "plan", Toolset: "ts-0123456789ab", ToolsetDescription: "allow memory.*; read_only"},
		// Recorded again at its end: the plan's hash is set then; the
		// toolset and mode stay as the run started.
		{ID: "plan", Principal: "bob", Status: "ok", Mode: "commit", PlanHash: h, Toolset: "other"},
	} {
		if err := st.RecordExecution(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.RecordToolCalls(ctx,
		memory.ToolCall{ExecutionID: "plan", Tool: "gh.get", Status: "ok", Cached: true},
		memory.ToolCall{ExecutionID: "plan", Tool: "workspace.write", Status: "ok", Planned: true},
		memory.ToolCall{ExecutionID: "plan", Tool: "util.echo", Status: "ok"},
	); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, e memory.Execution) {
		t.Helper()
		if e.Toolset != "ts-0123456789ab" || e.ToolsetDescription != "allow memory.*; read_only" || e.Mode != "plan" || e.PlanHash != h || e.Status != "ok" {
			t.Fatalf("execution %+v", e)
		}
	}
	t.Run("get", func(t *testing.T) {
		e, calls, err := st.GetExecution(ctx, "plan")
		if err != nil {
			t.Fatal(err)
		}
		check(t, e)
		var marks []string
		for _, c := range calls {
			marks = append(marks, fmt.Sprintf("%s:%v:%v", c.Tool, c.Cached, c.Planned))
		}
		if want := "[gh.get:true:false workspace.write:false:true util.echo:false:false]"; fmt.Sprint(marks) != want {
			t.Fatalf("calls %v, want %s", marks, want)
		}
	})
	t.Run("list", func(t *testing.T) {
		list, err := st.ListExecutions(ctx, memory.ExecutionQuery{})
		if err != nil || len(list) != 2 {
			t.Fatalf("list: %+v %v", list, err)
		}
		for _, e := range list {
			if e.ID == "plan" {
				check(t, e)
			} else if e.Toolset != "" || e.ToolsetDescription != "" || e.Mode != "" || e.PlanHash != "" {
				t.Fatalf("a plain run with every tool: %+v", e)
			}
		}
		calls, err := st.ListToolCalls(ctx, memory.ToolCallQuery{Tool: "gh.get"})
		if err != nil || len(calls) != 1 || !calls[0].Cached || calls[0].Planned {
			t.Fatalf("listed calls %+v %v", calls, err)
		}
	})
}
