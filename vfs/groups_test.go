package vfs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/vfs"
)

// groupedRegistry holds a category "api" of n tools spread over groups:
// tool i is in group g<i%4>, every third of those in the subgroup
// g<i%4>/sub, and tool 0 in none; and a small category "small" whose
// tools carry groups but which stays flat.
func groupedRegistry(t testing.TB, n int) *tools.Registry {
	t.Helper()
	h := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	r := tools.NewRegistry()
	var ts []tools.Tool
	for i := range n {
		tl := tools.Tool{Name: fmt.Sprintf("api.op_%03d", i), Summary: fmt.Sprintf("Operation number %d of the API, which does something useful.", i), Handler: h}
		if i > 0 {
			tl.Group = fmt.Sprintf("g%d", i%4)
			if i%3 == 0 {
				tl.Group += "/sub"
			}
		}
		tl.Deprecated = i == 5
		ts = append(ts, tl)
	}
	ts = append(ts, tools.Tool{Name: "small.one", Summary: "One.", Group: "x", Handler: h})
	if err := r.Register(ts...); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGroupedCategory(t *testing.T) {
	t.Parallel()
	f := vfs.New(groupedRegistry(t, 120))

	if err := fstest.TestFS(f, "manifest.json", "api/index.json", "api/g1/index.json", "api/g1/op_001.d.ts",
		"api/g0/sub/index.json", "api/g0/sub/op_012.md", "api/op_000.d.ts", "small/one.d.ts", "small/index.json"); err != nil {
		t.Fatal(err)
	}

	read := func(p string) string {
		t.Helper()
		b, err := fs.ReadFile(f, p)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		return string(b)
	}
	var root struct {
		Groups map[string]string          `json:"groups"`
		Tools  map[string]json.RawMessage `json:"tools"`
		Next   string                     `json:"next"`
	}
	if err := json.Unmarshal([]byte(read("api/index.json")), &root); err != nil {
		t.Fatal(err)
	}
	if len(root.Groups) != 4 || root.Groups["g1"] != "30 tools: 20 here, the rest in 1 group" || len(root.Tools) != 1 || root.Tools["op_000"] == nil {
		t.Errorf("category index: groups %v, tools %v", root.Groups, root.Tools)
	}
	if !strings.Contains(root.Next, "api/<group>/index.json") {
		t.Errorf("category index next: %q", root.Next)
	}
	g1 := read("api/g1/index.json")
	if !strings.Contains(g1, `"group":"g1"`) || !strings.Contains(g1, `"op_001":{"summary"`) || strings.Contains(g1, "op_002") || !strings.Contains(g1, `"sub":"10 tools"`) {
		t.Errorf("group index: %s", g1)
	}
	if g1 := read("api/g1/index.json"); !strings.Contains(g1, `"op_005":{"summary":"Operation number 5 of the API, which does something useful.","deprecated":true}`) {
		t.Errorf("deprecated tool not marked: %s", g1)
	}
	if d := read("api/op_005.d.ts"); !strings.Contains(d, "@deprecated") {
		t.Errorf("declaration of a deprecated tool: %s", d)
	}
	if md := read("api/op_003.md"); !strings.Contains(md, "- Group: api/g3/sub") {
		t.Errorf("page does not name the group: %s", md)
	}
	// A tool's files are the same under its group and under the category,
	// and only under its own group.
	if a, b := read("api/g3/sub/op_003.d.ts"), read("api/op_003.d.ts"); a != b {
		t.Error("a tool's declaration differs between its two paths")
	}
	for _, p := range []string{"api/g1/op_003.d.ts", "api/g3/op_003.d.ts", "api/g1/nope.d.ts", "api/g9/index.json", "api/g1/sub/sub/index.json", "small/x/index.json"} {
		if _, err := fs.Stat(f, p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: got %v, want not exist", p, err)
		}
	}
	// The category lists its index, groups and the files of its own
	// tools, not the files of every tool.
	ents, err := fs.ReadDir(f, "api")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "g0 g1 g2 g3 index.json op_000.d.ts op_000.md" {
		t.Errorf("api lists %s", got)
	}
	node, err := f.Read("/api")
	if err != nil {
		t.Fatal(err)
	}
	if node.Entries[1].Name != "g1" || node.Entries[1].About != "30 tools: 20 here, the rest in 1 group" {
		t.Errorf("listing: %+v", node.Entries[1])
	}
	// The small category stays flat whatever its tools' groups.
	if s := read("small/index.json"); strings.Contains(s, "groups") {
		t.Errorf("small category grouped: %s", s)
	}
}

// TestGroupedIndexesWithinBudget: however many tools and groups, every
// index of a grouped category stays within IndexBudget, and the way to a
// signature is measured through the groups.
func TestGroupedIndexesWithinBudget(t *testing.T) {
	t.Parallel()
	h := func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }
	r := tools.NewRegistry()
	var ts []tools.Tool
	for i := range 2000 {
		ts = append(ts, tools.Tool{
			Name:    fmt.Sprintf("big.operation_with_a_long_name_%04d", i),
			Summary: strings.Repeat("A summary that goes on. ", 5),
			Group:   fmt.Sprintf("group_with_a_long_name_%03d/sub_%d", i%300, i%7),
			Handler: h,
		})
	}
	if err := r.Register(ts...); err != nil {
		t.Fatal(err)
	}
	st := vfs.New(r).Stats()
	if len(st.Indexes) < 300 {
		t.Fatalf("%d indexes, want one per group", len(st.Indexes))
	}
	for _, ix := range st.Indexes {
		if ix.Bytes > vfs.IndexBudget {
			t.Errorf("%s/index.json: %d bytes, budget %d", ix.Category, ix.Bytes, vfs.IndexBudget)
		}
	}
	root, _ := vfs.New(r).Content("big", vfs.LevelIndex)
	if !strings.Contains(string(root), "more groups left out (read_tools big/ lists them all)") {
		t.Errorf("a cut list of groups does not say so: %s", root)
	}
	if st.Path.Min <= st.Manifest.Bytes+st.Indexes[0].Bytes+st.Signature.Min {
		t.Errorf("way to a signature (%d bytes at least) does not count the group indexes", st.Path.Min)
	}
}
