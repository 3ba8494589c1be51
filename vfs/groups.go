package vfs

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/codecell/codecell/tools"
)

// GroupThreshold is the number of tools above which a category whose
// tools carry groups (tools.Tool.Group) is shown in groups: its
// index.json then lists the groups, each a directory with an index.json
// of its own, so that no index grows past IndexBudget. A smaller
// category is shown flat, whatever its tools' groups.
//
// A grouped category's tree:
//
//	github/index.json                    the groups, with their tool counts, and the tools in none
//	github/repos/index.json              the tools of the group repos, and its subgroups
//	github/repos/branches/index.json     a subgroup
//	github/repos/branches/<tool>.d.ts    a tool's files, listed in its group's directory
//	github/<tool>.d.ts                   the same files under the category, where every tool's are
//
// A tool's files are always at <category>/<tool>.d.ts and .md (the path
// its name gives, which search and every "next" hint use); the copy in
// its group's directory is what a directory walk finds.
const GroupThreshold = 50

// group is a node of a grouped category's tree: the category itself (path
// "") or one of its groups.
type group struct {
	path   string // "", "repos" or "repos/branches"
	name   string // the last element of path
	tools  []*tools.Tool
	subs   []*group
	byName map[string]*group
	total  int // tools in this group and below
}

func newGroup(path string) *group {
	name := path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		name = path[i+1:]
	}
	return &group{path: path, name: name, byName: map[string]*group{}}
}

// buildGroups makes the group tree of c, or nil when c is shown flat. A
// category whose tools carry no groups (an MCP server's, however many
// tools it has) is grouped by the words of its tools' names
// (nameGroups), so that no index of it outgrows IndexBudget either.
func buildGroups(c *category) *group {
	if len(c.tools) <= GroupThreshold {
		return nil
	}
	c.groupOf = make(map[*tools.Tool]string, len(c.tools))
	grouped := false
	for _, t := range c.tools {
		c.groupOf[t] = t.Group
		grouped = grouped || t.Group != ""
	}
	if !grouped {
		nameGroups(c.tools, 0, "", c.groupOf)
	}
	root := newGroup("")
	for _, t := range c.tools {
		g := root
		if p := c.groupOf[t]; p != "" {
			for _, el := range strings.Split(p, "/") {
				sub := g.byName[el]
				if sub == nil {
					p := el
					if g.path != "" {
						p = g.path + "/" + el
					}
					sub = newGroup(p)
					g.byName[el] = sub
					g.subs = append(g.subs, sub)
				}
				g = sub
			}
		}
		g.tools = append(g.tools, t)
	}
	var count func(g *group) int
	count = func(g *group) int {
		sort.Slice(g.subs, func(i, j int) bool { return g.subs[i].name < g.subs[j].name })
		g.total = len(g.tools)
		for _, s := range g.subs {
			g.total += count(s)
		}
		return g.total
	}
	count(root)
	return root
}

// nameGroups groups tools that carry none by the words of their short
// names, word (the index of the word) on: the tools whose word is the
// same form a group named by it, a group larger than GroupThreshold is
// split by the next word, up to MaxGroupDepth levels; a word all the
// tools share makes no level of its own. Tools whose word no other tool
// has stay where they are, and when more than GroupThreshold do, they
// are put in groups part_1, part_2, … of GroupThreshold each, in name
// order. It records each tool's group path in into.
func nameGroups(ts []*tools.Tool, word int, path string, into map[*tools.Tool]string) {
	depth := 0
	if path != "" {
		depth = strings.Count(path, "/") + 1
	}
	if len(ts) <= GroupThreshold || depth >= tools.MaxGroupDepth || word >= 8 {
		for _, t := range ts {
			into[t] = path
		}
		return
	}
	join := func(el string) string {
		if path == "" {
			return el
		}
		return path + "/" + el
	}
	byWord := map[string][]*tools.Tool{}
	var order []string
	var loose []*tools.Tool
	for _, t := range ts {
		words := strings.Split(t.ShortName(), "_")
		if word >= len(words) || words[word] == "" {
			loose = append(loose, t)
			continue
		}
		w := words[word]
		if byWord[w] == nil {
			order = append(order, w)
		}
		byWord[w] = append(byWord[w], t)
	}
	if len(order) == 1 && len(loose) == 0 {
		nameGroups(ts, word+1, path, into) // a word they all share
		return
	}
	for _, w := range order {
		if g := byWord[w]; len(g) > 1 {
			nameGroups(g, word+1, join(w), into)
		} else {
			loose = append(loose, g...)
		}
	}
	if len(loose) <= GroupThreshold {
		for _, t := range loose {
			into[t] = path
		}
		return
	}
	sort.Slice(loose, func(i, j int) bool { return loose[i].Name < loose[j].Name })
	width := len(fmt.Sprint((len(loose) + GroupThreshold - 1) / GroupThreshold))
	for i, t := range loose {
		into[t] = join(fmt.Sprintf("%s%0*d", partPrefix, width, i/GroupThreshold+1))
	}
}

// partPrefix names the groups nameGroups makes of tools in name order.
const partPrefix = "part_"

// about is a group's one-line description in listings: how many tools it
// holds, and how many of them are in its subgroups.
func (g *group) about() string {
	plural := func(n int, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", n, many)
	}
	s := plural(g.total, "tool", "tools")
	switch {
	case len(g.subs) == 0 && strings.HasPrefix(g.name, partPrefix) && len(g.tools) > 0:
		s += ", " + g.tools[0].ShortName() + " to " + g.tools[len(g.tools)-1].ShortName()
	case len(g.subs) == 0:
	case len(g.tools) == 0:
		s += " in " + plural(len(g.subs), "group", "groups")
	default:
		s += fmt.Sprintf(": %d here, the rest in %s", len(g.tools), plural(len(g.subs), "group", "groups"))
	}
	return s
}

// lookupGrouped resolves rest, a path under the grouped category c: a
// group's directory or index, or a tool's files, which are found under
// the category and under their own group.
func (c *category) lookupGrouped(rest string) node {
	g := c.root
	elems := strings.Split(rest, "/")
	i := 0
	for ; i < len(elems); i++ {
		sub := g.byName[elems[i]]
		if sub == nil {
			break
		}
		g = sub
	}
	switch len(elems) - i {
	case 0:
		return node{kind: kindGroup, cat: c, grp: g}
	case 1:
	default:
		return node{}
	}
	file := elems[i]
	if file == IndexFile {
		return node{kind: kindIndex, cat: c, grp: g}
	}
	for _, k := range []struct {
		ext  string
		kind nodeKind
	}{{SignatureExt, kindSignature}, {FullExt, kindFull}} {
		short, ok := strings.CutSuffix(file, k.ext)
		if !ok {
			continue
		}
		t := c.byShort[short]
		if t == nil || (g != c.root && c.groupOf[t] != g.path) {
			return node{}
		}
		return node{kind: k.kind, cat: c, tool: t}
	}
	return node{}
}

// groupEntries lists a grouped category's directory: its index, its
// subgroups and the files of its own tools.
func (s *snapshot) groupEntries(dir string, c *category, g *group) []fs.DirEntry {
	out := []fs.DirEntry{s.fileEntry(dir+"/"+IndexFile, node{kind: kindIndex, cat: c, grp: g})}
	for _, sub := range g.subs {
		out = append(out, dirEntry{info: &fileInfo{name: sub.name, dir: true}})
	}
	for _, t := range g.tools {
		out = append(out,
			s.fileEntry(dir+"/"+t.ShortName()+SignatureExt, node{kind: kindSignature, cat: c, tool: t}),
			s.fileEntry(dir+"/"+t.ShortName()+FullExt, node{kind: kindFull, cat: c, tool: t}))
	}
	return out
}

// renderGroupIndex renders the index.json of a grouped category's
// directory g: its subgroups with their counts, then its own tools as a
// flat category's index lists them, trimmed alike to IndexBudget. When
// the subgroups alone are too many, they are listed by name, and at last
// only as many as fit, the file saying how many are left out (the
// directory's listing has them all).
func renderGroupIndex(s *snapshot, c *category, g *group) []byte {
	var out []byte
	for _, namesOnly := range []bool{false, true} {
		for _, st := range indexSteps {
			out = groupIndexJSON(s, c, g, namesOnly, len(g.subs), st)
			if len(out) <= IndexBudget {
				return out
			}
		}
	}
	last := indexSteps[len(indexSteps)-1]
	for keep := len(g.subs) - 1; keep >= 0; keep-- {
		if out = groupIndexJSON(s, c, g, true, keep, last); len(out) <= IndexBudget {
			break
		}
	}
	return out
}

func groupIndexJSON(s *snapshot, c *category, g *group, namesOnly bool, keep int, st indexStep) []byte {
	dir := c.groupDir(g)
	var b strings.Builder
	b.WriteString(`{"category":`)
	b.WriteString(quote(c.name))
	if g.path == "" {
		writeAbout(&b, c)
		writeStatus(&b, c)
	} else {
		if c.source != "" {
			b.WriteString(`,"source":`)
			b.WriteString(quote(sourceNote(c.source)))
		}
		b.WriteString(`,"group":`)
		b.WriteString(quote(g.path))
	}
	subs := g.subs[:min(keep, len(g.subs))]
	if len(subs) > 0 {
		if namesOnly {
			names := make([]string, len(subs))
			for i, sub := range subs {
				names[i] = quote(sub.name)
			}
			b.WriteString(`,"groups":[` + strings.Join(names, ",") + `]`)
		} else {
			b.WriteString(`,"groups":{`)
			for i, sub := range subs {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(quote(sub.name))
				b.WriteByte(':')
				b.WriteString(quote(sub.about()))
			}
			b.WriteByte('}')
		}
	}
	if len(g.tools) > 0 {
		b.WriteString(`,"tools":`)
		writeToolEntries(&b, s, c, g.tools, st.related, st.summary)
	}
	var notes []string
	if st.note != "" {
		notes = append(notes, st.note)
	}
	if namesOnly {
		notes = append(notes, "groups by name only")
	}
	if left := len(g.subs) - len(subs); left > 0 {
		notes = append(notes, fmt.Sprintf("%d more groups left out (read_tools %s/ lists them all)", left, dir))
	}
	if len(notes) > 0 {
		b.WriteString(`,"trimmed":`)
		b.WriteString(quote(strings.Join(notes, ", ") + "; each tool's .md has everything"))
	}
	b.WriteString(`,"next":`)
	b.WriteString(quote(fmt.Sprintf("%[2]s/<group>/index.json: a group's tools; %[1]s/<tool>.d.ts: signature; %[1]s/<tool>.md: full docs; call: await %[1]s.<tool>(args)", c.name, dir)))
	b.WriteString("}\n")
	return []byte(b.String())
}

// groupIndexes returns every directory of a grouped category, the
// category's own first, each with its tree path.
func (c *category) groupIndexes() []*group {
	var out []*group
	var walk func(g *group)
	walk = func(g *group) {
		out = append(out, g)
		for _, s := range g.subs {
			walk(s)
		}
	}
	walk(c.root)
	return out
}

// groupDir is the tree path of g in c.
func (c *category) groupDir(g *group) string {
	if g.path == "" {
		return c.name
	}
	return c.name + "/" + g.path
}
