package catalog_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/catalog"
)

// readmeProgram returns the first JavaScript block of the README: the
// program it opens with.
func readmeProgram(tb testing.TB) string {
	tb.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		tb.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```js\n")
	if !ok {
		tb.Fatal("README.md has no ```js block")
	}
	code, _, ok := strings.Cut(rest, "```")
	if !ok {
		tb.Fatal("README.md's first ```js block does not end")
	}
	return code
}

// TestREADMEExample runs the README's first program, exactly as written,
// in the sandbox against the demo catalogue, and checks that it returns
// what the README says it does: the Acme company and the titles of the hot
// issues (more than five comments).
func TestREADMEExample(t *testing.T) {
	t.Parallel()
	code := readmeProgram(t)
	for _, want := range []string{"github.search_issues(", "crm.search_companies(", "Promise.all"} {
		if !strings.Contains(code, want) {
			t.Fatalf("the README's first program no longer calls %s; update this test:\n%s", want, code)
		}
	}
	reg := tools.NewRegistry()
	if err := catalog.LoadInto(reg, testdata); err != nil {
		t.Fatal(err)
	}
	fns := make([]executor.Function, 0, len(reg.List()))
	for _, tl := range reg.List() {
		fns = append(fns, executor.Function{Name: tl.Name, Positional: tl.Positional})
	}
	ex, err := executor.New(executor.Config{PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()

	res := ex.Run(t.Context(), executor.Request{Code: code, Dispatcher: registryDispatcher{reg}, Functions: executor.NewLayout(fns)})
	if res.Error != nil {
		t.Fatalf("the README's program failed: %s: %s", res.Error.Kind, res.Error.Message)
	}
	var got struct {
		Company string   `json:"company"`
		Hot     []string `json:"hot"`
	}
	if err := json.Unmarshal(res.Value, &got); err != nil {
		t.Fatalf("result %s: %v", res.Value, err)
	}
	t.Logf("the README's program returns %s", res.Value)
	if !strings.Contains(got.Company, "Acme") {
		t.Errorf("company %q, want an Acme company", got.Company)
	}
	if len(got.Hot) == 0 {
		t.Error("no hot issues")
	}
	if len(res.Calls) != 2 {
		t.Errorf("%d tool calls, want 2: %+v", len(res.Calls), res.Calls)
	}
}

// registryDispatcher runs a program's calls on the registry.
type registryDispatcher struct{ reg *tools.Registry }

func (d registryDispatcher) Call(ctx context.Context, c executor.Call) (json.RawMessage, error) {
	return d.reg.Call(ctx, c.Name, c.Args)
}
