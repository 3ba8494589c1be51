// Package sqlite is codecell's store on one SQLite database (WAL,
// sqlite-vec and FTS5): the embedded default, for one codecell process or
// a few sharing a file. It implements the interfaces that package
// memory's tools and package mcpserver declare with the rules of package
// memory, so that one contract suite (memory/storetest) holds for it and
// for memory/postgres, whose files mirror these. It holds the SQL and the
// SQLite machinery only; it does not own the tools (memory.RegisterTools)
// nor the MCP surface.
//
// Recall on a large store: vectors are ranked by a coarse pass over
// binary codes (memory.Quantizer) held in an in-process copy that follows
// the database through a change log (codeIndex), then re-scored with the
// full float32 vectors; exact scans (sqlite-vec's cosine distance) serve
// stores up to Config.ExactSearchLimit. Each principal's memories have a
// full-text index of their own (ftsindex.go), so that BM25's statistics,
// and with them the scores, come from the caller's memories only. The
// keyword ranking leaves out query words found in more than
// memory.KeywordCommonDocs of the caller's memories, which weigh little in
// BM25 but cost the most to score. RecallInput.Exact turns both shortcuts
// off.
//
// Schema migrations are embedded (migrations/NNNN_name.sql) and applied
// by a writable Open; a database made by an older release opens and is
// migrated, one made by a newer one is refused (memory.ErrSchema).
//
// A Store starts one goroutine, which Close stops: the watcher that hears
// of skill changes made by other processes sharing the database
// (skillwatch.go). Pruning runs when the owner calls Prune, and the
// in-process copy of binary codes catches up inside the recalls that use
// it.
package sqlite
