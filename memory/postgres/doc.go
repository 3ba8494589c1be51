// Package postgres is codecell's store on PostgreSQL, for a team that
// runs several codecell instances on one database. It implements the
// interfaces that package memory's tools and package mcpserver declare
// (audit log, stored results, workspace, skills, tool shapes, memories
// and recall) with the rules of package memory: the same validation,
// errors, limits and rank fusion, so that one contract suite
// (memory/storetest) holds for both backends. Its files mirror those of
// memory/sqlite. It does not own the tools (memory.RegisterTools), the
// MCP surface, nor the copy from SQLite (memory/storecopy), and links no
// SQLite.
//
// Instances share everything through the database: schema migrations run
// once under an advisory lock; skills changes reach every instance by
// LISTEN/NOTIFY. Vector recall runs on pgvector's HNSW index when the
// database has the extension (pgvector.go); otherwise the binary codes of
// the coarse vector pass are held in memory by every instance and kept
// current from a change table read before each search (see
// RATIONALE.md).
package postgres
