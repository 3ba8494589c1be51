package search

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
)

// TestTune is a quick loop for working on ranking: it builds the index
// straight from the tools bench-search cached (CODECELL_SEARCH_CACHE,
// after one make bench-search), without a registry or compiled schemas,
// and prints top-1/3 of the dev set, per API, and each dev miss. It does
// not score the held-out set unless CODECELL_SEARCH_SHOW_HELDOUT is set:
// tuning looks at dev only. The numbers make bench-search reports are
// TestSearchQuality's.
func TestTune(t *testing.T) {
	dir := os.Getenv("CODECELL_SEARCH_TUNE")
	if dir == "" {
		t.Skip("CODECELL_SEARCH_TUNE=DIR (a bench-search cache) runs it")
	}
	var ts []*tools.Tool
	for _, a := range tuneAPIs(t) {
		if a[1] == "extra" {
			continue
		}
		matches, _ := filepath.Glob(filepath.Join(dir, a[0]+"-*.json"))
		if len(matches) == 0 {
			t.Fatalf("no cache of %s in %s", a[0], dir)
		}
		b, err := os.ReadFile(matches[0])
		if err != nil {
			t.Fatal(err)
		}
		var cts []struct {
			Name, Title, Summary, Description, Notes, Group, Route string
			InputSchema                                            json.RawMessage
			OutputSchema                                           json.RawMessage
			Annotations                                            tools.Annotations
			Deprecated                                             bool
		}
		if err := json.Unmarshal(b, &cts); err != nil {
			t.Fatal(err)
		}
		for _, c := range cts {
			ts = append(ts, &tools.Tool{Name: c.Name, Title: c.Title, Summary: c.Summary, Description: c.Description, Notes: c.Notes,
				Group: c.Group, Route: c.Route, InputSchema: c.InputSchema, OutputSchema: c.OutputSchema, Annotations: c.Annotations, Deprecated: c.Deprecated})
		}
	}
	c := build(ts, 1)
	ix := &Index{}
	sets := []string{"dev.txt"}
	if os.Getenv("CODECELL_SEARCH_SHOW_HELDOUT") != "" {
		sets = append(sets, "heldout.txt")
	}
	for _, set := range sets {
		var n, top1, top3 int
		per := map[string][3]int{}
		for _, tk := range tuneTasks(t, set) {
			ranked := ix.rank(c, tk.query, -1, 5)
			r := -1
			var names []string
			for i, s := range ranked {
				name := c.docs[s.doc].tool.Name
				names = append(names, name)
				if r < 0 && slices.Contains(tk.want, name) {
					r = i
				}
			}
			n++
			p := per[tk.api]
			p[0]++
			if r == 0 {
				top1++
				p[1]++
			}
			if r >= 0 && r < 3 {
				top3++
				p[2]++
			}
			per[tk.api] = p
			if r != 0 {
				t.Logf("%s rank %d: %q want %s; got %s", set, r+1, tk.query, strings.Join(tk.want, " or "), strings.Join(names, ", "))
			}
		}
		var apis []string
		for a := range per {
			apis = append(apis, a)
		}
		slices.Sort(apis)
		line := fmt.Sprintf("%s: %d tasks, top-1 %.1f%%, top-3 %.1f%%;", set, n, 100*float64(top1)/float64(n), 100*float64(top3)/float64(n))
		for _, a := range apis {
			p := per[a]
			line += fmt.Sprintf(" %s %d/%d/%d", a, p[1], p[2], p[0])
		}
		t.Log(line)
	}
}

func tuneAPIs(tb testing.TB) [][2]string {
	f, err := os.Open("../../testdata/search/apis.txt")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out [][2]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 3 && !strings.HasPrefix(fs[0], "#") {
			out = append(out, [2]string{fs[0], fs[1]})
		}
	}
	return out
}

type tuneTask struct {
	api   string
	want  []string
	query string
}

func tuneTasks(tb testing.TB, file string) []tuneTask {
	f, err := os.Open(filepath.Join("../../testdata/search", file))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []tuneTask
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, "|")
		api := strings.TrimSpace(parts[0])
		var want []string
		for _, w := range strings.Split(parts[1], ",") {
			w = strings.TrimSpace(w)
			if !strings.Contains(w, ".") {
				w = api + "." + w
			}
			want = append(want, w)
		}
		out = append(out, tuneTask{api: api, want: want, query: strings.TrimSpace(parts[2])})
	}
	return out
}
