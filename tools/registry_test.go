package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
)

func newRegistry(t testing.TB) *tools.Registry {
	t.Helper()
	r := tools.NewRegistry()
	if err := builtin.Register(r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCallValidates(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	tests := []struct {
		name     string
		tool     string
		args     string
		wantCode string
		wantPath string // a Problem must name this path
		wantMsg  string // the message must contain this
	}{
		{name: "ok", tool: "util.echo", args: `{"text":"hi"}`},
		{name: "missing field", tool: "util.echo", args: `{}`, wantCode: tools.CodeInvalidArguments, wantMsg: "text"},
		{name: "wrong type", tool: "util.echo", args: `{"text":5}`, wantCode: tools.CodeInvalidArguments, wantPath: "/text", wantMsg: "arguments/text"},
		{name: "above maximum", tool: "util.sleep", args: `{"ms":999999}`, wantCode: tools.CodeInvalidArguments, wantPath: "/ms"},
		{name: "extra field", tool: "util.sleep", args: `{"ms":1,"extra":true}`, wantCode: tools.CodeInvalidArguments, wantMsg: "extra"},
		{name: "not json", tool: "util.echo", args: `{"text":`, wantCode: tools.CodeInvalidArguments, wantMsg: "not valid JSON"},
		{name: "not an object", tool: "util.echo", args: `[1]`, wantCode: tools.CodeInvalidArguments},
		{name: "unknown tool with suggestion", tool: "util.ecko", args: `{}`, wantCode: tools.CodeUnknownTool, wantMsg: `did you mean "util.echo"`},
		{name: "unknown tool far away", tool: "nothing.here_at_all", args: `{}`, wantCode: tools.CodeUnknownTool, wantMsg: `unknown tool "nothing.here_at_all"`},
		{name: "empty args mean {}", tool: "util.now", args: ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := r.Call(t.Context(), tt.tool, json.RawMessage(tt.args))
			if tt.wantCode == "" {
				if err != nil {
					t.Fatalf("Call: %v", err)
				}
				if !json.Valid(out) {
					t.Fatalf("result not JSON: %s", out)
				}
				return
			}
			var te *tools.Error
			if !errors.As(err, &te) {
				t.Fatalf("err = %v, want *tools.Error", err)
			}
			if te.Code != tt.wantCode {
				t.Errorf("code = %q, want %q (%v)", te.Code, tt.wantCode, err)
			}
			if te.Tool != tt.tool {
				t.Errorf("tool = %q, want %q", te.Tool, tt.tool)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("message %q does not contain %q", err, tt.wantMsg)
			}
			if tt.wantPath != "" {
				found := false
				for _, p := range te.Problems {
					found = found || p.Path == tt.wantPath
				}
				if !found {
					t.Errorf("problems %+v do not name %s", te.Problems, tt.wantPath)
				}
			}
		})
	}
}

func TestCallRecoversPanicsAndKeepsCodes(t *testing.T) {
	t.Parallel()
	r := tools.NewRegistry()
	err := r.Register(
		tools.Tool{Name: "x.boom", Summary: "panics", Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			panic("secret-value-should-not-show")
		}},
		tools.Tool{Name: "x.missing", Summary: "not found", Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, tools.Errorf(tools.CodeNotFound, "no such thing")
		}},
		tools.Tool{Name: "x.bad_json", Summary: "bad output", Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage("{nope"), nil
		}},
	)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"x.boom": tools.CodeToolPanic, "x.missing": tools.CodeNotFound, "x.bad_json": tools.CodeToolFailed} {
		_, err := r.Call(t.Context(), name, nil)
		if got := tools.CodeOf(err); got != want {
			t.Errorf("%s: code %q, want %q (%v)", name, got, want, err)
		}
		if strings.Contains(err.Error(), "secret-value") {
			t.Errorf("%s: panic value leaked into the message: %v", name, err)
		}
	}
}

func TestRegisterRejectsBadTools(t *testing.T) {
	t.Parallel()
	h := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	tests := map[string]tools.Tool{
		"no category":     {Name: "echo", Summary: "s", Handler: h},
		"upper case":      {Name: "Util.Echo", Summary: "s", Handler: h},
		"no handler":      {Name: "a.b", Summary: "s"},
		"no summary":      {Name: "a.b", Handler: h},
		"schema not JSON": {Name: "a.b", Summary: "s", Handler: h, InputSchema: json.RawMessage(`{"type":`)},
		"schema array":    {Name: "a.b", Summary: "s", Handler: h, InputSchema: json.RawMessage(`[]`)},
		"output not JSON": {Name: "a.b", Summary: "s", Handler: h, OutputSchema: json.RawMessage(`{`)},
		"bad related":     {Name: "a.b", Summary: "s", Handler: h, Related: []string{"nope"}},
		"multi-line sum":  {Name: "a.b", Summary: "one\ntwo", Handler: h},
		"alias is name":   {Name: "a.b", Summary: "s", Handler: h, Aliases: []string{"b"}},
		"empty alias":     {Name: "a.b", Summary: "s", Handler: h, Aliases: []string{""}},
		"alias twice":     {Name: "a.b", Summary: "s", Handler: h, Aliases: []string{"b-1", "b-1"}},
		"control alias":   {Name: "a.b", Summary: "s", Handler: h, Aliases: []string{"b\n"}},
		"group case":      {Name: "a.b", Summary: "s", Handler: h, Group: "Repos"},
		"group slash":     {Name: "a.b", Summary: "s", Handler: h, Group: "repos/"},
		"group depth":     {Name: "a.b", Summary: "s", Handler: h, Group: "a/b/c/d"},
	}
	for name, tool := range tests {
		t.Run(name, func(t *testing.T) {
			r := tools.NewRegistry()
			if err := r.Register(tool); err == nil {
				t.Fatal("Register accepted an invalid tool")
			}
			if len(r.List()) != 0 {
				t.Fatal("registry changed after a failed Register")
			}
		})
	}
}

func TestValidGroup(t *testing.T) {
	t.Parallel()
	for g, want := range map[string]bool{
		"": true, "issues": true, "repos/branches": true, "a/b/c": true,
		"a/b/c/d": false, "/a": false, "a//b": false, "code-scanning": false, "Repos": false, "a/": false,
		strings.Repeat("a", 129): false,
	} {
		if got := tools.ValidGroup(g); got != want {
			t.Errorf("ValidGroup(%q) = %v, want %v", g, got, want)
		}
	}
}

func TestRegistryChangesAndConcurrency(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	var mu sync.Mutex
	var changes []tools.Change
	cancel := r.Subscribe(func(c tools.Change) {
		mu.Lock()
		changes = append(changes, c)
		mu.Unlock()
	})
	defer cancel()

	v0 := r.Version()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "dyn.t" + string(rune('a'+i))
			err := r.Register(tools.Tool{Name: name, Summary: "dynamic", Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`1`), nil
			}})
			if err != nil {
				t.Error(err)
			}
			if _, err := r.Call(context.Background(), name, nil); err != nil {
				t.Error(err)
			}
			r.List()
			r.Unregister(name)
		}()
	}
	wg.Wait()
	if got := r.Version(); got != v0+40 {
		t.Errorf("version %d, want %d", got, v0+40)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(changes) != 40 {
		t.Errorf("%d change events, want 40", len(changes))
	}
	if got := r.ListCategory("dyn"); len(got) != 0 {
		t.Errorf("dyn tools left: %d", len(got))
	}
	if cats := r.Categories(); len(cats) != 1 || cats[0] != "util" {
		t.Errorf("categories %v, want [util]", cats)
	}
}

func TestSleepHonoursCancellation(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := r.Call(ctx, "util.sleep", json.RawMessage(`{"ms":5000}`))
	if tools.CodeOf(err) != tools.CodeCanceled {
		t.Fatalf("err %v, want canceled", err)
	}
}

// TestArgumentsHeldWhileChecked (attack18 K10): arguments a schema must
// decode to check are held, with the context's holder, for what they
// decode into before they are decoded, and the holder's refusal fails
// the call untouched; arguments checked by their shape alone hold
// nothing.
func TestArgumentsHeldWhileChecked(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	err := r.Register(tools.Tool{
		Name:        "util.sum",
		Summary:     "Add numbers.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"items":{"type":"array","items":{"type":"integer"}}},"required":["items"]}`),
		Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`0`), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var held []int64
	refuse := errors.New("too much to hold")
	ctx := tools.WithArgsHolder(t.Context(), func(_ context.Context, n int64) error {
		held = append(held, n)
		if n > 4<<20 {
			return refuse
		}
		return nil
	})
	args := `{"items":[` + strings.Repeat("0,", 9999) + `0]}`
	if _, err := r.Call(ctx, "util.sum", json.RawMessage(args)); err != nil {
		t.Fatalf("10,000 values: %v", err)
	}
	if want := tools.DecodedSize(int64(len(args)), 10002); len(held) != 1 || held[0] != want {
		t.Fatalf("held %v for arguments of 10,002 values, want [%d]", held, want)
	}
	big := `{"items":[` + strings.Repeat("0,", 99999) + `0]}`
	if _, err := r.Call(ctx, "util.sum", json.RawMessage(big)); !errors.Is(err, refuse) {
		t.Fatalf("arguments of 100,002 values past the holder: %v", err)
	}
	if err := r.View(tools.Caller{}).ValidateContext(ctx, "util.sum", json.RawMessage(big)); !errors.Is(err, refuse) {
		t.Fatalf("checked alone, past the holder: %v", err)
	}
	held = nil
	if _, err := r.Call(ctx, "util.echo", json.RawMessage(`{"text":"x","items":[`+strings.Repeat("0,", 99999)+`0]}`)); err != nil || len(held) != 0 {
		t.Fatalf("util.echo, checked by its shape: %v, held %v", err, held)
	}
}
