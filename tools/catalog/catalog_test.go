package catalog_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/catalog"
)

const testdata = "../../testdata/catalog"

func TestLoadTestdata(t *testing.T) {
	t.Parallel()
	c, err := catalog.Load(testdata)
	if err != nil {
		t.Fatal(err)
	}
	r := tools.NewRegistry()
	if err := c.Register(r); err != nil {
		t.Fatal(err)
	}
	if n := len(r.List()); n < 120 {
		t.Errorf("catalogue has %d tools, want at least 120", n)
	}
	if n := len(r.Categories()); n < 10 {
		t.Errorf("catalogue has %d categories, want at least 10", n)
	}
	for _, cat := range r.Categories() {
		if r.CategorySummary(cat) == "" {
			t.Errorf("category %s has no description", cat)
		}
	}
	for _, tl := range r.List() {
		if len(tl.Examples) == 0 {
			t.Errorf("%s: no examples", tl.Name)
		}
		if len(tl.OutputSchema) == 0 {
			t.Errorf("%s: no output schema", tl.Name)
		}
		if !strings.Contains(tl.Notes, catalog.FixtureNote) {
			t.Errorf("%s: notes do not say it is a fixture", tl.Name)
		}
		if len(tl.Summary) > 110 {
			t.Errorf("%s: summary is %d bytes, keep it under 110 for the index", tl.Name, len(tl.Summary))
		}
	}
}

// TestFixtureHandler checks the data-driven handler: every example's args
// give back that example's result through Registry.Call.
func TestFixtureHandler(t *testing.T) {
	t.Parallel()
	r := tools.NewRegistry()
	if err := catalog.LoadInto(r, testdata); err != nil {
		t.Fatal(err)
	}
	for _, tl := range r.List() {
		for i, ex := range tl.Examples {
			out, err := r.Call(t.Context(), tl.Name, ex.Args)
			if err != nil {
				t.Errorf("%s example %d: %v", tl.Name, i, err)
				continue
			}
			if !jsonEqual(t, out, ex.Result) {
				t.Errorf("%s example %d: got %s, want %s", tl.Name, i, out, ex.Result)
			}
		}
	}

	// Arguments that match no example get the first example's result.
	tl, _ := r.Get("github.get_file_contents")
	out, err := r.Call(t.Context(), tl.Name, json.RawMessage(`{"owner":"x","repo":"y","path":"README.md"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, out, tl.Examples[0].Result) {
		t.Errorf("unmatched call: got %s, want the first example's result", out)
	}
	// Key order and number spelling do not matter when matching.
	out, err = r.Call(t.Context(), tl.Name, json.RawMessage(`{"path":"","repo":"api","owner":"acme"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, out, tl.Examples[1].Result) {
		t.Errorf("reordered args: got %s, want the second example's result", out)
	}
}

func TestNoFixture(t *testing.T) {
	t.Parallel()
	c, err := catalog.Parse("x.json", []byte(`{"category":"x","description":"d","tools":[
		{"name":"t","summary":"s","description":"d","examples":[{"args":{}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r := tools.NewRegistry()
	if err := (&catalog.Catalog{Categories: []catalog.Category{c}}).Register(r); err != nil {
		t.Fatal(err)
	}
	_, err = r.Call(t.Context(), "x.t", nil)
	if code := tools.CodeOf(err); code != catalog.CodeNoFixture {
		t.Errorf("code = %q (%v), want %q", code, err, catalog.CodeNoFixture)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tool := func(extra string) string {
		return `{"category":"cat","description":"d","tools":[{"name":"t","summary":"s","description":"d"` + extra + `}]}`
	}
	tests := []struct {
		name     string
		data     string
		wantTool string
		wantMsg  string
	}{
		{name: "syntax", data: "{\n\"category\": \"cat\",\n  oops}", wantMsg: "line 3"},
		{name: "unknown field", data: tool(`,"input_schema":{}`), wantMsg: "input_schema"},
		{name: "bad category", data: `{"category":"Cat","description":"d","tools":[]}`, wantMsg: "category name"},
		{name: "no tools", data: `{"category":"cat","description":"d","tools":[]}`, wantMsg: "no tools"},
		{name: "multi-line description", data: `{"category":"cat","description":"a\nb","tools":[]}`, wantMsg: "one non-empty line"},
		{name: "bad tool name", data: `{"category":"cat","description":"d","tools":[{"name":"Bad","summary":"s","description":"d"}]}`, wantTool: "Bad", wantMsg: "name"},
		{name: "empty description", data: `{"category":"cat","description":"d","tools":[{"name":"t","summary":"s"}]}`, wantTool: "t", wantMsg: "empty description"},
		{name: "missing def", data: tool(`,"inputSchema":{"type":"object","properties":{"a":{"$ref":"#/$defs/Nope"}}}`), wantTool: "t", wantMsg: "#/$defs/Nope"},
		{name: "bad schema", data: tool(`,"inputSchema":{"type":"objekt"}`), wantTool: "t", wantMsg: "input schema"},
		{name: "example args invalid", data: tool(`,"inputSchema":{"type":"object","properties":{"n":{"type":"integer"}}},"examples":[{"args":{"n":"x"}}]`), wantTool: "t", wantMsg: "example 0: args"},
		{name: "example result invalid", data: tool(`,"outputSchema":{"type":"object","required":["ok"]},"examples":[{"args":{},"result":{}}]`), wantTool: "t", wantMsg: "example 0: result"},
		{name: "positional not a property", data: tool(`,"inputSchema":{"type":"object","properties":{"a":{}}},"positional":["b"]`), wantTool: "t", wantMsg: `positional parameter "b"`},
		{name: "duplicate tool", data: `{"category":"cat","description":"d","tools":[{"name":"t","summary":"s","description":"d"},{"name":"t","summary":"s","description":"d"}]}`, wantTool: "t", wantMsg: "defined twice"},
		{name: "trailing data", data: tool("") + "{}", wantMsg: "after the category"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := catalog.Parse("cat.json", []byte(tt.data))
			var ce *catalog.Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *catalog.Error", err)
			}
			if ce.File != "cat.json" || ce.Tool != tt.wantTool {
				t.Errorf("file, tool = %q, %q; want cat.json, %q", ce.File, ce.Tool, tt.wantTool)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not mention %q", err, tt.wantMsg)
			}
			if !strings.HasPrefix(err.Error(), "catalog cat.json: ") {
				t.Errorf("error %q does not start with the file", err)
			}
		})
	}
}

func TestLoadFSErrors(t *testing.T) {
	t.Parallel()
	good := `{"category":"a","description":"d","tools":[{"name":"t","summary":"s","description":"d","related":["b.u"]}]}`
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		wantMsg string
	}{
		{name: "related missing", fsys: fstest.MapFS{"a.json": {Data: []byte(good)}}, wantMsg: `catalog a.json: tool t: related tool "b.u"`},
		{name: "duplicate category", fsys: fstest.MapFS{
			"a.json": {Data: []byte(good)},
			"b.json": {Data: []byte(strings.Replace(good, `"related":["b.u"]`, `"related":[]`, 1))},
		}, wantMsg: `category "a" already defined in a.json`},
		{name: "empty dir", fsys: fstest.MapFS{"README": {Data: []byte("x")}}, wantMsg: "no .json files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := catalog.LoadFS(tt.fsys, ".")
			if err == nil || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %v, want it to contain %q", err, tt.wantMsg)
			}
		})
	}
}

// TestSharedDefs checks that shared definitions are copied into each schema
// that needs them, transitively, and that other keys keep their order.
func TestSharedDefs(t *testing.T) {
	t.Parallel()
	c, err := catalog.Parse("x.json", []byte(`{"category":"x","description":"d",
		"$defs":{"A":{"type":"object","properties":{"b":{"$ref":"#/$defs/B"}}},"B":{"type":"string"},"Unused":{"type":"null"}},
		"tools":[{"name":"t","summary":"s","description":"d",
			"inputSchema":{"type":"object","properties":{"z":{"$ref":"#/$defs/A"},"a":{"type":"integer"}},"$defs":{"B":{"type":"number"}}},
			"examples":[{"args":{"z":{"b":1}}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got := string(c.Tools[0].InputSchema)
	want := `{"type":"object","properties":{"z":{"$ref":"#/$defs/A"},"a":{"type":"integer"}},"$defs":{"A":{"type":"object","properties":{"b":{"$ref":"#/$defs/B"}}},"B":{"type":"number"}}}`
	if got != want {
		t.Errorf("input schema\n got %s\nwant %s", got, want)
	}
}

func jsonEqual(t testing.TB, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}
