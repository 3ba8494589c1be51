-- The HTTP requests an execution's tool calls sent (OpenAPI sources): one
-- row per attempt, with method, host and status — never headers, bodies,
-- query strings or credentials. Pruned with their execution.
CREATE TABLE http_requests (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	execution_id TEXT NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
	tool         TEXT NOT NULL,
	method       TEXT NOT NULL,
	host         TEXT NOT NULL,
	status       INTEGER NOT NULL DEFAULT 0,
	error        TEXT NOT NULL DEFAULT '',
	attempt      INTEGER NOT NULL DEFAULT 1,
	duration_us  INTEGER NOT NULL DEFAULT 0,
	started_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX http_requests_execution ON http_requests (execution_id);
