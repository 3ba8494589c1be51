package vfs_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/vfs"
)

// bigTool is a tool whose result type names many others, like GitHub's
// timeline events: its .d.ts and .md run to tens of kilobytes.
func bigTool(t testing.TB, defs int) tools.Tool {
	t.Helper()
	out := map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/Event0"}}
	d := map[string]any{}
	for i := range defs {
		props := map[string]any{}
		for j := range 12 {
			props[fmt.Sprintf("field_%d", j)] = map[string]any{"type": "string", "description": strings.Repeat("Words about the field. ", 4)}
		}
		if i+1 < defs {
			props["next"] = map[string]any{"$ref": fmt.Sprintf("#/$defs/Event%d", i+1)}
		}
		d[fmt.Sprintf("Event%d", i)] = map[string]any{"type": "object", "description": "An event.", "properties": props}
	}
	out["$defs"] = d
	schema, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return tools.Tool{Name: "gh.list_events", Summary: "List events.", Description: "List events.\n\n" + strings.Repeat("A long description. ", 200),
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"owner":{"type":"string"}},"required":["owner"]}`),
		OutputSchema: schema, Handler: nopHandler}
}

// TestPageOf reads long files page by page: every page within its budget,
// every declaration page valid TypeScript, and the pages together give
// the whole file, each part once.
func TestPageOf(t *testing.T) {
	t.Parallel()
	r := tools.NewRegistry()
	if err := r.Register(bigTool(t, 150)); err != nil {
		t.Fatal(err)
	}
	if err := r.SetCategorySource("gh", `the OpenAPI description "gh"`); err != nil {
		t.Fatal(err)
	}
	f := vfs.New(r)
	for _, p := range []string{"gh/list_events.d.ts", "gh/list_events.md"} {
		content, err := f.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, budget := range []int{2048, 4096, 16384} {
			t.Run(fmt.Sprintf("%s/%d", p, budget), func(t *testing.T) {
				if len(content) <= budget {
					t.Fatalf("%s is %d bytes: too short to page at %d", p, len(content), budget)
				}
				var parts []string
				offset, pages := 0, 0
				for {
					pg, err := vfs.PageOf(p, content, offset, budget, func(o int) string { return fmt.Sprintf("OFFSET=%d", o) })
					if err != nil {
						t.Fatal(err)
					}
					pages++
					if len(pg.Text) > budget {
						t.Errorf("page at %d: %d bytes, budget %d", offset, len(pg.Text), budget)
					}
					if pg.Total != len(content) {
						t.Errorf("Total %d, want %d", pg.Total, len(content))
					}
					if strings.HasSuffix(p, ".d.ts") {
						checkTS(t, fmt.Sprintf("%s@%d", p, offset), pg.Text)
						if !strings.HasPrefix(pg.Text, "// From the OpenAPI description") {
							t.Errorf("page at %d lost the source's mark:\n%.200s", offset, pg.Text)
						}
					}
					if strings.Count(pg.Text, "```")%2 != 0 {
						t.Errorf("page at %d leaves a code block open:\n%s", offset, pg.Text)
					}
					if pg.Next == 0 {
						parts = append(parts, string(content[offset:]))
						break
					}
					if pg.Next <= offset || !strings.Contains(pg.Text, fmt.Sprintf("OFFSET=%d", pg.Next)) {
						t.Fatalf("page at %d: next %d, note missing or going back:\n%s", offset, pg.Next, pg.Text)
					}
					if !strings.Contains(pg.Text, "left out to fit") {
						t.Errorf("page at %d does not say what was left out", offset)
					}
					parts = append(parts, string(content[offset:pg.Next]))
					// What the page shows of the file is the part it stands for.
					if !strings.Contains(pg.Text, strings.TrimSpace(parts[len(parts)-1])) && !strings.HasSuffix(p, ".d.ts") {
						t.Errorf("page at %d does not hold its part", offset)
					}
					offset = pg.Next
				}
				if got := strings.Join(parts, ""); got != string(content) {
					t.Errorf("the pages do not add up to the file")
				}
				if pages < 2 {
					t.Errorf("%d pages", pages)
				}
			})
		}
	}
	if _, err := vfs.PageOf("gh/list_events.d.ts", []byte("declare namespace gh {\n}\n"), 400, 4096, nil); err == nil {
		t.Error("an offset past the end is accepted")
	}
}
