package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
)

// TestLoad follows a source through its load: listed as loading before it
// has a tool, progress without a new version, calls answered with the
// state and when to retry, then its tools once it is done.
func TestLoad(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	load, err := r.BeginLoad("gh", "fetching the description")
	if err != nil {
		t.Fatal(err)
	}
	v := r.View(tools.Caller{})
	if !slices.Contains(v.Categories(), "gh") {
		t.Fatalf("categories %v: want gh listed while it loads", v.Categories())
	}
	st := v.CategoryStatus("gh")
	if !st.Loading || st.Unavailable || st.Load != load {
		t.Fatalf("status %+v: want loading", st)
	}
	version := r.Version()
	load.Progress(tools.LoadProgress{Stage: "compiling operations", Done: 50, Total: 100})
	if r.Version() != version {
		t.Errorf("Progress changed the version: %d → %d", version, r.Version())
	}
	ls := r.View(tools.Caller{}).CategoryStatus("gh").Load.State()
	if ls.Stage != "compiling operations" || ls.Done != 50 || ls.Total != 100 || ls.Left <= 0 {
		t.Errorf("state %+v: want the stage, the count and an estimate", ls)
	}
	if d := st.Describe(); !strings.Contains(d, "loading (compiling operations, 50 of 100; ready in about") {
		t.Errorf("Describe = %q", d)
	}

	_, err = r.Call(t.Context(), "gh.search_issues", nil)
	var te *tools.Error
	if !errors.As(err, &te) || te.Code != tools.CodeLoading ||
		!strings.Contains(te.Message, "gh is still loading") || !strings.Contains(te.Message, "Run the program again in about") {
		t.Fatalf("call while loading: %v", err)
	}

	waited := make(chan error, 1)
	go func() { waited <- r.WaitLoads(context.Background()) }()
	select {
	case err := <-waited:
		t.Fatalf("WaitLoads returned %v while gh loads", err)
	case <-time.After(20 * time.Millisecond):
	}
	tool := tools.Tool{Name: "gh.search_issues", Summary: "Search issues.", Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`[]`), nil
	}}
	if err := r.Register(tool); err != nil {
		t.Fatal(err)
	}
	load.Done()
	if err := <-waited; err != nil {
		t.Fatalf("WaitLoads: %v", err)
	}
	if st := r.View(tools.Caller{}).CategoryStatus("gh"); st != (tools.CategoryStatus{}) {
		t.Errorf("status after Done: %+v", st)
	}
	if _, err := r.Call(t.Context(), "gh.search_issues", nil); err != nil {
		t.Errorf("call once loaded: %v", err)
	}
	load.Fail("too late") // a load ends once
	if st := r.CategoryStatusOf("gh"); st != (tools.CategoryStatus{}) {
		t.Errorf("status after a second end: %+v", st)
	}
}

// TestLoadFails: a load that fails leaves the category unavailable with
// the reason, and a call says so.
func TestLoadFails(t *testing.T) {
	t.Parallel()
	r := newRegistry(t)
	load, err := r.BeginLoad("stripe", "fetching the description")
	if err != nil {
		t.Fatal(err)
	}
	load.Fail("GET https://example.com/openapi.json: 404 Not Found; check spec")
	st := r.View(tools.Caller{}).CategoryStatus("stripe")
	if !st.Unavailable || st.Loading || !strings.Contains(st.Reason, "404") {
		t.Fatalf("status %+v", st)
	}
	if err := r.WaitLoads(t.Context()); err != nil {
		t.Fatalf("WaitLoads with none in progress: %v", err)
	}
	_, err = r.Call(t.Context(), "stripe.list_charges", nil)
	var te *tools.Error
	if !errors.As(err, &te) || te.Code != tools.CodeUnavailable || !strings.Contains(te.Message, "stripe is unavailable: GET https://example.com/openapi.json: 404") {
		t.Fatalf("call of an unavailable source: %v", err)
	}
	// A misspelled tool of a category that exists is still a slip.
	if _, err := r.Call(t.Context(), "util.ecko", nil); !errors.As(err, &te) || te.Code != tools.CodeUnknownTool {
		t.Fatalf("misspelled util tool: %v", err)
	}
}

func TestLoadStateDescribe(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		st   tools.LoadState
		want string
	}{
		{"no estimate", tools.LoadState{Stage: "fetching", Elapsed: 3 * time.Second}, "fetching; loading for 3 s, no estimate yet"},
		{"counted", tools.LoadState{Stage: "compiling", Done: 10, Total: 40, Left: 12 * time.Second}, "compiling, 10 of 40; ready in about 12 s"},
		{"minutes", tools.LoadState{Left: 150 * time.Second}, "ready in about 3 min"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.st.Describe(""); got != tt.want {
				t.Errorf("Describe = %q, want %q", got, tt.want)
			}
		})
	}
}
