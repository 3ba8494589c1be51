-- One full-text index per principal, so that BM25 ranks a principal's
-- memories by statistics of its own memories only: with one shared index
-- the number of memories, their average length and how many hold each word
-- came from every principal's rows, and a principal could read from its
-- scores how often a word occurs in the others' memories (issue 10).
-- memory_fts_tables names each principal's index, memory_fts_<id>; the
-- store creates it with the principal's first memory (ftsindex.go). The Go
-- step of this migration (migrateFTSPerPrincipal) moves the memories of
-- the shared index memory_fts into the principals' own and drops it.
CREATE TABLE memory_fts_tables (
	id        INTEGER PRIMARY KEY,
	principal TEXT NOT NULL UNIQUE
) STRICT;
