package search

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/tools"
)

// TestTune is a quick loop for working on ranking: it builds the index
// straight from the tools bench-search cached (CODECELL_SEARCH_CACHE,
// after one make bench-search), without a registry or compiled schemas,
// and prints top-1/3 of the dev set, per API, and each dev miss. It does
// not score the held-out set unless CODECELL_SEARCH_SHOW_HELDOUT is set:
// tuning looks at dev only. CODECELL_SEARCH_FRESH=1 scores fresh.txt
// too, over every API of apis.txt (the extra ones as well), printing
// only its totals; CODECELL_SEARCH_HELDOUT2=1 scores heldout2.txt the
// same way (its misses are never printed: it is measured, not tuned
// on). CODECELL_SEARCH_EXTRA=FILE scores a set kept outside the
// repository the same way (api, operations and phrasing separated by
// tabs or |; totals only). The numbers make bench-search reports are
// TestSearchQuality's and TestSearchFresh's.
func TestTune(t *testing.T) {
	dir := os.Getenv("CODECELL_SEARCH_TUNE")
	if dir == "" {
		t.Skip("CODECELL_SEARCH_TUNE=DIR (a bench-search cache) runs it")
	}
	tuneSet(t)
	c := build(tuneTools(t, dir, false), 1)
	ix := &Index{}
	sets := []string{"dev.txt"}
	if os.Getenv("CODECELL_SEARCH_SHOW_HELDOUT") != "" {
		sets = append(sets, "heldout.txt")
	}
	if os.Getenv("CODECELL_SEARCH_FRESH") != "" {
		sets = append(sets, "fresh.txt")
	}
	if os.Getenv("CODECELL_SEARCH_HELDOUT2") != "" {
		sets = append(sets, "heldout2.txt")
	}
	if p := os.Getenv("CODECELL_SEARCH_EXTRA"); p != "" {
		sets = append(sets, p) // a set of one's own, outside the repository: totals only
	}
	var all *index
	for _, set := range sets {
		c := c
		if set != "dev.txt" && set != "heldout.txt" {
			if all == nil {
				all = build(tuneTools(t, dir, true), 1)
			}
			c = all
		}
		var n, top1, top3, top5 int
		per := map[string][3]int{}
		for _, tk := range tuneTasks(t, set) {
			r := tuneRank(ix, c, tk, func(names []string) {
				// heldout2.txt's misses are never shown: it is not tuned on.
				if set == "dev.txt" || set == "heldout.txt" || set == "fresh.txt" && os.Getenv("CODECELL_SEARCH_SHOW_FRESH") != "" {
					t.Logf("%s miss: %q want %s; got %s", set, tk.query, strings.Join(tk.want, " or "), strings.Join(names, ", "))
				}
			})
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
			if r >= 0 {
				top5++
			}
			per[tk.api] = p
		}
		var apis []string
		for a := range per {
			apis = append(apis, a)
		}
		slices.Sort(apis)
		line := fmt.Sprintf("%s: %d tasks, top-1 %.1f%%, top-3 %.1f%%, top-5 %.1f%% (%d/%d/%d);", filepath.Base(set), n, 100*float64(top1)/float64(n), 100*float64(top3)/float64(n), 100*float64(top5)/float64(n), top1, top3, top5)
		for _, a := range apis {
			p := per[a]
			line += fmt.Sprintf(" %s %d/%d/%d", a, p[1], p[2], p[0])
		}
		t.Log(line)
	}
}

// tuneRank returns the rank of tk's operation among the first five
// hits, -1 when it is not there (and then calls miss with the hits).
func tuneRank(ix *Index, c *index, tk tuneTask, miss func([]string)) int {
	ranked := ix.rank(c, tk.query, -1, 5)
	var names []string
	for i, s := range ranked {
		name := c.docs[s.doc].tool.Name
		names = append(names, name)
		if slices.Contains(tk.want, name) {
			if i > 0 && miss != nil {
				miss(names)
			}
			return i
		}
	}
	if miss != nil {
		miss(names)
	}
	return -1
}

// tuneTools reads the tools of the dev and held-out APIs from a
// bench-search cache, and with extra those of the extra APIs too.
func tuneTools(t testing.TB, dir string, extra bool) []*tools.Tool {
	var ts []*tools.Tool
	for _, a := range tuneAPIs(t) {
		if a[1] == "extra" && !extra {
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
	return ts
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
	if !filepath.IsAbs(file) {
		file = filepath.Join("../../testdata/search", file)
	}
	f, err := os.Open(file)
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
		sep := "|"
		if strings.Contains(line, "\t") {
			sep = "\t"
		}
		parts := strings.Split(line, sep)
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

// fitParam is a ranking factor TestFit searches, and the values it
// tries.
type fitParam struct {
	name   string
	v      *float64
	values []float64
	field  bool // a field weight: the postings are weighed again
}

func fitParams() []fitParam {
	boost := []float64{0, 0.1, 0.2, 0.3, 0.45, 0.6, 0.8, 1, 1.5}
	factor := []float64{0.3, 0.45, 0.55, 0.65, 0.75, 0.85, 1}
	ps := []fitParam{
		{"formWeight", &formWeight, []float64{0.3, 0.5, 0.7, 1}, false},
		{"bigramWeight", &bigramWeight, []float64{0, 0.25, 0.5, 0.75, 1}, false},
		{"questionFactor", &questionFactor, factor, false},
		{"oppositeFactor", &oppositeFactor, factor, false},
		{"actionFactor", &actionFactor, factor, false},
		{"classBoost", &classBoost, boost, false},
		{"readWriteFactor", &readWriteFactor, factor, false},
		{"createDeleteFactor", &createDeleteFactor, factor, false},
		{"otherWriteFactor", &otherWriteFactor, factor, false},
		{"objectBoost", &objectBoost, boost, false},
		{"objectMissFactor", &objectMissFactor, factor, false},
		{"verbTermWeight", &verbTermWeight, []float64{0.3, 0.5, 0.7, 0.85, 1}, false},
		{"contextBoost", &contextBoost, boost, false},
		{"attributeBoost", &attributeBoost, boost, false},
		{"verbBoost", &verbBoost, boost, false},
		{"selfBoost", &selfBoost, boost, false},
		{"otherFactor", &otherFactor, factor, false},
		{"notSelfFactor", &notSelfFactor, factor, false},
		{"otherObjectShare", &otherObjectShare, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}, false},
		{"summaryBoost", &summaryBoost, []float64{0, 0.5, 1, 1.5, 2, 3}, false},
		{"nameBoost", &nameBoost, boost, false},
		{"generalWeight", &generalWeight, []float64{0, 0.1, 0.2, 0.3, 0.4}, false},
		{"headBoost", &headBoost, boost, false},
		{"partFactor", &partFactor, factor, false},
		{"pluralGetShare", &pluralGetShare, []float64{0, 0.25, 0.5, 1}, false},
		{"variantWeight", &variantWeight, []float64{0, 0.25, 0.4, 0.6}, false},
		{"headMissFactor", &headMissFactor, factor, false},
		{"verbSenseTerms", &verbSenseTerms, []float64{2, 3}, false},
		{"contextMissFactor", &contextMissFactor, []float64{0.8, 0.85, 0.9, 0.95, 1}, false},
		{"namedBoost", &namedBoost, []float64{1, 1.25, 1.5, 2, 3}, false},
		{"unnamedFactor", &unnamedFactor, []float64{0.1, 0.2, 0.3, 0.5, 0.7, 1}, false},
		{"categoryBoost", &categoryBoost, []float64{0, 0.15, 0.3, 0.6}, false},
		{"coordFloor", &coordFloor, []float64{0.1, 0.2, 0.35, 0.5, 0.65}, false},
	}
	for f := range numFields {
		ps = append(ps, fitParam{fmt.Sprintf("fieldWeight[%d]", f), &fieldWeight[f], []float64{0.3, 0.6, 1, 1.5, 2, 2.5, 3, 4, 5}, true})
	}
	return ps
}

// TestFit searches the ranking factors by coordinate ascent on the dev
// set (top-1 + top-3), and estimates how well that generalizes by
// leaving each dev API out in turn: the factors fitted on the others are
// scored on it. It prints what it found; the factors in the code are
// set by hand from it. CODECELL_SEARCH_TUNE=DIR CODECELL_SEARCH_FIT=1.
func TestFit(t *testing.T) {
	dir := os.Getenv("CODECELL_SEARCH_TUNE")
	if dir == "" || os.Getenv("CODECELL_SEARCH_FIT") == "" {
		t.Skip("CODECELL_SEARCH_TUNE=DIR CODECELL_SEARCH_FIT=1 runs it")
	}
	tuneSet(t)
	c := build(tuneTools(t, dir, false), 1)
	ix := &Index{}
	tasks := tuneTasks(t, "dev.txt")
	params := fitParams()
	start := make([]float64, len(params))
	for i, p := range params {
		start[i] = *p.v
	}
	reset := func(vals []float64) {
		for i, p := range params {
			if *p.v != vals[i] && p.field {
				c.forgetWeights()
			}
			*p.v = vals[i]
		}
	}
	score := func(ts []tuneTask) (top1, top3 int) {
		for _, tk := range ts {
			r := tuneRank(ix, c, tk, nil)
			if r == 0 {
				top1++
			}
			if r >= 0 && r < 3 {
				top3++
			}
		}
		return
	}
	fit := func(ts []tuneTask) []float64 {
		best1, best3 := score(ts)
		for round := 0; round < 2; round++ {
			improved := false
			for _, p := range params {
				cur := *p.v
				bestV := cur
				for _, v := range p.values {
					if v == cur {
						continue
					}
					*p.v = v
					if p.field {
						c.forgetWeights()
					}
					a, b := score(ts)
					// Better on both counts together; a tie keeps the value.
					if a+b > best1+best3 {
						best1, best3, bestV = a, b, v
						improved = true
					}
				}
				*p.v = bestV
				if p.field {
					c.forgetWeights()
				}
			}
			if !improved {
				break
			}
		}
		out := make([]float64, len(params))
		for i, p := range params {
			out[i] = *p.v
		}
		return out
	}
	a1, a3 := score(tasks)
	t.Logf("start: top-1 %d, top-3 %d of %d", a1, a3, len(tasks))
	all := fit(tasks)
	b1, b3 := score(tasks)
	t.Logf("fitted on all dev: top-1 %d, top-3 %d of %d", b1, b3, len(tasks))
	var set []string
	for i, p := range params {
		if all[i] != start[i] {
			t.Logf("  %s: %v → %v", p.name, start[i], all[i])
			set = append(set, fmt.Sprintf("%s=%v", p.name, all[i]))
		}
	}
	t.Logf("CODECELL_SEARCH_SET=%s", strings.Join(set, ","))
	if os.Getenv("CODECELL_SEARCH_FIT_CV") == "" {
		return
	}
	// Leave one API out.
	apis := map[string]bool{}
	for _, tk := range tasks {
		apis[tk.api] = true
	}
	var cv1, cv3, base1, base3, n int
	for api := range apis {
		var train, test []tuneTask
		for _, tk := range tasks {
			if tk.api == api {
				test = append(test, tk)
			} else {
				train = append(train, tk)
			}
		}
		reset(start)
		s1, s3 := score(test)
		fit(train)
		f1, f3 := score(test)
		t.Logf("left out %s (%d): top-1 %d → %d, top-3 %d → %d", api, len(test), s1, f1, s3, f3)
		cv1, cv3, base1, base3, n = cv1+f1, cv3+f3, base1+s1, base3+s3, n+len(test)
	}
	t.Logf("leave-one-API-out: top-1 %d → %d, top-3 %d → %d of %d", base1, cv1, base3, cv3, n)
	reset(all)
}

// tuneSet sets ranking factors from CODECELL_SEARCH_SET
// ("name=value,name=value"): those of fitParams, and fieldB[i] for a
// field's length normalization, to try a variant without editing the
// code (TestTune, TestFit, BenchmarkTune). TestFit prints the line of
// the factors it fitted.
func tuneSet(t testing.TB) {
	spec := os.Getenv("CODECELL_SEARCH_SET")
	if spec == "" {
		return
	}
	floats := map[string]*float64{}
	for _, p := range fitParams() {
		floats[p.name] = p.v
	}
	for f := range numFields {
		floats[fmt.Sprintf("fieldB[%d]", f)] = &fieldB[f]
	}
	for _, kv := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(kv, "=")
		p := floats[k]
		if p == nil {
			t.Fatalf("CODECELL_SEARCH_SET: no factor %q", k)
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("CODECELL_SEARCH_SET: %s: %v", k, err)
		}
		*p = f
	}
	t.Logf("set %s", spec)
}

// BenchmarkTune is the p50 and p90 of ranking the dev phrasings over
// every API of a bench-search cache (CODECELL_SEARCH_TUNE=DIR), with the
// factors of CODECELL_SEARCH_SET: what a variant TestTune measures
// costs. The index is built straight from the cache, as TestTune's.
func BenchmarkTune(b *testing.B) {
	dir := os.Getenv("CODECELL_SEARCH_TUNE")
	if dir == "" {
		b.Skip("CODECELL_SEARCH_TUNE=DIR (a bench-search cache) runs it")
	}
	tuneSet(b)
	c := build(tuneTools(b, dir, true), 1)
	ix := &Index{}
	tasks := tuneTasks(b, "dev.txt")
	ix.rank(c, "warm up", -1, 5)
	var took []time.Duration
	i := 0
	for b.Loop() {
		q := tasks[i%len(tasks)].query
		i++
		start := time.Now()
		ix.rank(c, q, -1, 5)
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(len(c.docs)), "tools")
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*9/10].Microseconds())/1000, "p90-ms")
}
