package search_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/openapi"
)

// This file loads the real API descriptions of testdata/search/apis.txt
// and reads the task sets of make bench-search (testdata/search).

const benchData = "../../testdata/search"

// apiSpec is one line of apis.txt: a category, its set (dev, heldout or
// extra) and the description's path under testdata/.
type apiSpec struct{ name, set, path string }

func readAPIs(tb testing.TB) []apiSpec {
	tb.Helper()
	f, err := os.Open(filepath.Join(benchData, "apis.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []apiSpec
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 3 {
			tb.Fatalf("apis.txt: %q: want category, set, path", line)
		}
		out = append(out, apiSpec{name: fs[0], set: fs[1], path: filepath.Join("../../testdata", fs[2])})
	}
	return out
}

// task is one line of a task set: a phrasing and the operations that
// answer it (more than one when it is genuinely ambiguous).
type task struct {
	api   string
	want  []string
	query string
}

func readTasks(tb testing.TB, file string) []task {
	tb.Helper()
	f, err := os.Open(filepath.Join(benchData, file))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []task
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, "|")
		if len(parts) != 3 {
			tb.Fatalf("%s: %q: want api | operation[,operation] | phrasing", file, line)
		}
		api := strings.TrimSpace(parts[0])
		var want []string
		for _, w := range strings.Split(parts[1], ",") {
			w = strings.TrimSpace(w)
			if !strings.Contains(w, ".") {
				w = api + "." + w
			}
			want = append(want, w)
		}
		out = append(out, task{api: api, want: want, query: strings.TrimSpace(parts[2])})
	}
	return out
}

// loadAPIs loads the descriptions of the given sets into one registry,
// each as the category apis.txt names. It skips the test when they are
// not installed (make api-fixtures, make openapi-fixtures).
// CODECELL_SEARCH_CACHE=DIR keeps the tools made from each description
// there, for a quicker next run while working on search (the cache holds
// what search reads; its tools cannot be called).
func loadAPIs(tb testing.TB, sets ...string) *tools.Registry {
	tb.Helper()
	key := strings.Join(sets, ",")
	if r, ok := registries.Load(key); ok {
		return r.(*tools.Registry)
	}
	reg := tools.NewRegistry()
	for _, a := range readAPIs(tb) {
		if !slices.Contains(sets, a.set) {
			continue
		}
		ts, err := apiTools(a)
		if errors.Is(err, os.ErrNotExist) {
			if os.Getenv("CODECELL_REQUIRE_NODE") != "" {
				tb.Fatalf("%s is not installed (%v): run make api-fixtures openapi-fixtures", a.path, err)
			}
			tb.Skipf("run make api-fixtures openapi-fixtures to search %s", a.path)
		}
		if err != nil {
			tb.Fatalf("%s: %v", a.name, err)
		}
		if err := reg.Register(ts...); err != nil {
			tb.Fatalf("%s: %v", a.name, err)
		}
	}
	registries.Store(key, reg)
	return reg
}

// cachedTool is what a cached tool keeps: what search and the tree read.
type cachedTool struct {
	Name, Title, Summary, Description, Notes, Group, Route string
	InputSchema                                            json.RawMessage `json:",omitempty"`
	OutputSchema                                           json.RawMessage `json:",omitempty"`
	Annotations                                            tools.Annotations
	Deprecated                                             bool
}

var (
	apiCache   sync.Map // path → []tools.Tool
	registries sync.Map // sets → *tools.Registry, for the repeats of a benchmark
)

func apiTools(a apiSpec) ([]tools.Tool, error) {
	if ts, ok := apiCache.Load(a.path); ok {
		return ts.([]tools.Tool), nil
	}
	st, err := os.Stat(a.path)
	if err != nil {
		return nil, err
	}
	var cacheFile string
	if dir := os.Getenv("CODECELL_SEARCH_CACHE"); dir != "" {
		cacheFile = filepath.Join(dir, fmt.Sprintf("%s-%d-%d.json", a.name, st.Size(), st.ModTime().Unix()))
		if b, err := os.ReadFile(cacheFile); err == nil {
			var cts []cachedTool
			if err := json.Unmarshal(b, &cts); err == nil {
				ts := make([]tools.Tool, len(cts))
				for i, c := range cts {
					ts[i] = tools.Tool{Name: c.Name, Title: c.Title, Summary: c.Summary, Description: c.Description, Notes: c.Notes,
						Group: c.Group, Route: c.Route, InputSchema: c.InputSchema, OutputSchema: c.OutputSchema,
						Annotations: c.Annotations, Deprecated: c.Deprecated, Handler: cachedHandler}
				}
				apiCache.Store(a.path, ts)
				return ts, nil
			}
		}
	}
	data, err := os.ReadFile(a.path)
	if err != nil {
		return nil, err
	}
	doc, err := openapi.Parse(data)
	if err != nil {
		return nil, err
	}
	s, err := openapi.New(openapi.Config{Spec: a.path, BaseURL: "https://api.example.invalid"}, openapi.Options{Name: a.name})
	if err != nil {
		return nil, err
	}
	reg := tools.NewRegistry()
	if _, err := s.OpenDocument(reg, doc); err != nil {
		return nil, err
	}
	var ts []tools.Tool
	var cts []cachedTool
	for _, t := range reg.List() {
		ts = append(ts, *t)
		cts = append(cts, cachedTool{Name: t.Name, Title: t.Title, Summary: t.Summary, Description: t.Description, Notes: t.Notes,
			Group: t.Group, Route: t.Route, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
			Annotations: t.Annotations, Deprecated: t.Deprecated})
	}
	if cacheFile != "" {
		if b, err := json.Marshal(cts); err == nil {
			_ = os.MkdirAll(filepath.Dir(cacheFile), 0o755)
			_ = os.WriteFile(cacheFile, b, 0o644)
		}
	}
	apiCache.Store(a.path, ts)
	return ts, nil
}

func cachedHandler(context.Context, json.RawMessage) (json.RawMessage, error) {
	return nil, errors.New("a tool read from the search benchmark's cache cannot be called")
}

// bm25 is the baseline of make bench-search: plain BM25 (k1 1.2, b 0.75)
// over each operation's id, summary, description and tags, one field,
// words split at identifier boundaries and lower-cased, no stemming, no
// synonyms.
type bm25 struct {
	docs  []string // tool names
	tf    []map[string]int
	len   []int
	df    map[string]int
	avgLn float64
}

func newBM25(ts []*tools.Tool) *bm25 {
	b := &bm25{df: map[string]int{}}
	total := 0
	for _, t := range ts {
		tags := ""
		if _, rest, ok := strings.Cut(t.Notes, ", tags "); ok {
			tags, _, _ = strings.Cut(rest, ", from ")
		}
		// The operation's id, as the tool's name spells it.
		text := t.ShortName() + " " + t.Summary + " " + t.Description + " " + tags
		ws := plainWords(text)
		tf := map[string]int{}
		for _, w := range ws {
			tf[w]++
		}
		for w := range tf {
			b.df[w]++
		}
		b.docs = append(b.docs, t.Name)
		b.tf = append(b.tf, tf)
		b.len = append(b.len, len(ws))
		total += len(ws)
	}
	b.avgLn = float64(total) / math.Max(1, float64(len(ts)))
	return b
}

func (b *bm25) rank(query string, limit int) []string {
	const k1, bb = 1.2, 0.75
	n := float64(len(b.docs))
	type sc struct {
		doc   int
		score float64
	}
	var out []sc
	qs := plainWords(query)
	for i, tf := range b.tf {
		s := 0.0
		for _, q := range qs {
			f := float64(tf[q])
			if f == 0 {
				continue
			}
			df := float64(b.df[q])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			s += idf * f * (k1 + 1) / (f + k1*(1-bb+bb*float64(b.len[i])/b.avgLn))
		}
		if s > 0 {
			out = append(out, sc{i, s})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return b.docs[out[i].doc] < b.docs[out[j].doc]
	})
	var names []string
	for i := 0; i < len(out) && i < limit; i++ {
		names = append(names, b.docs[out[i].doc])
	}
	return names
}

var plainStop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields("a an the of to for in on at by from with and or is are be it this that i me my we you your can do does how what which who") {
		m[w] = true
	}
	return m
}()

// plainWords splits text into lower-case words at anything but letters
// and digits and at camelCase boundaries, dropping a few stop words.
func plainWords(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			w := strings.ToLower(string(cur))
			if !plainStop[w] {
				out = append(out, w)
			}
			cur = cur[:0]
		}
	}
	for _, r := range text {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			cur = append(cur, r)
		case r >= 'A' && r <= 'Z':
			if len(cur) > 0 && cur[len(cur)-1] >= 'a' && cur[len(cur)-1] <= 'z' {
				flush()
			}
			cur = append(cur, r)
		default:
			flush()
		}
	}
	flush()
	return out
}
