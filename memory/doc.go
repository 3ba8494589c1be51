// Package memory owns codecell's durable state: one SQLite database (WAL,
// sqlite-vec and FTS5) that holds the agents' long-term memory and the
// server's own records.
//
// Memory: memories in four layers (episodic events, semantic facts,
// procedural how-tos, prospective tasks), a knowledge graph of entities and
// relations that memories link to, hybrid recall (vector KNN fused with
// FTS5 BM25 by reciprocal rank fusion, optionally recency-weighted, with a
// binary-quantized coarse pass for large stores), consolidation of
// near-duplicates, and the embedders that turn text into vectors: an
// offline hashing embedder and an OpenAI-compatible /v1/embeddings client.
// Its operations are exposed as tools in the "memory" category
// (Store.Tools); workspace files are tools in the "workspace" category
// (Store.WorkspaceTools).
//
// Server state: the audit log of executions and tool calls, stored results
// (zstd-compressed blobs), workspace files and skills, each scoped to a
// principal, with retention enforced by Store.Prune. Export and Import move
// what agents stored in and out as JSONL.
//
// Everything a call does is scoped to tools.CallerFrom(ctx).Principal; the
// empty principal is the local user.
//
// The package does not run code (skills are stored, not executed: package
// executor runs them), does not speak MCP or render resources (package
// mcpserver), and starts no goroutines of its own: pruning runs when the
// owner calls Prune.
package memory
