package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/codecell/codecell/tools"
)

// answer is a tool that returns a fixed JSON value.
func answer(name, result string) tools.Tool {
	return tools.Tool{Name: name, Summary: "Answer " + result + ".", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: tools.Annotations{ReadOnly: strings.HasPrefix(name, "util.")},
		Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(result), nil }}
}

func names(ts []*tools.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

func as(ctx context.Context, principal string) context.Context {
	return tools.WithCaller(ctx, tools.Caller{Principal: principal})
}

func TestScopedTools(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	if err := r.RegisterScoped("alice", answer("skills.report", `"alice's report"`), answer("util.echo", `"alice's echo"`)); err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterScoped("bob", answer("skills.digest", `"bob's digest"`)); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		principal string
		want      []string // the view's tools outside util, plus util.echo's answer
		echo      string
	}{
		{principal: "alice", want: []string{"skills.report"}, echo: `"alice's echo"`},
		{principal: "bob", want: []string{"skills.digest"}, echo: `{"text":"x"}`},
		{principal: "carol", want: nil, echo: `{"text":"x"}`},
		{principal: "", want: nil, echo: `{"text":"x"}`},
	}
	for _, tt := range tests {
		t.Run("principal "+tt.principal, func(t *testing.T) {
			v := r.View(tools.Caller{Principal: tt.principal})
			var got []string
			for _, n := range names(v.List()) {
				if !strings.HasPrefix(n, "util.") {
					got = append(got, n)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("view lists %v, want %v", got, tt.want)
			}
			if cats := v.Categories(); slices.Contains(cats, "skills") != (len(tt.want) > 0) {
				t.Errorf("categories %v", cats)
			}
			out, err := r.Call(as(t.Context(), tt.principal), "util.echo", json.RawMessage(`{"text":"x"}`))
			if err != nil || string(out) != tt.echo {
				t.Errorf("util.echo = %s, %v; want %s (a scope's tool shadows the global one for that scope only)", out, err, tt.echo)
			}
			for _, other := range []string{"skills.report", "skills.digest"} {
				_, err := r.Call(as(t.Context(), tt.principal), other, nil)
				visible := slices.Contains(tt.want, other)
				if visible != (err == nil) {
					t.Errorf("call %s: err %v, visible %v", other, err, visible)
				}
				if !visible && tools.CodeOf(err) != tools.CodeUnknownTool {
					t.Errorf("call %s: code %s, want unknown_tool", other, tools.CodeOf(err))
				}
			}
		})
	}
	if got := names(r.List()); slices.Contains(got, "skills.report") {
		t.Errorf("the global list holds a scoped tool: %v", got)
	}
	if got := names(r.ListScope("alice")); !slices.Equal(got, []string{"skills.report", "util.echo"}) {
		t.Errorf("ListScope(alice) = %v", got)
	}
	if got := r.Scopes(); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Errorf("Scopes() = %v", got)
	}
}

// A tool another caller has is not hinted at: the error is the one for a
// name nobody has.
func TestHiddenToolsAreNotSuggested(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	if err := r.RegisterScoped("alice", answer("skills.quarterly_report", `1`)); err != nil {
		t.Fatal(err)
	}
	r.SetToolsets(func(c tools.Caller) tools.Toolset {
		if c.Principal != "reader" {
			return tools.Toolset{}
		}
		return tools.Toolset{Key: "read-only", Allow: func(t *tools.Tool) bool { return t.Annotations.ReadOnly }}
	})
	if err := r.Register(answer("admin.drop_everything", `1`)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		principal, call, wantSuggest, notMention string
	}{
		{principal: "alice", call: "skills.quarterly_reprot", wantSuggest: "skills.quarterly_report"},
		{principal: "bob", call: "skills.quarterly_reprot", notMention: "quarterly_report"},
		{principal: "bob", call: "skills.quarterly_report", notMention: "did you mean"},
		{principal: "bob", call: "admin.drop_everythin", wantSuggest: "admin.drop_everything"},
		{principal: "reader", call: "admin.drop_everythin", notMention: "drop_everything\"?"},
		{principal: "reader", call: "admin.drop_everything", notMention: "did you mean"},
	}
	for _, tt := range tests {
		t.Run(tt.principal+" "+tt.call, func(t *testing.T) {
			_, err := r.Call(as(t.Context(), tt.principal), tt.call, nil)
			if tools.CodeOf(err) != tools.CodeUnknownTool {
				t.Fatalf("err %v, want unknown_tool", err)
			}
			want := fmt.Sprintf("unknown tool %q", tt.call)
			if tt.wantSuggest != "" {
				want += fmt.Sprintf("; did you mean %q?", tt.wantSuggest)
			}
			if tt.wantSuggest != "" && err.Error() != tt.call+": "+want {
				t.Errorf("message %q, want %q", err, want)
			}
			if tt.notMention != "" && strings.Contains(err.Error(), tt.notMention) {
				t.Errorf("message %q mentions %q, which the caller cannot see", err, tt.notMention)
			}
			v := r.View(tools.Caller{Principal: tt.principal})
			if _, ok := v.Get(tt.call); ok {
				t.Errorf("the view holds %s", tt.call)
			}
			if err := v.Validate(tt.call, nil); tools.CodeOf(err) != tools.CodeUnknownTool {
				t.Errorf("View.Validate: %v", err)
			}
		})
	}
	reader := r.View(tools.Caller{Principal: "reader"})
	for _, tl := range reader.List() {
		if !tl.Annotations.ReadOnly {
			t.Errorf("the read-only view lists %s", tl.Name)
		}
	}
	if reader.Len() == 0 {
		t.Error("the read-only view is empty")
	}
}

func TestViewsAreSharedAndCachedUntilTheyChange(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	if err := r.RegisterScoped("alice", answer("skills.a", `1`)); err != nil {
		t.Fatal(err)
	}
	global := r.View(tools.Caller{})
	if !global.Shared() || global.Scoped() {
		t.Error("the zero caller's view is not the shared one")
	}
	if r.View(tools.Caller{Principal: "bob", Session: "s1"}) != global {
		t.Error("a caller without tools of its own does not share the global view")
	}
	alice := r.View(tools.Caller{Principal: "alice"})
	if alice == global || !alice.Scoped() {
		t.Fatal("alice's view is the global one")
	}
	if r.View(tools.Caller{Principal: "alice", Session: "other"}) != alice {
		t.Error("alice's view was built twice")
	}

	builds := 0
	key := new(int)
	memo := func(v *tools.View) int {
		return v.Memo(key, func(v *tools.View) any { builds++; return v.Len() }).(int)
	}
	n := memo(alice)
	memo(alice)
	if builds != 1 || n != alice.Len() {
		t.Fatalf("Memo built %d times (value %d, want %d)", builds, n, alice.Len())
	}

	// A change in another scope leaves alice's and the global view as they are.
	if err := r.RegisterScoped("bob", answer("skills.b", `2`)); err != nil {
		t.Fatal(err)
	}
	if r.View(tools.Caller{Principal: "alice"}) != alice || r.View(tools.Caller{}) != global {
		t.Error("a change in bob's scope replaced another view")
	}
	// A change in alice's scope replaces her view only.
	if err := r.RegisterScoped("alice", answer("skills.c", `3`)); err != nil {
		t.Fatal(err)
	}
	alice2 := r.View(tools.Caller{Principal: "alice"})
	if alice2 == alice || alice2.Version() <= alice.Version() || r.View(tools.Caller{}) != global {
		t.Error("a change in alice's scope did not give her a new view, or changed the global one")
	}
	if memo(alice2); builds != 2 {
		t.Errorf("Memo on the new view: %d builds, want 2", builds)
	}
	// A global change replaces every view.
	if err := r.Register(answer("util.extra", `4`)); err != nil {
		t.Fatal(err)
	}
	if r.View(tools.Caller{}) == global || r.View(tools.Caller{Principal: "alice"}) == alice2 {
		t.Error("a global change kept an old view")
	}
	if _, ok := r.View(tools.Caller{Principal: "alice"}).Get("util.extra"); !ok {
		t.Error("alice does not see a new global tool")
	}
	// A scope that is emptied shares the global view again.
	if got := r.UnregisterScoped("alice", "skills.a", "skills.c", "skills.none"); got != 2 {
		t.Errorf("UnregisterScoped removed %d, want 2", got)
	}
	if r.View(tools.Caller{Principal: "alice"}) != r.View(tools.Caller{}) {
		t.Error("alice, without tools, does not share the global view")
	}
}

func TestChangesCarryTheirScope(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	var got []tools.Change
	defer r.Subscribe(func(c tools.Change) { got = append(got, c) })()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.RegisterScoped("alice", answer("skills.a", `1`)))
	must(r.RegisterScoped("alice", answer("skills.a", `2`)))
	r.UnregisterScoped("alice", "skills.a")
	r.UnregisterScoped("alice", "skills.a") // nothing to remove: no change
	must(r.Register(answer("x.y", `1`)))
	r.SetToolsets(nil)
	want := []tools.Change{
		{Scope: "alice", Added: []string{"skills.a"}},
		{Scope: "alice", Added: []string{"skills.a"}, Removed: []string{"skills.a"}},
		{Scope: "alice", Removed: []string{"skills.a"}},
		{Added: []string{"x.y"}},
		{},
	}
	if len(got) != len(want) {
		t.Fatalf("%d changes, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g := got[i]
		if g.Scope != want[i].Scope || !slices.Equal(g.Added, want[i].Added) || !slices.Equal(g.Removed, want[i].Removed) {
			t.Errorf("change %d = %+v, want %+v", i, g, want[i])
		}
		if i > 0 && g.Version <= got[i-1].Version {
			t.Errorf("change %d: version %d after %d", i, g.Version, got[i-1].Version)
		}
	}
}

func TestToolsetsShareViewsByKey(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	readOnly := func(t *tools.Tool) bool { return t.Annotations.ReadOnly }
	r.SetToolsets(func(c tools.Caller) tools.Toolset {
		if strings.HasPrefix(c.Principal, "ro-") {
			return tools.Toolset{Key: "ro", Allow: readOnly}
		}
		return tools.Toolset{}
	})
	if err := r.Register(answer("admin.wipe", `1`)); err != nil {
		t.Fatal(err)
	}
	a, b := r.View(tools.Caller{Principal: "ro-a"}), r.View(tools.Caller{Principal: "ro-b"})
	if a != b || a.Shared() {
		t.Error("callers with the same toolset key do not share a view, or share the global one")
	}
	if _, ok := a.Get("admin.wipe"); ok {
		t.Error("a read-only view holds admin.wipe")
	}
	if _, err := r.Call(as(t.Context(), "ro-a"), "util.now", nil); err != nil {
		t.Errorf("a read-only caller cannot call util.now: %v", err)
	}
	if _, err := r.Call(as(t.Context(), "ro-a"), "admin.wipe", nil); tools.CodeOf(err) != tools.CodeUnknownTool {
		t.Errorf("a read-only caller called admin.wipe: %v", err)
	}
	if _, err := r.View(tools.Caller{Principal: "ro-a"}).Call(t.Context(), "admin.wipe", nil); tools.CodeOf(err) != tools.CodeUnknownTool {
		t.Errorf("View.Call ran a tool outside the view: %v", err)
	}
	if _, err := r.Call(as(t.Context(), "admin"), "admin.wipe", nil); err != nil {
		t.Errorf("admin cannot call admin.wipe: %v", err)
	}
}

func TestViewsUnderConcurrentChanges(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	var wg sync.WaitGroup
	for i := range 8 {
		principal := fmt.Sprintf("p%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := as(context.Background(), principal)
			for j := range 50 {
				name := fmt.Sprintf("skills.s%d", j%5)
				if err := r.RegisterScoped(principal, answer(name, `1`)); err != nil {
					t.Error(err)
					return
				}
				v := r.View(tools.Caller{Principal: principal})
				if _, ok := v.Get(name); !ok {
					t.Errorf("%s: a view taken after registering %s lacks it", principal, name)
					return
				}
				if _, err := r.Call(ctx, name, nil); err != nil {
					t.Error(err)
					return
				}
				v.Memo(principal, func(v *tools.View) any { return len(v.List()) })
				if j%7 == 0 {
					r.UnregisterScoped(principal, name)
				}
				if j%10 == 0 {
					_ = r.Register(answer(fmt.Sprintf("util.g%d", i), `1`))
				}
			}
		}()
	}
	wg.Wait()
	for i := range 8 {
		v := r.View(tools.Caller{Principal: fmt.Sprintf("p%d", i)})
		if got, want := names(v.List()), names(append(r.List(), r.ListScope(fmt.Sprintf("p%d", i))...)); len(got) != len(want) {
			t.Errorf("p%d: view has %d tools, registry %d", i, len(got), len(want))
		}
	}
}
