package vfs

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/codecell/codecell/tools"
)

// RuntimeDir is the directory of the programs' runtime: the namespaces a
// program has besides the catalogue's (llm, approval, cache, progress,
// tools.paginate). Tools marked tools.Tool.Runtime are shown there, one
// namespace per category, instead of as categories of their own:
//
//	runtime/index.json   level 1: each runtime namespace, one line
//	runtime/<ns>.d.ts    level 2: the namespace's declarations
//	runtime/<ns>.md      level 3: its full pages
//
// A catalogue category named "runtime" is hidden by it.
const RuntimeDir = "runtime"

// runtimeNS is one namespace of the runtime: registered runtime tools of
// one category, or a helper the executor's prelude defines (builtin).
type runtimeNS struct {
	name    string
	summary string
	tools   []*tools.Tool
	// dts and md are a built-in helper's files.
	dts, md string
}

// builtinRuntime are the helpers every program has, defined by the
// executor's prelude rather than registered as tools.
var builtinRuntime = []runtimeNS{
	{
		name:    "progress",
		summary: "progress(message, fraction?): report how far the program got; the client sees it as MCP progress",
		dts: `declare function progress(
  /** What the program is doing; cut to 1 KiB. */
  message: string,
  /** How far it got, 0 to 1; leave out when unknown. */
  fraction?: number,
): void;
`,
		md: "# progress\n\n`progress(message, fraction?)` reports how far the program got. The client sees it as an MCP progress notification when it asked for progress (a `progressToken`); otherwise it is dropped. It returns at once.\n\n- Messages are filtered like the result and cut to 1 KiB.\n- At most 500 reports per run reach the client, none closer than 10 ms apart unless `fraction` is 1.\n\n```js\nfor (let i = 0; i < ids.length; i++) {\n  progress(`item ${i + 1} of ${ids.length}`, (i + 1) / ids.length);\n  await crm.update({id: ids[i]});\n}\n```\n",
	},
	{
		name:    "tools",
		summary: "tools.call(name, args) calls a tool by its qualified name; tools.paginate(fn, args, {max}) gathers every page of a list operation",
		dts: `declare namespace tools {
  /** Calls a tool by its qualified name, "category.tool". */
  function call(name: string, args?: Record<string, unknown>): Promise<unknown>;
  /**
   * Calls a list operation page after page and resolves to all its items,
   * at most opts.max. Works for categories that provide a paginate tool
   * (OpenAPI sources).
   */
  function paginate(fn: ((args?: any) => Promise<unknown>) | string, args?: Record<string, unknown>, opts?: { max?: number }): Promise<unknown[]>;
}
`,
		md: "# tools\n\nHelpers for calling tools.\n\n- `await tools.call(name, args)` calls a tool by its qualified name (`\"github.search_issues\"`), for names that are not identifiers or chosen at run time.\n- `await tools.paginate(fn, args, {max})` calls a list operation page after page and resolves to all its items, at most `max`: `await tools.paginate(github.issues_list_for_repo, {owner, repo}, {max: 500})`. The first argument is the tool's function or its qualified name; the pages are fetched by the `paginate` tool of its category, which the sources that paginate (OpenAPI documents) provide.\n",
	},
}

// buildRuntime gathers the runtime namespaces of a view's runtime tools
// (rt, by category) with the built-in helpers, sorted by name.
func buildRuntime(v *tools.View, rt map[string][]*tools.Tool) ([]*runtimeNS, map[string]*runtimeNS) {
	byName := map[string]*runtimeNS{}
	for i := range builtinRuntime {
		b := builtinRuntime[i]
		byName[b.name] = &b
	}
	for name, ts := range rt {
		ns := &runtimeNS{name: name, summary: v.CategorySummary(name), tools: ts}
		if ns.summary == "" && len(ts) > 0 {
			ns.summary = ts[0].Summary
		}
		byName[name] = ns // a registered namespace wins over a built-in of its name
	}
	list := make([]*runtimeNS, 0, len(byName))
	for _, ns := range byName {
		list = append(list, ns)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].name < list[j].name })
	return list, byName
}

// runtimeLine is the one line index.json gives a namespace: its calls
// and what it is for.
func (ns *runtimeNS) line() string {
	if len(ns.tools) == 0 {
		return ns.summary
	}
	names := make([]string, len(ns.tools))
	for i, t := range ns.tools {
		names[i] = ns.name + "." + t.ShortName()
	}
	return strings.Join(names, ", ") + ": " + ns.summary
}

// runtimePath returns the tree path of a runtime namespace's file.
func runtimePath(ns, ext string) string { return RuntimeDir + "/" + ns + ext }

// lookupRuntime resolves a path under RuntimeDir ("" for the directory).
func (s *snapshot) lookupRuntime(rest string, nested bool) node {
	if !nested {
		return node{kind: kindRuntime}
	}
	if rest == IndexFile {
		return node{kind: kindRuntimeIndex}
	}
	for _, e := range []struct {
		ext  string
		kind nodeKind
	}{{SignatureExt, kindRuntimeSignature}, {FullExt, kindRuntimeFull}} {
		if name, ok := strings.CutSuffix(rest, e.ext); ok {
			if ns := s.rtByName[name]; ns != nil {
				return node{kind: e.kind, rt: ns}
			}
		}
	}
	return node{}
}

func (s *snapshot) runtimeEntries() []fs.DirEntry {
	out := []fs.DirEntry{s.fileEntry(RuntimeDir+"/"+IndexFile, node{kind: kindRuntimeIndex})}
	for _, ns := range s.runtime {
		out = append(out,
			s.fileEntry(runtimePath(ns.name, SignatureExt), node{kind: kindRuntimeSignature, rt: ns}),
			s.fileEntry(runtimePath(ns.name, FullExt), node{kind: kindRuntimeFull, rt: ns}))
	}
	return out
}

// renderRuntimeIndex renders runtime/index.json: each namespace, one line.
func renderRuntimeIndex(s *snapshot) []byte {
	var b strings.Builder
	b.WriteString(`{"runtime":{`)
	for i, ns := range s.runtime {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quote(ns.name))
		b.WriteByte(':')
		b.WriteString(quote(shorten(ns.line(), 240)))
	}
	b.WriteString(`},"about":`)
	b.WriteString(quote("Every program has these besides the catalogue's namespaces; call them like tools."))
	b.WriteString(`,"next":`)
	b.WriteString(quote("runtime/<ns>.d.ts: signatures; runtime/<ns>.md: full docs"))
	b.WriteString("}\n")
	return []byte(b.String())
}

// renderRuntimeSignature renders runtime/<ns>.d.ts: the declarations of
// the namespace's tools, one after another.
func renderRuntimeSignature(ns *runtimeNS) []byte {
	if len(ns.tools) == 0 {
		return []byte(ns.dts)
	}
	var b strings.Builder
	for i, t := range ns.tools {
		if i > 0 {
			b.WriteByte('\n')
		}
		d, err := Declaration(t)
		if err != nil {
			d = "// " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n"
		}
		b.WriteString(d)
	}
	return []byte(b.String())
}

// renderRuntimeFull renders runtime/<ns>.md: the full page of each of
// the namespace's tools.
func renderRuntimeFull(s *snapshot, ns *runtimeNS) []byte {
	if len(ns.tools) == 0 {
		return []byte(ns.md)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Runtime namespace `%s`: %s\n\n", ns.name, ns.summary)
	for i, t := range ns.tools {
		if i > 0 {
			b.WriteString("\n")
		}
		b.Write(renderFull(s, t))
	}
	return []byte(b.String())
}

// manifestRuntime is the manifest's line on the runtime, in full.
func manifestRuntime(s *snapshot) string {
	names := make([]string, len(s.runtime))
	for i, ns := range s.runtime {
		names[i] = ns.name
	}
	return strings.Join(names, ", ") + ": " + RuntimeDir + "/" + IndexFile
}
