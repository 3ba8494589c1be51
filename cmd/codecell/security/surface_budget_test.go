package security

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLargeUpstreamIsGrouped (issue 19): OpenAPI categories were grouped,
// upstream ones not: a 5,000-tool server gave a 170 KB index.json. Every
// index and listing of it fits its budget, and every tool is reachable.
func TestLargeUpstreamIsGrouped(t *testing.T) {
	t.Parallel()
	s := hostile(t, map[string]string{"TOOLS": "5000"})
	alice := s.open(t, aliceToken)
	index := alice.tool("read_tools", map[string]any{"path": "/hostile/index.json"})
	if len(index) > 5<<10 || !strings.Contains(index, `"groups"`) {
		t.Fatalf("/hostile/index.json: %d bytes:\n%.600s", len(index), index)
	}
	var root struct {
		Groups map[string]string `json:"groups"`
	}
	if err := json.Unmarshal([]byte(index), &root); err != nil || len(root.Groups) == 0 {
		t.Fatalf("groups of /hostile/index.json (%v): %.600s", err, index)
	}
	for g := range root.Groups {
		if sub := alice.tool("read_tools", map[string]any{"path": "/hostile/" + g + "/index.json"}); len(sub) > 5<<10 {
			t.Errorf("/hostile/%s/index.json: %d bytes", g, len(sub))
		}
		break
	}
	if dir := alice.tool("read_tools", map[string]any{"path": "/hostile"}); len(dir) > 16<<10 {
		t.Errorf("the listing of /hostile: %d bytes", len(dir))
	}
	if rec := alice.run(`(await hostile.tool_4321({}))`); rec.Status != "ok" || !strings.Contains(string(rec.Result), "tool_4321 was called") {
		t.Errorf("a tool of the large server: %s", rec.raw)
	}
	alice.normal()
}

// TestHugeSchemasAreBounded (issue 19): a tool whose input schema has
// 20,000 properties, or nests 1,000 levels deep, cost a 10 MB .md page.
// What the model reads of it stays within the response budget, page by
// page, and the pages end. (5,000 properties and 300 levels here: the
// pages are as bounded, and the schemas compile in a second rather than
// the 8 s and 15 s the larger ones take under load, which an upstream's
// handshake may not wait for; vfs's tests render the larger ones.)
func TestHugeSchemasAreBounded(t *testing.T) {
	t.Parallel()
	s := hostile(t, map[string]string{"WIDE": "5000", "DEEP": "300"})
	alice := s.open(t, aliceToken)
	for _, path := range []string{"/hostile/wide.md", "/hostile/wide.d.ts", "/hostile/deep.md", "/hostile/deep.d.ts"} {
		offset, pages, total := 0, 0, 0
		for {
			args := map[string]any{"path": path}
			if offset > 0 {
				args["offset"] = offset
			}
			page := alice.tool("read_tools", args)
			pages++
			total += len(page)
			if len(page) > 16<<10 {
				t.Errorf("%s at %d: %d bytes, the budget is 16 KiB", path, offset, len(page))
			}
			next := strings.LastIndex(page, `"offset": `)
			if next < 0 || pages > 40 {
				break
			}
			var n int
			if _, err := fmtSscan(page[next+len(`"offset": `):], &n); err != nil || n <= offset {
				t.Fatalf("%s: a page points at offset %d after %d:\n%.300s", path, n, offset, page[next:])
			}
			offset = n
		}
		if pages > 40 || total > 512<<10 {
			t.Errorf("%s: %d pages, %d bytes in all: not bounded", path, pages, total)
		}
	}
	for _, q := range []map[string]any{
		{"query": "takes 5000 arguments", "detail": "full"},
		{"query": "nested 300 levels deep", "detail": "signature"},
		{"query": "hostile", "detail": "full", "limit": 50},
	} {
		if got := alice.tool("search_tools", q); len(got) > 16<<10 {
			t.Errorf("search_tools %v: %d bytes, the budget is 16 KiB", q, len(got))
		}
	}
	alice.normal()
}
