package vfs_test

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/vfs"
)

// TestSourceAvailabilityAndAliases renders what a tool source such as an
// upstream MCP server adds: a category whose source is unavailable (with
// tools, or none), a title, and aliases — the server's original names.
func TestSourceAvailabilityAndAliases(t *testing.T) {
	t.Parallel()
	r := tools.NewRegistry()
	sum := tools.Tool{Name: "everything.get_sum", Title: "Get Sum Tool", Summary: "Returns the sum of two numbers.",
		Aliases:     []string{"get-sum"},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
		Handler:     nopHandler}
	entities := tools.Tool{Name: "kg.create_entities", Summary: "Creates entities.", Aliases: []string{"createEntities"}, Handler: nopHandler}
	if err := r.Register(sum, entities); err != nil {
		t.Fatal(err)
	}
	reason := "exited with status 1; its last stderr: Error: Cannot find module 'x'"
	if err := r.SetCategoryStatus("kg", tools.CategoryStatus{Unavailable: true, Reason: reason}); err != nil {
		t.Fatal(err)
	}
	if err := r.SetCategoryStatus("fs", tools.CategoryStatus{Unavailable: true, Reason: "command not found: npx"}); err != nil {
		t.Fatal(err)
	}
	f := vfs.New(r)
	if err := fstest.TestFS(f, "manifest.json", "fs/index.json", "kg/index.json", "everything/get_sum.d.ts", "kg/create_entities.md"); err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		t.Helper()
		b, err := f.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tt := range []struct{ path, want string }{
		{"manifest.json", `"fs":"0 tools, unavailable (command not found: npx)"`},
		{"manifest.json", `"kg":"1 tool, unavailable (exited with status 1; its last stderr: Error: Cannot find module 'x')"`},
		{"manifest.json", `"everything":"1 tool"`},
		{"fs/index.json", `"status":"unavailable","reason":"command not found: npx","tools":{}`},
		{"kg/index.json", `"status":"unavailable"`},
		{"everything/get_sum.d.ts", `Also everything["get-sum"](...).`},
		{"everything/get_sum.md", "- Title: Get Sum Tool\n"},
		{"everything/get_sum.md", "- Call: `await everything.get_sum(args)` or `await everything[\"get-sum\"](args)`"},
		{"kg/create_entities.d.ts", "function createEntities(args?: CreateEntitiesArgs): Promise<unknown>;"},
		{"kg/create_entities.md", "- Availability: unavailable (" + reason + ")"},
		{"kg/create_entities.md", "or `await kg.createEntities(args)`"},
	} {
		if got := read(tt.path); !strings.Contains(got, tt.want) {
			t.Errorf("%s lacks %q:\n%s", tt.path, tt.want, got)
		}
	}
	if strings.Contains(read("everything/index.json"), "unavailable") {
		t.Error("an available category is marked unavailable")
	}
	checkTS(t, "create_entities.d.ts", read("kg/create_entities.d.ts"))
	checkTS(t, "get_sum.d.ts", read("everything/get_sum.d.ts"))
	// A long reason keeps the manifest within its budget.
	long := strings.Repeat("a very long line of stderr ", 100)
	if err := r.SetCategoryStatus("fs", tools.CategoryStatus{Unavailable: true, Reason: long}); err != nil {
		t.Fatal(err)
	}
	if m := read("manifest.json"); len(m) > vfs.ManifestBudget || !strings.Contains(m, `"fs":"0 tools, unavailable (a very long`) {
		t.Errorf("manifest (%d bytes): %s", len(m), m)
	}
}

// TestInferredOutput renders a tool whose result shape was inferred from
// observed results: a type marked as inferred at levels 2 and 3 and in
// search hits, never in what direct mode would advertise; a declared
// output schema wins over an inferred one.
func TestInferredOutput(t *testing.T) {
	t.Parallel()
	inferred := &tools.InferredSchema{Observed: 3, Schema: json.RawMessage(
		`{"type":"array","items":{"type":["object","string"],"properties":{"name":{"type":"string"},"uri":{"type":"string","format":"uri"}},"required":["uri"]}}`)}
	links := tools.Tool{Name: "everything.get_resource_links", Summary: "Returns resource links.", Handler: nopHandler}
	declared := tools.Tool{Name: "everything.get_structured_content", Summary: "Returns the weather.", Handler: nopHandler,
		OutputSchema:   json.RawMessage(`{"type":"object","properties":{"temperature":{"type":"number"}},"required":["temperature"]}`),
		InferredOutput: &tools.InferredSchema{Observed: 1, Schema: json.RawMessage(`{"type":"string"}`)}}
	r := tools.NewRegistry()
	if err := r.Register(links, declared); err != nil {
		t.Fatal(err)
	}
	before := vfs.New(r).Stats().Direct
	withInferred := links
	withInferred.InferredOutput = inferred
	if err := r.Register(withInferred); err != nil {
		t.Fatal(err)
	}
	f := vfs.New(r)
	read := func(p string) string {
		t.Helper()
		b, err := f.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	dts := read("everything/get_resource_links.d.ts")
	for _, want := range []string{
		"function get_resource_links(args?: GetResourceLinksArgs): Promise<GetResourceLinksResult>;",
		"/** Inferred from 3 observed results, not declared by the tool: a hint, not a contract. */\n  type GetResourceLinksResult = ({",
		"uri: string;",
		"name?: string;",
		"} | string)[];",
	} {
		if !strings.Contains(dts, want) {
			t.Errorf(".d.ts lacks %q:\n%s", want, dts)
		}
	}
	checkTS(t, "get_resource_links.d.ts", dts)
	md := read("everything/get_resource_links.md")
	if want := "## Output schema\n\nInferred from 3 observed results, not declared by the tool: a hint, not a contract. Results are not checked against it.\n\n```json\n{\n  \"type\": \"array\","; !strings.Contains(md, want) {
		t.Errorf(".md lacks %q:\n%s", want, md)
	}
	if out, _ := f.Output(links.Name); out != "({…} | string)[] (inferred)" {
		t.Errorf("output shape %q", out)
	}
	if one := vfs.InferredNote(1); !strings.Contains(one, "1 observed result,") {
		t.Errorf("note for one result: %q", one)
	}

	// A declared schema wins.
	dts = read("everything/get_structured_content.d.ts")
	if strings.Contains(dts, "Inferred") || !strings.Contains(dts, "temperature: number;") {
		t.Errorf("declared output schema lost to an inferred one:\n%s", dts)
	}
	if out, _ := f.Output(declared.Name); strings.Contains(out, "inferred") {
		t.Errorf("output shape of a declared schema %q", out)
	}
	// Direct mode's tools/list would not change.
	if after := f.Stats().Direct; after != before {
		t.Errorf("direct mode's tool list changed with an inferred schema: %+v, before %+v", after, before)
	}
}
