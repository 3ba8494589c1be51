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
// tools.paginate), and pages on the ways a program can run (plan: dry
// runs; tasks: long runs). Tools marked tools.Tool.Runtime are shown there, one
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
	// dts and md are a built-in page's files; about is what search
	// indexes of it besides its name and summary (the whole page would
	// match too much).
	dts, md, about string
}

// builtinRuntime are the runtime's built-in pages: the helpers every
// program has, defined by the executor's prelude rather than registered
// as tools (progress, tools), and the ways a program can run, which
// execute_code and the MCP server provide (plan, tasks).
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
		name:    "plan",
		summary: "execute_code {mode: \"plan\"}: a dry run whose writes are recorded, each returning {planned: true, id}; execute_code {plan_id} commits them, once",
		about:   "Preview the changes a program would make before making any, review its writes, and make them later exactly once: a batch of writes approved at once. A plan expires.",
		dts: `/**
 * What a call of a tool that is not read-only returns in a dry run
 * (execute_code {code, mode: "plan"}): the call was recorded as step id of
 * the plan, not made. Reads run for real.
 */
interface Planned {
  planned: true;
  /** The step's number in the plan, from 1. */
  id: number;
}

/** The record's plan after a dry run: commit it with execute_code {plan_id}. */
interface PlanRecord {
  plan_id: string;
  /** After this (sandbox.plan_ttl after the dry run) the plan cannot be committed. */
  expires_at: string;
  /** The writes in order, their arguments filtered as any output. */
  steps: { step: number; tool: string; args: Record<string, unknown> }[];
}

/** The record's plan after a commit: each step's outcome. */
interface PlanOutcome {
  plan_id: string;
  steps: { step: number; tool: string; status: "ok" | "error" | "not_run"; error_code?: string }[];
}
`,
		md: "# plan: dry runs\n\n" +
			"`execute_code {code, mode: \"plan\"}` runs the program with every call of a tool that is not known to be read-only **recorded instead of made** (an upstream server's tools count as writes unless its configuration trusts its annotations, `trust_annotations`); `execute_code {plan_id}` then makes exactly those calls, in order, once.\n\n" +
			"- In the dry run a write returns the placeholder `{planned: true, id}` (`Planned` in runtime/plan.d.ts), `id` being its step number; reads run for real, and so do `llm`, `approval` and `cache`. A skill's writes are recorded too. Write the program so it does not depend on what a write returns.\n" +
			"- The record's `plan` holds `plan_id`, `expires_at` and `steps` (`[{step, tool, args}]`), the arguments filtered as any output: a value read from a tool or a secret shows as a token such as `⟦email:7f3a9c21⟧`, and the commit sends the real value. Nothing was written.\n" +
			"- Commit with `execute_code {plan_id}` and no code, before `expires_at` (`sandbox.plan_ttl`, default 1 h), as the principal that planned it. The steps run in order and stop at the first failure (`error.kind` `plan_step_failed`; the record's steps say `ok`, `error` or `not_run`); the result lists the steps' results.\n" +
			"- Calls that `approval.required_for` names ask the user when the plan is committed, not when it is recorded; a declined step fails the commit there.\n" +
			"- A plan runs once and cannot be changed: a second commit is refused (`plan_committed`), an expired one (`plan_expired`), another principal's or an unknown id (`plan_not_found`), one altered in the store (`plan_altered`). A plan holds at most 1000 writes; plans need the store (`no_store`).\n" +
			"- The audit log keeps the dry run (mode `plan`), each commit (mode `commit`, refused ones too) and each recorded call (`planned`), linked by the plan's hash.\n\n" +
			"```js\n// execute_code {mode: \"plan\", code:}\nconst stale = (await crm.search_contacts({query: \"stale\"})).contacts;\nfor (const c of stale) await crm.delete_contact({id: c.id}); // recorded: {planned: true, id}\nreturn stale.length;\n// then, once the plan looks right: execute_code {plan_id: \"plan_…\"}\n```\n",
	},
	{
		name:    "tasks",
		summary: "long runs as MCP tasks: the client polls for the record, up to sandbox.max_task_duration; a run waiting on the user or a model gives its slot back",
		about:   "A long-running program lasting minutes, beyond the time limit of an ordinary call: the client starts it as a task, polls its status, and gets or cancels it.",
		dts: `// A program runs the same as an MCP task: there is nothing to call. The
// client asks for a task (tools/call of execute_code with params.task) and
// polls for the record; see runtime/tasks.md.

/** What tasks/get tells the client of a task run. */
interface TaskStatus {
  taskId: string;
  status: "working" | "input_required" | "completed" | "failed" | "cancelled";
  /** How long the task and its record are kept, in ms. */
  ttl: number;
}
`,
		md: "# tasks: long runs\n\n" +
			"A run longer than an ordinary call may last (`sandbox.max_timeout`) runs as an MCP task (protocol 2025-11-25). The program is the same; the client decides.\n\n" +
			"- The client sends `execute_code` with `task: {}` in the request's params and gets a task handle at once; it polls `tasks/get`, fetches the run record with `tasks/result` (the record an ordinary call returns), may cancel the run with `tasks/cancel`, and lists its tasks with `tasks/list`.\n" +
			"- A task run may last up to `sandbox.max_task_duration` (default 10 min) in place of `sandbox.max_timeout`; `timeout_ms` still shortens it. Its record is kept `[tasks] result_ttl` (default 10 min) after the run ends.\n" +
			"- A task is its principal's: another principal cannot get, fetch, cancel or list it. Tasks live in the memory of the instance that started them; a restart loses them.\n" +
			"- While a run waits on the user (`approval.request`, a call that needs approval) or the client's model (`llm.call`), it gives its execution slot back to the pool; at most `[tasks] max_waiting` runs (default twice the pool) wait so at once.\n" +
			"- Report how far a long run got with `progress(message, fraction)` (runtime/progress.md); the client sees it as MCP progress.\n",
	},
	{
		name:    "tools",
		summary: "tools.call(name, args) calls a tool by its qualified name; tools.paginate(fn, args, {max}) gathers every page of a list operation",
		dts: `declare namespace tools {
  /** Calls a tool by its qualified name, "category.tool". */
  function call(name: string, args?: Record<string, unknown>): Promise<unknown>;
  /**
   * Calls a list operation page after page and resolves to all its items,
   * at most opts.max (default 1000), the pages at most opts.maxBytes bytes
   * (default 8 MB; pagination_limit beyond). Each page is a call of the
   * operation: approvals, data-flow rules and dry runs apply page by page;
   * in a dry run, an operation that is not read-only resolves to its
   * Planned placeholder. Works for categories that provide a paginate tool
   * (OpenAPI sources).
   */
  function paginate(fn: ((args?: any) => Promise<unknown>) | string, args?: Record<string, unknown>, opts?: { max?: number; maxBytes?: number }): Promise<unknown[]>;
}
`,
		md: "# tools\n\nHelpers for calling tools.\n\n- `await tools.call(name, args)` calls a tool by its qualified name (`\"github.search_issues\"`), for names that are not identifiers or chosen at run time.\n- `await tools.paginate(fn, args, {max, maxBytes})` calls a list operation page after page and resolves to all its items, at most `max` (default 1000): `await tools.paginate(github.issues_list_for_repo, {owner, repo}, {max: 500})`. The first argument is the tool's function or its qualified name; each page is fetched by the `paginate` tool of its category, which the sources that paginate (OpenAPI documents) provide, and reaches the program as it comes. The pages may hold at most `maxBytes` (default 8 MB) together: beyond, the call fails with `pagination_limit`; ask for fewer items or more bytes (the run's heap bounds what a program holds).\n- Each page is a call of the operation itself, through the same checks as any call: a call `approval.required_for` names asks the user for each page, the data-flow rules check each page's arguments, and in a dry run an operation that is not read-only is recorded, not paged: `tools.paginate` resolves to its placeholder `{planned: true, id}`.\n",
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

// Pages returns the runtime's built-in pages (plan, progress, tasks,
// tools) for package search to rank with the tools (search.PageDocs):
// each as a tools.Tool that is not registered, named as Signature and Full
// know it, with its index line as the summary and a few sentences on
// what it is for as the description. A registered namespace of the same name hides the page.
func (f *FS) Pages() []*tools.Tool { return f.current().pages }

// builtinPages describes the built-in namespaces among list as Pages does.
func builtinPages(list []*runtimeNS) []*tools.Tool {
	var out []*tools.Tool
	for _, ns := range list {
		if len(ns.tools) == 0 {
			out = append(out, &tools.Tool{Name: ns.name, Summary: ns.summary, Description: ns.about, Runtime: true})
		}
	}
	return out
}

// builtinPage returns the built-in namespace name when no tool has the
// name.
func (s *snapshot) builtinPage(name string) *runtimeNS {
	if ns := s.rtByName[name]; ns != nil && len(ns.tools) == 0 && s.tools[name] == nil {
		return ns
	}
	return nil
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
	b.WriteString(quote("Every program has these besides the catalogue's namespaces, called like tools; plan and tasks are ways to run one."))
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
