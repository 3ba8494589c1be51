-- The audit log keeps a run's session as its hash (memory.SessionHash: the
-- first 4 bytes of the SHA-256 of the ID, in hex), the form the server
-- log writes as session_hash, never the ID itself (a bearer credential
-- for its session). The Go step (migrateSessionHashes) hashes the rows
-- written before this migration; SQLite has no SHA-256 of its own.
SELECT 1;
