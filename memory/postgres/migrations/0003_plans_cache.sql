-- memory/migrations/0012: plans (the writes a dry run recorded, committed
-- once later, found by the SHA-256 of their id and bound to their
-- principal; steps_hash covers the steps) and cache entries per
-- principal ('user' for cache.get/set/delete, 'memo' for memoised
-- results of read-only tools). Times in Unix milliseconds.
CREATE TABLE plans (
	id_hash             TEXT PRIMARY KEY,
	principal           TEXT NOT NULL,
	session             TEXT NOT NULL DEFAULT '',
	execution_id        TEXT NOT NULL DEFAULT '',
	steps_hash          TEXT NOT NULL,
	-- planned, then committing once claimed, then committed or failed.
	state               TEXT NOT NULL DEFAULT 'planned',
	created_at          BIGINT NOT NULL,
	expires_at          BIGINT NOT NULL,
	committed_at        BIGINT,
	commit_execution_id TEXT NOT NULL DEFAULT ''
);

CREATE INDEX plans_expires ON plans (expires_at);

CREATE TABLE plan_steps (
	plan_hash  TEXT NOT NULL REFERENCES plans (id_hash) ON DELETE CASCADE,
	seq        BIGINT NOT NULL,
	tool       TEXT NOT NULL,
	args       BYTEA NOT NULL,
	provenance BYTEA,
	status     TEXT NOT NULL DEFAULT 'pending',
	error_code TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (plan_hash, seq)
);

CREATE TABLE cache_entries (
	principal  TEXT NOT NULL,
	kind       TEXT NOT NULL,
	key        TEXT NOT NULL,
	value      BYTEA NOT NULL,
	created_at BIGINT NOT NULL,
	expires_at BIGINT NOT NULL,
	PRIMARY KEY (principal, kind, key)
);

CREATE INDEX cache_entries_expires ON cache_entries (expires_at);
