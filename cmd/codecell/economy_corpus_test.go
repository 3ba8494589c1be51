//go:build economy

package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The data the context-economy tasks work on (economy_test.go), generated
// from fixed seeds: 300 Markdown notes of six teams, about 4.5 KB each,
// some of which mention a keyword, record costs or cite other notes (some
// of them retired), and a CSV of 400 people and their managers. The
// answers are worked out here, from the generated values, independently
// of what either agent reads.

// keyword is what the mentions task looks for; near misses (ledger-v1)
// are in the notes too.
const keyword = "ledger-v2"

var teams = []string{"billing", "infra", "mobile", "payments", "search", "web"}

// vocabulary is the notes' prose. It has no key-like word (token, key,
// secret, auth…): the output filter takes a long path with digits that
// follows one for a secret, and would hide it from the direct agent.
var vocabulary = strings.Fields(`
	the a an of to in for on with by from at as is are was be been will can should must may
	request response service client server cache queue worker job batch stream event message
	latency throughput error retry timeout deadline budget limit quota rate window backoff
	deploy rollout release canary rollback migration schema index table column row shard replica
	primary secondary region zone cluster node pod container image build pipeline test check
	alert page incident owner review approve merge branch commit change fix bug issue ticket
	customer account invoice payment refund charge card order cart checkout search query result
	ranking score filter sort page cursor lease session login user profile setting feature flag
	metric dashboard log trace span sample histogram counter gauge percentile median p99
	increase decrease reduce improve measure compare estimate plan draft decide agree block
	after before during while because although unless until since when where which that this
	old new slow fast large small daily weekly nightly manual automatic internal external`)

var firstNames = strings.Fields(`Ada Alan Barbara Brian Carla Chen Dana Diego Elena Emil Farah Felix Grace Hugo
	Ines Ivan Jana Jonas Kiri Lars Maya Milan Nadia Noah Olga Omar Priya Pablo Rosa Rui Sara Tomas Uma Victor Wen Yusuf`)

var lastNames = strings.Fields(`Rossi Okafor Lindqvist Tanaka Moreau Novak Haddad Silva Kowalski Brennan
	Ivanova Mensah Duarte Fischer Nakamura Oyelaran`)

// note is one generated note.
type note struct {
	id                          int
	team, title, author, status string
	lines                       []string // the whole file, line by line
	mentions                    int      // lines that contain the keyword
	costs                       []int    // the "cost: N EUR" lines, in order
	refs                        []int    // the notes it cites, in order
}

// rel is the note's path below the corpus root.
func (n note) rel() string { return fmt.Sprintf("%s/note-%03d.md", n.team, n.id) }

// person is one row of people.csv.
type person struct {
	name, team, title, manager string
}

// corpus is the generated data and where it lies.
type corpus struct {
	root    string
	notes   []note // by path
	retired map[int]bool
	people  []person
	bytes   int // of the notes
	csv     int // bytes of people.csv
}

// peopleCSV is people.csv's path below the root.
const peopleCSV = "people.csv"

// writeCorpus generates the data into root.
func writeCorpus(tb testing.TB, root string) *corpus {
	tb.Helper()
	c := &corpus{root: root, retired: map[int]bool{}}
	c.people = genPeople(rand.New(rand.NewPCG(7, 2026)))
	r := rand.New(rand.NewPCG(11, 2026))
	ids := r.Perm(320)
	for _, i := range ids[300:] {
		c.retired[i+1] = true
	}
	authors := c.people[7:] // managers and engineers write the notes
	for id := 1; id <= 320; id++ {
		if c.retired[id] {
			continue
		}
		c.notes = append(c.notes, genNote(r, id, authors))
	}
	slices.SortFunc(c.notes, func(a, b note) int { return strings.Compare(a.rel(), b.rel()) })
	for _, n := range c.notes {
		text := strings.Join(n.lines, "\n") + "\n"
		c.bytes += len(text)
		writeFile(tb, filepath.Join(root, n.rel()), text)
	}
	var csv strings.Builder
	csv.WriteString("name,team,title,manager\n")
	for _, p := range c.people {
		fmt.Fprintf(&csv, "%s,%s,%s,%s\n", p.name, p.team, p.title, p.manager)
	}
	c.csv = csv.Len()
	writeFile(tb, filepath.Join(root, peopleCSV), csv.String())
	return c
}

func writeFile(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// genPeople makes an organisation of 400: a CEO, a VP per team, six
// managers under each VP, and engineers under the managers.
func genPeople(r *rand.Rand) []person {
	var names []string
	for _, l := range lastNames {
		for _, f := range firstNames {
			names = append(names, f+" "+l)
		}
	}
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	names = names[:400]
	people := []person{{name: names[0], team: "exec", title: "CEO"}}
	for i, t := range teams {
		people = append(people, person{name: names[1+i], team: t, title: "VP", manager: names[0]})
	}
	var managers []person
	for i := range 36 {
		vp := people[1+r.IntN(len(teams))]
		m := person{name: names[7+i], team: vp.team, title: "Manager", manager: vp.name}
		managers = append(managers, m)
	}
	people = append(people, managers...)
	titles := []string{"Engineer", "Engineer", "Engineer", "Designer", "Analyst"}
	for _, n := range names[43:] {
		m := managers[r.IntN(len(managers))]
		people = append(people, person{name: n, team: m.team, title: titles[r.IntN(len(titles))], manager: m.name})
	}
	return people
}

// genNote makes one note of 45 to 85 lines of prose.
func genNote(r *rand.Rand, id int, authors []person) note {
	a := authors[r.IntN(len(authors))]
	n := note{
		id:     id,
		team:   teams[r.IntN(len(teams))],
		author: a.name,
		status: []string{"open", "open", "closed", "blocked"}[r.IntN(4)],
	}
	n.title = capitalize(sentence(r, 3+r.IntN(4)))
	body := make([]string, 45+r.IntN(41))
	for i := range body {
		body[i] = capitalize(sentence(r, 7+r.IntN(9))) + "."
	}
	// A fifth of the notes are about the keyword, on one to six lines; a
	// few others mention its predecessor.
	if r.IntN(100) < 22 {
		for _, i := range r.Perm(len(body))[:1+r.IntN(6)] {
			body[i] = strings.TrimSuffix(body[i], ".") + " for " + keyword + "."
			n.mentions++
		}
	} else if r.IntN(100) < 15 {
		i := r.IntN(len(body))
		body[i] = strings.TrimSuffix(body[i], ".") + " on ledger-v1."
	}
	// Citations first, so that none lands on a cost line.
	for range r.IntN(3) {
		ref := 1 + r.IntN(320)
		n.refs = append(n.refs, ref)
		i := r.IntN(len(body))
		body[i] = strings.TrimSuffix(body[i], ".") + fmt.Sprintf(" (see note-%03d).", ref)
	}
	for range r.IntN(4) {
		cost := 100 + r.IntN(9900)
		n.costs = append(n.costs, cost)
		body = slices.Insert(body, r.IntN(len(body)+1), fmt.Sprintf("cost: %d EUR", cost))
	}
	n.lines = append([]string{"# " + n.title, "author: " + n.author, "status: " + n.status, "team: " + n.team, ""}, body...)
	return n
}

func sentence(r *rand.Rand, words int) string {
	w := make([]string, words)
	for i := range w {
		w[i] = vocabulary[r.IntN(len(vocabulary))]
	}
	return strings.Join(w, " ")
}

func capitalize(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
