// Package memory owns codecell's durable state: one SQLite database (WAL,
// sqlite-vec and FTS5) that holds the agents' long-term memory and the
// server's own records.
//
// Memory: memories in four layers (episodic events, semantic facts,
// procedural how-tos, prospective tasks), a knowledge graph of entities and
// relations that memories link to, hybrid recall (vector search fused with
// FTS5 BM25 by reciprocal rank fusion, optionally recency-weighted),
// consolidation of near-duplicates, and the embedders that turn text into
// vectors: an offline hashing embedder and an OpenAI-compatible
// /v1/embeddings client. Its operations are exposed as tools in the
// "memory" category (Store.Tools); workspace files are tools in the
// "workspace" category (Store.WorkspaceTools).
//
// Recall on a large store: vectors are ranked by a coarse pass over
// binary codes (sign random projections, Hamming distance) held in an
// in-process copy that follows the database through a change log
// (codeIndex), then re-scored with the full float32 vectors; exact scans
// (sqlite-vec's cosine distance) serve stores up to
// Config.ExactSearchLimit. Each principal's memories have a full-text
// index of their own (ftsindex.go), so that BM25's statistics, and with
// them the scores, come from the caller's memories only. The keyword
// ranking leaves out query words found in more than keywordCommonDocs of
// the caller's memories, which weigh little in BM25 but cost the most to
// score. RecallInput.Exact turns both shortcuts off.
//
// Server state: the audit log of executions and tool calls, stored results
// (zstd-compressed blobs), workspace files and skills, each scoped to a
// principal, with retention enforced by Store.Prune; and what tool sources
// learned of their tools' results (toolshapes.go), shared by every caller. A skill belongs to
// its owner, who may publish a fixed snapshot of it for every principal to
// call (skills.go). Export and Import move what agents stored in and out
// as JSONL.
//
// Everything a call does is scoped to tools.CallerFrom(ctx).Principal; the
// empty principal is the local user.
//
// The package does not run code (skills are stored, not executed: package
// executor runs them) and does not speak MCP or render resources (package
// mcpserver). A Store starts one goroutine, which Close stops: the watcher
// that hears of skill changes made by other processes sharing the database
// (skillwatch.go). Pruning runs when the owner calls Prune, and the
// in-process copy of binary codes catches up inside the recalls that use
// it.
package memory
