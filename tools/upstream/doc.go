// Package upstream is the tool source for the MCP servers a user already
// runs: it connects to each configured server (a child process over stdio,
// or Streamable HTTP or SSE), registers the server's tools in a
// tools.Registry under the server's category, keeps them current
// (notifications/tools/list_changed, restart and reconnect with backoff),
// reports a server that cannot be reached as unavailable with the reason,
// forwards calls (deadline, cancellation, progress, per-server concurrency)
// and turns their results into the JSON a program expects. Close ends
// every connection and every child process it started.
//
// The configuration is Claude Desktop's mcpServers format (Server, with
// ParseJSON for whole files) plus codecell's settings per server. Values
// of ${VAR} in env, headers and args come from a lookup function the
// caller gives; children get a minimal environment (DefaultEnvironment)
// plus their configured env, never the whole environment of codecell.
//
// What a server sends is not trusted: each message is bounded while it is
// read (Server.MaxResponseBytes; a larger result fails its call with
// upstream_too_large, see limit.go), its stderr and log notifications are
// logged rate-limited and scrubbed (Config.Scrub), a tool whose name cannot
// be registered is skipped, and where several principals call
// (Config.Shared) one holds at most its share of a server's calls in
// flight (tools.Slots). A stdio child is started through Config.Confine,
// when the caller gives one (codecell's Landlock shim), unless the server
// is Unconfined.
//
// Names: an upstream tool "get-sum" of the server "everything" is
// registered as everything.get_sum, with the original name kept as an
// alias, so everything["get-sum"] and tools.call("everything.get-sum")
// work too. See ToolNames for the rules and how collisions are resolved.
//
// Result shapes: for a tool that declares no output schema, the source
// learns the shape of its results from the results it returns, never from
// errors (tools.Inferrer), and registers the tool again with that schema
// as its tools.Tool.InferredOutput, which the catalogue shows marked as
// inferred — a hint, never checked against results nor advertised as an
// output schema. Results are observed off the call's path by one
// goroutine, at most 32 per tool and none once 8 in a row left the shape
// as it was; with Config.Shapes what was learned survives restarts, and
// it is learned again when the server's version or the tool's input
// schema changes.
//
// It does not speak MCP to codecell's own clients (package mcpserver),
// render the catalogue (package vfs) or filter results (package filter):
// upstream results pass the same gate and filter as every other tool's.
package upstream
