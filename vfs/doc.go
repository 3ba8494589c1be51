// Package vfs renders the tool catalogue (a *tools.Registry) as a
// read-only file tree at four disclosure levels, so that an agent pays
// context only for the tools it uses:
//
//	manifest.json              level 0: categories, tool counts, how to go deeper
//	<category>/index.json      level 1: each tool's name, summary, caller hints, related tools
//	<category>/<tool>.d.ts     level 2: the TypeScript declaration of the call
//	<category>/<tool>.md       level 3: everything — description, schemas, examples, errors, notes, source
//
// A category of more than GroupThreshold tools whose tools carry groups
// (tools.Tool.Group, such as an OpenAPI document's tags) is shown in
// groups: its index.json lists the groups, and each group is a directory
// with an index.json of its own (see GroupThreshold).
//
// FS implements io/fs.FS, fs.ReadDirFS, fs.ReadFileFS and fs.StatFS with
// io/fs path rules. A tree shows one caller's view of the registry
// (tools.View: the global tools, the caller's own, within its toolset);
// New gives the zero Caller's and For any other's, and a tool outside the
// caller's view exists at no level, not even as a related tool or a
// suggestion. Content is generated on first read and kept with the view
// (tools.View.Memo): callers who share a view share it, and a caller's
// files are rendered again only after a change it can see. Read, Clean and
// NotFoundError serve agent-facing callers (read_tools), which accept
// "/github/index.json" as well as "github/index.json", list directories
// with sizes, and answer a missing path with its nearest existing parent,
// that parent's listing and a "did you mean" suggestion.
//
// Budgets: the manifest stays within ManifestBudget bytes and each
// index.json within IndexBudget bytes; when a catalogue is too large for
// the full form, the renderer drops detail in a fixed order (see
// ManifestBudget and IndexBudget) and says so in the file.
//
// Package vfs does not own the tool model or search (packages tools and
// tools/search), and does not speak MCP (package mcpserver).
package vfs
