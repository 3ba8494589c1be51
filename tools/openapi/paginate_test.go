package openapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/openapi"
)

// gate is a tools.Gate that calls the registry, as the server's gate does
// after its checks, and keeps the calls it was asked to make.
type gate struct {
	reg   *tools.Registry
	mu    sync.Mutex
	calls []string // "tool next-page-URL"
}

func (g *gate) ctx(ctx context.Context) context.Context {
	return tools.WithGate(ctx, func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		p, _ := tools.PageFrom(ctx, name)
		g.mu.Lock()
		g.calls = append(g.calls, strings.TrimSpace(name+" "+p.Next))
		g.mu.Unlock()
		return g.reg.Call(ctx, name, args)
	})
}

// paginate follows the paginate tool's continuations, as tools.paginate
// does in a program, and returns every item.
func paginate(ctx context.Context, reg *tools.Registry, tool, args string) (json.RawMessage, error) {
	var items []json.RawMessage
	req := json.RawMessage(args)
	for {
		out, err := reg.Call(ctx, tool, req)
		if err != nil {
			return nil, err
		}
		var page struct {
			Items []json.RawMessage `json:"items"`
			Next  string            `json:"next"`
		}
		if err := json.Unmarshal(out, &page); err != nil {
			return nil, err
		}
		items = append(items, page.Items...)
		if page.Next == "" {
			if items == nil {
				items = []json.RawMessage{}
			}
			return json.Marshal(items)
		}
		var m map[string]json.RawMessage
		json.Unmarshal(req, &m)
		delete(m, "max")
		m["next"], _ = json.Marshal(page.Next)
		req, _ = json.Marshal(m)
	}
}

// TestPaginateThroughTheGate: every page is a call of the operation
// through the gate, never the handler's own request; without a gate
// there is no page; a continuation cannot be forged or moved to another
// operation; and a pagination stops, with an error that says what to
// change, when its pages reach their bytes.
func TestPaginateThroughTheGate(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	_, reg, _ := openSource(t, a, openapi.Config{}, openapi.Options{})
	args := `{"tool":"issues_list_for_repo","args":{"owner":"octo","repo":"hello","state":"open"}}`

	t.Run("no gate", func(t *testing.T) {
		before := a.count()
		_, err := reg.Call(context.Background(), "gh.paginate", json.RawMessage(args))
		if tools.CodeOf(err) != tools.CodeNoGate || a.count() != before {
			t.Errorf("a page without a gate: %v, %d requests", err, a.count()-before)
		}
	})
	t.Run("each page through the gate", func(t *testing.T) {
		g := &gate{reg: reg}
		if _, err := paginate(g.ctx(context.Background()), reg, "gh.paginate", args); err != nil {
			t.Fatal(err)
		}
		if len(g.calls) != 3 || g.calls[0] != "gh.issues_list_for_repo" || !strings.HasPrefix(g.calls[1], "gh.issues_list_for_repo "+a.URL) {
			t.Errorf("the gate saw %q, want the operation three times, pages 2 and 3 at their links", g.calls)
		}
	})
	t.Run("forged continuation", func(t *testing.T) {
		g := &gate{reg: reg}
		ctx := g.ctx(context.Background())
		out, err := reg.Call(ctx, "gh.paginate", json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		var page struct{ Next string }
		json.Unmarshal(out, &page)
		for _, next := range []string{"https://evil.example/leak?v=secret", page.Next[:len(page.Next)-2] + "AA"} {
			_, err := reg.Call(ctx, "gh.paginate", json.RawMessage(`{"tool":"issues_list_for_repo","args":{"owner":"octo","repo":"hello"},"next":"`+next+`"}`))
			if tools.CodeOf(err) != tools.CodeInvalidArguments {
				t.Errorf("a forged continuation was taken: %v", err)
			}
		}
		_, err = reg.Call(ctx, "gh.paginate", json.RawMessage(`{"tool":"list_contacts","next":"`+page.Next+`"}`))
		if tools.CodeOf(err) != tools.CodeInvalidArguments {
			t.Errorf("a continuation moved to another operation was taken: %v", err)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		g := &gate{reg: reg}
		_, err := paginate(g.ctx(context.Background()), reg, "gh.paginate", `{"tool":"issues_list_for_repo","args":{"owner":"octo","repo":"hello"},"max_bytes":300}`)
		if tools.CodeOf(err) != openapi.CodePaginationLimit || !strings.Contains(err.Error(), "maxBytes") {
			t.Errorf("pages past max_bytes: %v", err)
		}
		if len(g.calls) > 2 {
			t.Errorf("the pagination went on after its bytes were spent: %q", g.calls)
		}
	})
}

// TestPaginateContinuationIsTheCallers: a continuation serves only the
// principal it was made for.
func TestPaginateContinuationIsTheCallers(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	_, reg, _ := openSource(t, a, openapi.Config{}, openapi.Options{})
	g := &gate{reg: reg}
	alice := tools.WithCaller(g.ctx(context.Background()), tools.Caller{Principal: "alice"})
	bob := tools.WithCaller(g.ctx(context.Background()), tools.Caller{Principal: "bob"})
	out, err := reg.Call(alice, "gh.paginate", json.RawMessage(`{"tool":"issues_list_for_repo","args":{"owner":"octo","repo":"hello"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var page struct{ Next string }
	json.Unmarshal(out, &page)
	next := json.RawMessage(`{"tool":"issues_list_for_repo","args":{"owner":"octo","repo":"hello"},"next":"` + page.Next + `"}`)
	if _, err := reg.Call(bob, "gh.paginate", next); tools.CodeOf(err) != tools.CodeInvalidArguments {
		t.Errorf("bob followed alice's continuation: %v", err)
	}
	if _, err := reg.Call(alice, "gh.paginate", next); err != nil {
		t.Errorf("alice's own continuation: %v", err)
	}
}

// TestPaginateHiddenIsUnknown (issue 19, attack27 T3): an operation the
// caller's toolset hides is answered as a name of nothing — not with its
// page's error, nor with whether it pages — and is not called.
func TestPaginateHiddenIsUnknown(t *testing.T) {
	t.Parallel()
	a := newTestAPI(t)
	_, reg, _ := openSource(t, a, openapi.Config{}, openapi.Options{})
	hidden := map[string]bool{"gh.issues_list_for_repo": true, "gh.issues_create": true}
	reg.SetToolsets(func(c tools.Caller) tools.Toolset {
		if c.Principal != "bob" {
			return tools.Toolset{}
		}
		return tools.Toolset{Key: "bob", Allow: func(t *tools.Tool) bool { return !hidden[t.Name] }}
	})
	g := &gate{reg: reg}
	bob := tools.WithCaller(g.ctx(context.Background()), tools.Caller{Principal: "bob"})
	answer := func(ctx context.Context, op string) string {
		_, err := reg.Call(ctx, "gh.paginate", json.RawMessage(`{"tool":"`+op+`","args":{"owner":"octo","repo":"hello"}}`))
		if err == nil {
			return "a page"
		}
		return tools.CodeOf(err) + ": " + strings.ReplaceAll(err.Error(), op, "NAME")
	}
	none := answer(bob, "no_such_operation")
	if !strings.HasPrefix(none, tools.CodeUnknownTool) {
		t.Fatalf("a name of nothing: %s", none)
	}
	before := a.count()
	for _, op := range []string{"issues_list_for_repo", "issues_create", "gh.issues_list_for_repo"} {
		if got := answer(bob, op); got != none {
			t.Errorf("bob paginating the hidden %s: %s; want what a name of nothing gets: %s", op, got, none)
		}
	}
	if a.count() != before || len(g.calls) != 0 {
		t.Errorf("hidden operations were called: %d requests, gate calls %q", a.count()-before, g.calls)
	}
	alice := tools.WithCaller(g.ctx(context.Background()), tools.Caller{Principal: "alice"})
	if got := answer(alice, "issues_list_for_repo"); got != "a page" {
		t.Errorf("alice, who sees it: %s", got)
	}
	if got := answer(alice, "issues_create"); !strings.HasPrefix(got, tools.CodeInvalidArguments) {
		t.Errorf("alice paginating a POST that does not page: %s", got)
	}
}
