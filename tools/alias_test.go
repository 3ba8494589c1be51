package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/codecell/codecell/tools"
)

// TestAliases calls tools by the other names they answer to: an upstream's
// original name beside the registered one.
func TestAliases(t *testing.T) {
	t.Parallel()
	r := tools.NewRegistry()
	sum := answer("everything.get_sum", `"sum"`)
	sum.Aliases = []string{"get-sum"}
	entities := answer("kg.create_entities", `"entities"`)
	entities.Aliases = []string{"createEntities"}
	// Two tools claim "x": the one whose name sorts first keeps it, and a
	// tool's own name wins over another's alias.
	first := answer("kg.a_first", `"first"`)
	first.Aliases = []string{"x", "create_entities"}
	second := answer("kg.b_second", `"second"`)
	second.Aliases = []string{"x"}
	if err := r.Register(sum, entities, first, second); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, want string }{
		{"everything.get_sum", `"sum"`},
		{"everything.get-sum", `"sum"`},
		{"kg.createEntities", `"entities"`},
		{"kg.create_entities", `"entities"`},
		{"kg.x", `"first"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := r.Call(t.Context(), tt.name, json.RawMessage(`{}`))
			if err != nil || string(out) != tt.want {
				t.Fatalf("Call(%s) = %s, %v; want %s", tt.name, out, err, tt.want)
			}
			if err := r.Validate(tt.name, json.RawMessage(`{}`)); err != nil {
				t.Errorf("Validate(%s): %v", tt.name, err)
			}
			if _, ok := r.View(tools.Caller{}).Get(tt.name); !ok {
				t.Errorf("View.Get(%s) found nothing", tt.name)
			}
		})
	}
	// An alias belongs to its category.
	if _, err := r.Call(t.Context(), "kg.get-sum", nil); tools.CodeOf(err) != tools.CodeUnknownTool {
		t.Errorf("an alias of another category resolved: %v", err)
	}
	// Listings show each tool once, under its own name.
	if got := names(r.View(tools.Caller{}).List()); !slices.Equal(got, []string{"everything.get_sum", "kg.a_first", "kg.b_second", "kg.create_entities"}) {
		t.Errorf("List = %v", got)
	}
	// An alias hidden by a toolset is hidden too.
	r.SetToolsets(func(tools.Caller) tools.Toolset {
		return tools.Toolset{Key: "no-sum", Allow: func(t *tools.Tool) bool { return t.Category() != "everything" }}
	})
	if _, err := r.Call(t.Context(), "everything.get-sum", nil); tools.CodeOf(err) != tools.CodeUnknownTool {
		t.Errorf("an alias outside the toolset resolved: %v", err)
	}
}

// TestCategoryStatus lists an unavailable category even without tools,
// with its reason, and forgets it once cleared.
func TestCategoryStatus(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	var changes int
	var mu sync.Mutex
	defer r.Subscribe(func(tools.Change) { mu.Lock(); changes++; mu.Unlock() })()
	down := tools.CategoryStatus{Unavailable: true, Reason: "command not found: npx"}
	if err := r.SetCategoryStatus("fs", down); err != nil {
		t.Fatal(err)
	}
	if err := r.SetCategoryStatus("fs", down); err != nil { // no change
		t.Fatal(err)
	}
	v := r.View(tools.Caller{})
	if !slices.Contains(v.Categories(), "fs") || v.CategoryStatus("fs") != down {
		t.Fatalf("categories %v, status %+v", v.Categories(), v.CategoryStatus("fs"))
	}
	if !slices.IsSorted(v.Categories()) {
		t.Errorf("categories not sorted: %v", v.Categories())
	}
	if v.CategoryStatus("util") != (tools.CategoryStatus{}) {
		t.Errorf("util has a status: %+v", v.CategoryStatus("util"))
	}
	// A toolset chooses among tools: an empty unavailable category is not
	// in a restricted view.
	r.SetToolsets(func(c tools.Caller) tools.Toolset {
		if c.Principal == "restricted" {
			return tools.Toolset{Key: "util", Allow: func(t *tools.Tool) bool { return t.Category() == "util" }}
		}
		return tools.Toolset{}
	})
	if slices.Contains(r.View(tools.Caller{Principal: "restricted"}).Categories(), "fs") {
		t.Error("a restricted view lists an empty unavailable category")
	}
	if err := r.SetCategoryStatus("fs", tools.CategoryStatus{}); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(r.View(tools.Caller{}).Categories(), "fs") {
		t.Error("a cleared category without tools is still listed")
	}
	if err := r.SetCategoryStatus("Not Valid", down); err == nil {
		t.Error("an invalid category name was accepted")
	}
	mu.Lock()
	defer mu.Unlock()
	if changes != 3 { // down, toolsets, cleared
		t.Errorf("%d changes, want 3", changes)
	}
}

// TestReporter passes progress and artifacts from a handler to the
// caller that asked for them, and nowhere when none did.
func TestReporter(t *testing.T) {
	t.Parallel()
	r := tools.NewRegistry()
	if err := r.Register(tools.Tool{Name: "a.b", Summary: "Reports.", Handler: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		tools.ReportProgress(ctx, "half", 0.5)
		tools.ReportArtifact(ctx, tools.Artifact{Tool: "a.b", Type: "image", URI: "codecell://results/x", Bytes: 3})
		return json.RawMessage(`1`), nil
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Call(t.Context(), "a.b", nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	ctx := tools.WithReporter(t.Context(), tools.Reporter{
		Progress: func(m string, f float64) { got = append(got, m) },
		Artifact: func(a tools.Artifact) { got = append(got, a.URI) },
	})
	if _, err := r.Call(ctx, "a.b", nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"half", "codecell://results/x"}) {
		t.Errorf("reported %v", got)
	}
	var te *tools.Error
	if _, err := r.Call(ctx, "a.c", nil); !errors.As(err, &te) {
		t.Errorf("unknown tool: %v", err)
	}
}
