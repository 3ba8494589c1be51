// Package memory is the model of codecell's durable state, whatever
// database holds it: the agents' long-term memory and the server's own
// records, the rules every backend applies to them, and their operations
// as tools. It holds no SQL and links no database driver: the backends
// are the packages below it, side by side and mirroring each other file
// for file — memory/sqlite (SQLite with sqlite-vec and FTS5, the embedded
// default) and memory/postgres (for several instances on one database) —
// and memory/storetest is the contract suite both pass.
//
// Memory: memories in four layers (episodic events, semantic facts,
// procedural how-tos, prospective tasks), a knowledge graph of entities and
// relations that memories link to, hybrid recall (a vector ranking fused
// with a keyword ranking by reciprocal rank fusion, optionally
// recency-weighted: Fuse, Recency), consolidation of near-duplicates
// (FindDuplicates, MergeSurvivor), and the embedders that turn text into
// vectors: an offline hashing embedder and an OpenAI-compatible
// /v1/embeddings client. The operations are exposed as tools in the
// "memory" category and workspace files as tools in the "workspace"
// category (RegisterTools, over a backend's ToolSet).
//
// The rules both backends share live here as plain functions, so that the
// two validate, report errors, embed, rank and fuse alike: what a write
// stores (PrepareMemory, ApplyUpdate, PrepareSkill, PrepareEntity, …),
// what a read selects (NormalizeRecall, PrepareTaskQuery, CheckForget, …),
// how an import counts (ApplyImport, OutcomeOf), how plans, the cache and
// the state instances share are checked (NewPlan, CheckClaim,
// CheckCacheSet, Reserved, …). Each backend keeps only its SQL and its way
// of making a write atomic. The binary codes of the coarse vector pass
// (Quantizer, CodeSet) are the same construction on every backend, so that
// codes copied from one store serve another.
//
// Server state: the audit log of executions and tool calls, stored results
// (zstd-compressed blobs), workspace files and skills, each scoped to a
// principal, with retention (Retention); and what tool sources learned of
// their tools' results (toolshapes.go), shared by every caller. A skill
// belongs to its owner, who may publish a fixed snapshot of it for every
// principal to call (skills.go). Export and import move what agents stored
// in and out as JSONL (Record, ExportWriter, ReadExport).
//
// Everything a call does is scoped to tools.CallerFrom(ctx).Principal; the
// empty principal is the local user.
//
// The package does not run code (skills are stored, not executed: package
// executor runs them), does not speak MCP or render resources (package
// mcpserver) and starts no goroutine.
package memory
