// Package executor runs untrusted JavaScript and TypeScript programs in
// QuickJS (modernc.org/quickjs, pure Go) and returns a record of each run.
//
// It owns the sandbox: a pool that gives every run a fresh VM prepared in
// the background, the prelude that installs tool namespaces (util.echo),
// tools.call, console and progress, the bridge that turns tool calls into
// concurrent Go calls through a Dispatcher, TypeScript stripping with
// esbuild, and the limits — deadline, heap, stack, code size, tool calls,
// console output, result size and queue wait — each reported as its own
// error Kind.
//
// It imports no other codecell package: tools reach it only through the
// Dispatcher interface and a Layout of function names. It does not filter
// results (package filter) or speak MCP (package mcpserver).
//
// A program has no file system, network, timers or process access; the
// only way out is a tool call.
package executor
