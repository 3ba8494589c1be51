package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/codecell/codecell/tools/catalog"
	"github.com/codecell/codecell/tools/openapi"
	"github.com/codecell/codecell/tools/upstream"
)

// Every tool source is served as a category of its own, named after it.
// A name that collides — with one of codecell's own categories, with a
// name every program has, or with another source — is not dropped: the
// source is served under another category, said in the log, the manifest
// (whose line names the source) and config check.

// builtinCategories are the names a source's category must not take,
// with what they are: codecell's own categories, the namespaces of the
// programs' runtime, the tree's runtime directory, and the lower-case
// globals every program has, which a namespace of that name would not
// replace. A test holds that it names every category of a server and
// every such global.
var builtinCategories = map[string]string{
	"util":      "codecell's own category",
	"memory":    "codecell's own category",
	"workspace": "codecell's own category",
	"skills":    "codecell's own category",
	"llm":       "a namespace of the programs' runtime",
	"approval":  "a namespace of the programs' runtime",
	"cache":     "a namespace of the programs' runtime",
	"runtime":   "the directory of the programs' runtime",
	"tools":     "a name every program has (tools.call)",
	"progress":  "a name every program has (progress())",
	"console":   "a name every program has (console.log)",
	"args":      "a name every program has (a skill's arguments)",
	"eval":      "a JavaScript global",
	"escape":    "a JavaScript global",
	"unescape":  "a JavaScript global",
	"undefined": "a JavaScript global",
}

// placed is the category a source is served under.
type placed struct {
	category string
	// wanted is the category its name gives, when it was taken, and why
	// it was taken: "memory is codecell's own category".
	wanted, why string
}

// categoryPlan is the category of every source of a configuration.
type categoryPlan struct {
	upstream map[string]placed // by server name
	openAPI  map[string]placed // by [openapi.NAME]
}

// movedNotes says of each source whose name was taken where it is served
// and why, one line each, sorted: for the log, config check and
// config import-claude.
func (p categoryPlan) movedNotes(upstreamKey func(name string) string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(p.upstream)) {
		if pl := p.upstream[name]; pl.wanted != "" {
			out = append(out, fmt.Sprintf("the MCP server %s is served as the category %s: %s (set category in %s to choose another)",
				name, pl.category, pl.why, upstreamKey(name)))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.openAPI)) {
		if pl := p.openAPI[name]; pl.wanted != "" {
			out = append(out, fmt.Sprintf("the OpenAPI source %s is served as the category %s: %s (rename [openapi.%s] to choose another)",
				name, pl.category, pl.why, name))
		}
	}
	return out
}

// planCategories gives every source a category that nothing else has.
// Names are claimed in this order: codecell's own (builtinCategories),
// the catalogue's categories, the categories upstream servers set
// explicitly, the [openapi.NAME] sources by name, then the upstream
// servers by name. A source whose name is taken is served as its name
// with "_api" (an OpenAPI source) or "_server" (an MCP server) after it,
// then a number: an MCP server named memory, as Claude Desktop users name
// the reference memory server, becomes memory_server beside codecell's
// own memory. A category set explicitly that is taken is an error, keyed
// by from (where each server was configured). The Category of the
// servers whose name was taken is set to the one they get.
func planCategories(servers map[string]upstream.Server, from map[string]string, openAPI map[string]openapi.Config, catalogue []string) (categoryPlan, []error) {
	plan := categoryPlan{upstream: map[string]placed{}, openAPI: map[string]placed{}}
	taken := maps.Clone(builtinCategories)
	for _, c := range catalogue {
		if _, ok := taken[c]; !ok {
			taken[c] = "a category of the catalogue (server.catalog)"
		}
	}
	var errs []error
	explicit := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		c := servers[name].Category
		if c == "" {
			continue
		}
		if why, ok := taken[c]; ok {
			if _, builtin := builtinCategories[c]; builtin || !explicit[c] {
				errs = append(errs, configError{from[name] + ".category", fmt.Sprintf("%s is %s; choose another, such as %s", c, why, free(taken, c, "_server"))})
			} // two servers that set one category: upstream.CheckAll says so
			continue
		}
		taken[c] = "the category of the MCP server " + name
		explicit[c] = true
		plan.upstream[name] = placed{category: c}
	}
	claim := func(want, suffix, what string) placed {
		why, ok := taken[want]
		if !ok {
			taken[want] = what
			return placed{category: want}
		}
		got := free(taken, want, suffix)
		taken[got] = what
		return placed{category: got, wanted: want, why: want + " is " + why}
	}
	for _, name := range slices.Sorted(maps.Keys(openAPI)) {
		if openAPI[name].Disabled {
			continue
		}
		want := openapi.CategoryFor(name)
		if want == "" {
			continue // validateOpenAPI says why
		}
		plan.openAPI[name] = claim(want, "_api", "the category of [openapi."+name+"]")
	}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		s := servers[name]
		if s.Category != "" {
			continue
		}
		want := upstream.CategoryFor(name, s)
		if want == "" {
			continue // upstream.CheckAll says why
		}
		pl := claim(want, "_server", "the category of the MCP server "+name)
		if pl.wanted != "" {
			s.Category = pl.category
			servers[name] = s
		}
		plan.upstream[name] = pl
	}
	return plan, errs
}

// free is want with suffix after it, then a number, whichever is not
// taken, cut to a valid category's length.
func free(taken map[string]string, want, suffix string) string {
	for n := 1; ; n++ {
		tail := suffix
		if n > 1 {
			tail += "_" + strconv.Itoa(n)
		}
		c := want
		if len(c)+len(tail) > 64 {
			c = c[:64-len(tail)]
		}
		c += tail
		if _, ok := taken[c]; !ok {
			return c
		}
	}
}

// catalogueCategories are the categories of the catalogue server.catalog
// names, or none when it cannot be loaded (the server says why).
func catalogueCategories(path string) []string {
	if path == "" {
		return nil
	}
	cat, err := catalog.Load(path)
	if err != nil {
		return nil
	}
	set := map[string]bool{}
	for _, t := range cat.Tools() {
		set[t.Category()] = true
	}
	return slices.Sorted(maps.Keys(set))
}
