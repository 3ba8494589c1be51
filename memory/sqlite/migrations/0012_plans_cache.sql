-- Plans: the writes a dry run (execute_code mode "plan") recorded instead
-- of making, committed once later. A plan is found by the SHA-256 of its
-- id (the id itself, which commits it, is not stored), bound to its
-- principal, and its steps are fixed: steps_hash covers them and is
-- checked before a commit.
CREATE TABLE plans (
	id_hash             TEXT PRIMARY KEY,
	principal           TEXT NOT NULL,
	session             TEXT NOT NULL DEFAULT '',
	execution_id        TEXT NOT NULL DEFAULT '',
	steps_hash          TEXT NOT NULL,
	-- planned, then committing once claimed, then committed or failed.
	state               TEXT NOT NULL DEFAULT 'planned',
	created_at          INTEGER NOT NULL,
	expires_at          INTEGER NOT NULL,
	committed_at        INTEGER,
	commit_execution_id TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX plans_expires ON plans (expires_at);

-- One intended write of a plan, in program order: the tool, the arguments
-- as the program passed them (tokens stay tokens) and the sources of the
-- values in them; status is pending until a commit runs or skips it.
CREATE TABLE plan_steps (
	plan_hash  TEXT NOT NULL REFERENCES plans (id_hash) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	tool       TEXT NOT NULL,
	args       BLOB NOT NULL,
	provenance BLOB,
	status     TEXT NOT NULL DEFAULT 'pending',
	error_code TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (plan_hash, seq)
) STRICT;

-- Cache entries per principal: kind 'user' for cache.get/set/delete,
-- 'memo' for memoised results of read-only tools (key: a hash of the tool
-- and its canonical arguments). Expired entries are swept.
CREATE TABLE cache_entries (
	principal  TEXT NOT NULL,
	kind       TEXT NOT NULL,
	key        TEXT NOT NULL,
	value      BLOB NOT NULL,
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	PRIMARY KEY (principal, kind, key)
) STRICT, WITHOUT ROWID;

CREATE INDEX cache_entries_expires ON cache_entries (expires_at);

-- The audit log says which runs were plans or commits (with the plan's id
-- hash) and which calls were answered from the memo cache.
ALTER TABLE executions ADD COLUMN mode TEXT NOT NULL DEFAULT '';
ALTER TABLE executions ADD COLUMN plan_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE tool_calls ADD COLUMN cached INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tool_calls ADD COLUMN planned INTEGER NOT NULL DEFAULT 0;
