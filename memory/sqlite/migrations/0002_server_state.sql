-- The server's own state: audit log, stored results, workspace files and
-- skills.

CREATE TABLE executions (
	id            TEXT PRIMARY KEY,
	principal     TEXT NOT NULL,
	session       TEXT NOT NULL,
	language      TEXT NOT NULL,
	code          TEXT NOT NULL,
	code_hash     TEXT NOT NULL,
	status        TEXT NOT NULL,
	error_kind    TEXT NOT NULL DEFAULT '',
	error_message TEXT NOT NULL DEFAULT '',
	duration_us   INTEGER NOT NULL DEFAULT 0,
	tool_calls    INTEGER NOT NULL DEFAULT 0,
	result_bytes  INTEGER NOT NULL DEFAULT 0,
	started_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL
) STRICT;

CREATE INDEX executions_started ON executions (started_at);
CREATE INDEX executions_principal ON executions (principal, started_at);
CREATE INDEX executions_session ON executions (session, started_at);

CREATE TABLE tool_calls (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	execution_id TEXT NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
	tool         TEXT NOT NULL,
	args_hash    TEXT NOT NULL,
	status       TEXT NOT NULL,
	error_code   TEXT NOT NULL DEFAULT '',
	duration_us  INTEGER NOT NULL DEFAULT 0,
	started_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX tool_calls_execution ON tool_calls (execution_id);
CREATE INDEX tool_calls_tool ON tool_calls (tool, started_at);

CREATE TABLE results (
	id           TEXT PRIMARY KEY,
	principal    TEXT NOT NULL,
	session      TEXT NOT NULL,
	execution_id TEXT NOT NULL DEFAULT '',
	content_type TEXT NOT NULL,
	size         INTEGER NOT NULL,
	stored_size  INTEGER NOT NULL,
	sha256       TEXT NOT NULL,
	data         BLOB NOT NULL,
	created_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX results_created ON results (created_at);

CREATE TABLE workspace_files (
	principal   TEXT NOT NULL,
	path        TEXT NOT NULL,
	size        INTEGER NOT NULL,
	stored_size INTEGER NOT NULL,
	sha256      TEXT NOT NULL,
	data        BLOB NOT NULL,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL,
	PRIMARY KEY (principal, path)
) STRICT;

CREATE TABLE skills (
	principal    TEXT NOT NULL,
	name         TEXT NOT NULL,
	description  TEXT NOT NULL,
	code         TEXT NOT NULL,
	language     TEXT NOT NULL,
	input_schema TEXT,
	version      INTEGER NOT NULL,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	PRIMARY KEY (principal, name)
) STRICT;
