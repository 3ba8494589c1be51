-- The audit log keeps a run's session as its hash (memory.SessionHash: the
-- first 4 bytes of the SHA-256 of the ID, in hex), the form the server
-- log writes as session_hash, never the ID itself (a bearer credential
-- for its session). Rows written before this migration are hashed here.
UPDATE executions SET session = substr(encode(sha256(convert_to(session, 'UTF8')), 'hex'), 1, 8) WHERE session <> '';
