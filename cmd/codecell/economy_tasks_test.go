//go:build economy

package main

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// taskKind is the class of a task, which sets its target.
type taskKind string

const (
	// kindDataHeavy tasks make a direct agent read a large data set.
	kindDataHeavy taskKind = "data-heavy"
	// kindMedium tasks read or write tens of kilobytes.
	kindMedium taskKind = "medium"
	// kindLight tasks are one lookup.
	kindLight taskKind = "light"
)

// economyTask is one agent task, as a competent agent would do it in each
// mode. Each returns the answer it reached from what it read.
type economyTask struct {
	name     string
	kind     taskKind
	question string
	want     any
	direct   func(a *agent) any
	code     func(a *agent) any
}

// The answers' shapes.
type (
	mention struct {
		File  string `json:"file"`
		Lines int    `json:"lines"`
	}
	costReport struct {
		Teams   map[string]int `json:"teams"`
		Top     string         `json:"top"`
		TopCost int            `json:"top_cost"`
	}
	brokenRef struct {
		File    string `json:"file"`
		Missing []int  `json:"missing"`
	}
	imported struct {
		Entities  int `json:"entities"`
		Relations int `json:"relations"`
	}
	orgReport struct {
		Most    []string `json:"most"`
		Reports int      `json:"reports"`
		Org     int      `json:"org"`
	}
	noteHead struct {
		Title  string `json:"title"`
		Status string `json:"status"`
	}
	weather struct {
		Temperature float64 `json:"temperature"`
		Conditions  string  `json:"conditions"`
		Humidity    float64 `json:"humidity"`
	}
)

// economyTasks are the benchmark's tasks over the data. The order
// matters: the knowledge graph is built by import-people and read by the
// tasks after it.
func economyTasks(c *corpus) []economyTask {
	root := c.root
	csvPath := path.Join(root, peopleCSV)
	vp := c.people[1+slices.Index(teams, "payments")].name
	ic := c.people[len(c.people)-1]
	lookup := c.notes[41]
	return []economyTask{
		{
			name: "mentions", kind: kindDataHeavy,
			question: fmt.Sprintf("Which of the %d notes under the corpus mention %s, and on how many lines each?", len(c.notes), keyword),
			want:     wantMentions(c),
			direct: func(a *agent) any {
				files := readAll(a, root)
				var out []mention
				for _, p := range slices.Sorted(maps.Keys(files)) {
					n := 0
					for l := range strings.SplitSeq(files[p], "\n") {
						if strings.Contains(l, keyword) {
							n++
						}
					}
					if n > 0 {
						out = append(out, mention{p, n})
					}
				}
				return out
			},
			code: func(a *agent) any {
				discoverFiles(a)
				return decode[[]mention](a.h.tb, string(a.run(fmt.Sprintf(`const root = %q;
const paths = (await fs.search_files({path: root, pattern: "**/*.md"})).content.split("\n");
const files = await Promise.all(paths.map(path => fs.read_text_file({path})));
return paths.map((p, i) => ({file: p.slice(root.length + 1), lines: files[i].content.split("\n").filter(l => l.includes(%q)).length}))
  .filter(m => m.lines > 0).sort((a, b) => a.file < b.file ? -1 : 1);`, root, keyword))))
			},
		},
		{
			name: "costs", kind: kindDataHeavy,
			question: "What do the notes' \"cost: N EUR\" lines add up to for each team (the notes' directories), and which note costs the most in all?",
			want:     wantCosts(c),
			direct: func(a *agent) any {
				files := readAll(a, root)
				r := costReport{Teams: map[string]int{}}
				for _, p := range slices.Sorted(maps.Keys(files)) {
					sum := 0
					for _, m := range costLine.FindAllStringSubmatch(files[p], -1) {
						v, _ := strconv.Atoi(m[1])
						sum += v
					}
					r.Teams[path.Dir(p)] += sum
					if sum > r.TopCost {
						r.Top, r.TopCost = p, sum
					}
				}
				return r
			},
			code: func(a *agent) any {
				discoverFiles(a)
				return decode[costReport](a.h.tb, string(a.run(fmt.Sprintf(`const root = %q;
const paths = (await fs.search_files({path: root, pattern: "**/*.md"})).content.split("\n").sort();
const files = await Promise.all(paths.map(path => fs.read_text_file({path})));
const teams = {};
let top = "", top_cost = 0;
paths.forEach((p, i) => {
  const file = p.slice(root.length + 1);
  const sum = [...files[i].content.matchAll(/^cost: (\d+) EUR$/gm)].reduce((s, m) => s + Number(m[1]), 0);
  const team = file.split("/")[0];
  teams[team] = (teams[team] || 0) + sum;
  if (sum > top_cost) { top = file; top_cost = sum; }
});
return {teams, top, top_cost};`, root))))
			},
		},
		{
			name: "broken-refs", kind: kindDataHeavy,
			question: "Which notes cite (\"see note-NNN\") a note that is not in the corpus, and which ones?",
			want:     wantBroken(c),
			direct: func(a *agent) any {
				files := readAll(a, root)
				exists := map[int]bool{}
				for p := range files {
					exists[noteID(path.Base(p))] = true
				}
				var out []brokenRef
				for _, p := range slices.Sorted(maps.Keys(files)) {
					var missing []int
					for _, m := range noteRef.FindAllStringSubmatch(files[p], -1) {
						if id, _ := strconv.Atoi(m[1]); !exists[id] {
							missing = append(missing, id)
						}
					}
					if len(missing) > 0 {
						slices.Sort(missing)
						out = append(out, brokenRef{p, missing})
					}
				}
				return out
			},
			code: func(a *agent) any {
				discoverFiles(a)
				return decode[[]brokenRef](a.h.tb, string(a.run(fmt.Sprintf(`const root = %q;
const paths = (await fs.search_files({path: root, pattern: "**/*.md"})).content.split("\n").sort();
const exists = new Set(paths.map(p => Number(p.match(/note-(\d+)\.md$/)[1])));
const files = await Promise.all(paths.map(path => fs.read_text_file({path})));
return paths.map((p, i) => ({file: p.slice(root.length + 1),
  missing: [...files[i].content.matchAll(/see note-(\d+)/g)].map(m => Number(m[1])).filter(id => !exists.has(id)).sort((a, b) => a - b)}))
  .filter(r => r.missing.length > 0);`, root))))
			},
		},
		{
			name: "import-people", kind: kindMedium,
			question: fmt.Sprintf("Import %s into the knowledge graph: an entity per person (type person, observations \"team: T\" and \"title: T\") and a reports_to relation to their manager. How many entities and relations were created?", peopleCSV),
			want:     imported{len(c.people), len(c.people) - 1},
			direct: func(a *agent) any {
				rows := parseCSV(content(a.h.tb, a.do("fs__read_text_file", map[string]any{"path": csvPath})))
				var entities, relations []map[string]any
				for _, r := range rows {
					entities = append(entities, map[string]any{"name": r[0], "entityType": "person", "observations": []string{"team: " + r[1], "title: " + r[2]}})
					if r[3] != "" {
						relations = append(relations, map[string]any{"from": r[0], "to": r[3], "relationType": "reports_to"})
					}
				}
				e := decode[struct{ Entities []any }](a.h.tb, a.do("kg__create_entities", map[string]any{"entities": entities}))
				r := decode[struct{ Relations []any }](a.h.tb, a.do("kg__create_relations", map[string]any{"relations": relations}))
				return imported{len(e.Entities), len(r.Relations)}
			},
			code: func(a *agent) any {
				a.manifest()
				a.step(find("read a text file", "fs", "signature"),
					find("create entities", "kg", "signature"),
					find("create relations", "kg", "signature"))
				return decode[imported](a.h.tb, string(a.run(fmt.Sprintf(`const rows = (await fs.read_text_file({path: %q})).content.trim().split("\n").slice(1).map(l => l.split(","));
const e = await kg.create_entities({entities: rows.map(([name, team, title]) => ({name, entityType: "person", observations: ["team: " + team, "title: " + title]}))});
const r = await kg.create_relations({relations: rows.filter(r => r[3]).map(([from, , , to]) => ({from, to, relationType: "reports_to"}))});
return {entities: e.entities.length, relations: r.relations.length};`, csvPath))))
			},
		},
		{
			name: "org-chart", kind: kindMedium,
			question: fmt.Sprintf("From the knowledge graph: who has the most direct reports, how many, and how many people are in %s's organisation (reporting to them directly or not)?", vp),
			want:     wantOrg(c, vp),
			direct: func(a *agent) any {
				g := decode[graph](a.h.tb, a.do("kg__read_graph", map[string]any{}))
				return g.org(vp)
			},
			code: func(a *agent) any {
				a.manifest()
				a.step(find("read the whole knowledge graph", "kg", "signature"))
				return decode[orgReport](a.h.tb, string(a.run(fmt.Sprintf(`const {relations} = await kg.read_graph({});
const reports = {};
for (const r of relations) if (r.relationType === "reports_to") (reports[r.to] ||= []).push(r.from);
const most = Math.max(...Object.values(reports).map(l => l.length));
const count = n => (reports[n] || []).reduce((s, m) => s + 1 + count(m), 0);
return {most: Object.keys(reports).filter(n => reports[n].length === most).sort(), reports: most, org: count(%q)};`, vp))))
			},
		},
		{
			name: "note-status", kind: kindLight,
			question: fmt.Sprintf("What are the title and status of %s?", lookup.rel()),
			want:     noteHead{lookup.title, lookup.status},
			direct: func(a *agent) any {
				return parseHead(content(a.h.tb, a.do("fs__read_text_file", map[string]any{"path": path.Join(root, lookup.rel()), "head": 3})))
			},
			code: func(a *agent) any {
				a.manifest()
				a.step(find("read the first lines of a text file", "fs", "signature"))
				return parseHead(decode[string](a.h.tb, string(a.run(fmt.Sprintf(`(await fs.read_text_file({path: %q, head: 3})).content`, path.Join(root, lookup.rel()))))))
			},
		},
		{
			name: "manager", kind: kindLight,
			question: fmt.Sprintf("Who is %s's manager, according to the knowledge graph?", ic.name),
			want:     ic.manager,
			direct: func(a *agent) any {
				return decode[graph](a.h.tb, a.do("kg__open_nodes", map[string]any{"names": []string{ic.name}})).manager(ic.name)
			},
			code: func(a *agent) any {
				a.manifest()
				a.step(find("open nodes by name", "kg", "signature"))
				return decode[string](a.h.tb, string(a.run(fmt.Sprintf(`(await kg.open_nodes({names: [%[1]q]})).relations.find(r => r.from === %[1]q && r.relationType === "reports_to").to`, ic.name))))
			},
		},
		{
			name: "sum", kind: kindLight,
			question: "What is 1234 + 5678, by the everything server's get-sum tool?",
			want:     6912.0,
			direct: func(a *agent) any {
				return parseSum(a.h.tb, decode[string](a.h.tb, a.do("everything__get_sum", map[string]any{"a": 1234, "b": 5678})))
			},
			code: func(a *agent) any {
				a.manifest()
				a.step(find("add two numbers", "everything", "signature"))
				return parseSum(a.h.tb, decode[string](a.h.tb, string(a.run(`await everything.get_sum({a: 1234, b: 5678})`))))
			},
		},
		{
			name: "weather", kind: kindLight,
			question: "What is the weather in Chicago, by the everything server's structured-content tool?",
			want:     weather{36, "Light rain / drizzle", 82},
			direct: func(a *agent) any {
				return decode[weather](a.h.tb, a.do("everything__get_structured_content", map[string]any{"location": "Chicago"}))
			},
			code: func(a *agent) any {
				a.manifest()
				a.step(find("structured content weather", "everything", "signature"))
				return decode[weather](a.h.tb, string(a.run(`await everything.get_structured_content({location: "Chicago"})`)))
			},
		},
	}
}

var (
	costLine = regexp.MustCompile(`(?m)^cost: (\d+) EUR$`)
	noteRef  = regexp.MustCompile(`see note-(\d+)`)
	sumText  = regexp.MustCompile(`is (-?[\d.]+)\.$`)
)

// readAll is how a direct agent reads every note: it lists them with
// search_files, then reads them all with one read_multiple_files. It
// returns each file's content by its path below root.
func readAll(a *agent, root string) map[string]string {
	a.h.tb.Helper()
	paths := strings.Split(content(a.h.tb, a.do("fs__search_files", map[string]any{"path": root, "pattern": "**/*.md"})), "\n")
	all := content(a.h.tb, a.do("fs__read_multiple_files", map[string]any{"paths": paths}))
	files := map[string]string{}
	for part := range strings.SplitSeq(all, "\n---\n") {
		p, text, ok := strings.Cut(part, ":\n")
		if !ok || !strings.HasPrefix(p, root+"/") {
			a.h.tb.Fatalf("read_multiple_files: part %.200q", part)
		}
		files[strings.TrimPrefix(p, root+"/")] = text
	}
	if len(files) != len(paths) {
		a.h.tb.Fatalf("read_multiple_files: %d files of %d", len(files), len(paths))
	}
	return files
}

// discoverFiles is what a code-mode agent reads before a program over
// the notes: the manifest, then the signatures of search_files (whose
// description says what it returns: full paths, one a line) and
// read_text_file.
func discoverFiles(a *agent) {
	a.manifest()
	a.step(find("find files matching a glob pattern", "fs", "signature"), find("read a text file", "fs", "signature"))
	if !strings.Contains(a.seen.String(), "Returns full paths to all matching items") {
		a.h.tb.Fatal("the agent has not read what search_files returns")
	}
}

func noteID(base string) int {
	id, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(base, "note-"), ".md"))
	return id
}

func parseCSV(s string) [][]string {
	var rows [][]string
	for i, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if i > 0 {
			rows = append(rows, strings.Split(l, ","))
		}
	}
	return rows
}

func parseHead(s string) noteHead {
	var h noteHead
	for l := range strings.SplitSeq(s, "\n") {
		if t, ok := strings.CutPrefix(l, "# "); ok {
			h.Title = t
		}
		if st, ok := strings.CutPrefix(l, "status: "); ok {
			h.Status = st
		}
	}
	return h
}

func parseSum(tb testing.TB, s string) float64 {
	tb.Helper()
	m := sumText.FindStringSubmatch(s)
	if m == nil {
		tb.Fatalf("get-sum said %q", s)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// graph is the memory server's knowledge graph, as the direct agent
// reads it.
type graph struct {
	Entities []struct {
		Name string `json:"name"`
	} `json:"entities"`
	Relations []struct {
		From         string `json:"from"`
		To           string `json:"to"`
		RelationType string `json:"relationType"`
	} `json:"relations"`
}

func (g graph) manager(name string) string {
	for _, r := range g.Relations {
		if r.From == name && r.RelationType == "reports_to" {
			return r.To
		}
	}
	return ""
}

func (g graph) org(head string) orgReport {
	reports := map[string][]string{}
	for _, r := range g.Relations {
		if r.RelationType == "reports_to" {
			reports[r.To] = append(reports[r.To], r.From)
		}
	}
	return orgOf(reports, head)
}

// orgOf answers the org-chart question from who reports to whom.
func orgOf(reports map[string][]string, head string) orgReport {
	var r orgReport
	for n, l := range reports {
		switch {
		case len(l) > r.Reports:
			r.Most, r.Reports = []string{n}, len(l)
		case len(l) == r.Reports:
			r.Most = append(r.Most, n)
		}
	}
	slices.Sort(r.Most)
	var count func(string) int
	count = func(n string) int {
		s := 0
		for _, m := range reports[n] {
			s += 1 + count(m)
		}
		return s
	}
	r.Org = count(head)
	return r
}

// The answers, from the generated values.

func wantMentions(c *corpus) []mention {
	var out []mention
	for _, n := range c.notes {
		if n.mentions > 0 {
			out = append(out, mention{n.rel(), n.mentions})
		}
	}
	return out
}

func wantCosts(c *corpus) costReport {
	r := costReport{Teams: map[string]int{}}
	for _, n := range c.notes {
		s := 0
		for _, v := range n.costs {
			s += v
		}
		r.Teams[n.team] += s
		if s > r.TopCost {
			r.Top, r.TopCost = n.rel(), s
		}
	}
	return r
}

func wantBroken(c *corpus) []brokenRef {
	var out []brokenRef
	for _, n := range c.notes {
		var missing []int
		for _, id := range n.refs {
			if c.retired[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			out = append(out, brokenRef{n.rel(), missing})
		}
	}
	return out
}

func wantOrg(c *corpus, head string) orgReport {
	reports := map[string][]string{}
	for _, p := range c.people {
		if p.manager != "" {
			reports[p.manager] = append(reports[p.manager], p.name)
		}
	}
	return orgOf(reports, head)
}
