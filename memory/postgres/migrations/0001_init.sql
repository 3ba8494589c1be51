-- The store's tables on PostgreSQL, as on SQLite (memory/migrations) with
-- the same columns and the same units (times in Unix milliseconds), so
-- that `codecell memory migrate` copies rows as they are and a checksum
-- over both compares. What differs: keyword search is a tsvector column
-- with a GIN index instead of FTS5 tables, and the binary codes' change
-- log (memory_code_log) feeds every instance's in-memory code sets,
-- woken by NOTIFY.

CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);

CREATE TABLE memories (
	id           BIGSERIAL PRIMARY KEY,
	principal    TEXT NOT NULL,
	layer        TEXT NOT NULL CHECK (layer IN ('episodic', 'semantic', 'procedural', 'prospective')),
	content      TEXT NOT NULL,
	tags         TEXT NOT NULL DEFAULT '[]',
	metadata     TEXT NOT NULL DEFAULT '{}',
	importance   DOUBLE PRECISION NOT NULL DEFAULT 0.5,
	source       TEXT NOT NULL DEFAULT '',
	session      TEXT NOT NULL DEFAULT '',
	occurred_at  BIGINT,
	due_at       BIGINT,
	status       TEXT,
	created_at   BIGINT NOT NULL,
	updated_at   BIGINT NOT NULL,
	accessed_at  BIGINT,
	access_count BIGINT NOT NULL DEFAULT 0,
	provenance   TEXT,
	uid          TEXT UNIQUE,
	-- content and tags, English stemming: keyword recall's index.
	tsv          TSVECTOR NOT NULL
);

CREATE INDEX memories_principal_time ON memories (principal, created_at);
CREATE INDEX memories_principal_layer ON memories (principal, layer, created_at);
CREATE INDEX memories_principal_session ON memories (principal, session);
CREATE INDEX memories_tasks ON memories (principal, status, due_at) WHERE layer = 'prospective';
CREATE INDEX memories_tsv ON memories USING GIN (tsv);

CREATE TABLE memory_tags (
	tag       TEXT NOT NULL,
	memory_id BIGINT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
	PRIMARY KEY (tag, memory_id)
);

CREATE INDEX memory_tags_memory ON memory_tags (memory_id);

CREATE TABLE memory_vectors (
	memory_id BIGINT PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
	principal TEXT NOT NULL,
	layer     TEXT NOT NULL,
	embedding BYTEA NOT NULL
);

CREATE INDEX memory_vectors_principal ON memory_vectors (principal);

CREATE TABLE memory_codes (
	memory_id BIGINT PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
	principal TEXT NOT NULL,
	layer     TEXT NOT NULL,
	code      BYTEA NOT NULL
);

CREATE INDEX memory_codes_principal ON memory_codes (principal);

-- Every change of memory_codes, in commit order of its sequence: a code
-- set catches up by reading the entries after the last it applied.
CREATE TABLE memory_code_log (
	seq       BIGSERIAL PRIMARY KEY,
	memory_id BIGINT NOT NULL,
	principal TEXT NOT NULL
);

CREATE TABLE memory_counts (
	principal TEXT PRIMARY KEY,
	n         BIGINT NOT NULL
);

CREATE TABLE entities (
	id          BIGSERIAL PRIMARY KEY,
	principal   TEXT NOT NULL,
	name        TEXT NOT NULL,
	type        TEXT NOT NULL DEFAULT '',
	description TEXT NOT NULL DEFAULT '',
	properties  TEXT NOT NULL DEFAULT '{}',
	created_at  BIGINT NOT NULL,
	updated_at  BIGINT NOT NULL
);

CREATE UNIQUE INDEX entities_name ON entities (principal, lower(name));

CREATE TABLE relations (
	id         BIGSERIAL PRIMARY KEY,
	principal  TEXT NOT NULL,
	from_id    BIGINT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
	to_id      BIGINT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
	type       TEXT NOT NULL,
	weight     DOUBLE PRECISION NOT NULL DEFAULT 1,
	properties TEXT NOT NULL DEFAULT '{}',
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	UNIQUE (from_id, to_id, type)
);

CREATE INDEX relations_to ON relations (to_id);

CREATE TABLE memory_entities (
	memory_id BIGINT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
	entity_id BIGINT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
	PRIMARY KEY (memory_id, entity_id)
);

CREATE INDEX memory_entities_entity ON memory_entities (entity_id);

CREATE TABLE memory_merges (
	merged_id   BIGINT PRIMARY KEY,
	survivor_id BIGINT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
	principal   TEXT NOT NULL,
	record      TEXT NOT NULL,
	similarity  DOUBLE PRECISION NOT NULL,
	overlap     DOUBLE PRECISION NOT NULL,
	merged_at   BIGINT NOT NULL
);

CREATE INDEX memory_merges_survivor ON memory_merges (survivor_id);

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
	duration_us   BIGINT NOT NULL DEFAULT 0,
	tool_calls    BIGINT NOT NULL DEFAULT 0,
	result_bytes  BIGINT NOT NULL DEFAULT 0,
	started_at    BIGINT NOT NULL,
	updated_at    BIGINT NOT NULL
);

CREATE INDEX executions_started ON executions (started_at);
CREATE INDEX executions_principal ON executions (principal, started_at);
CREATE INDEX executions_session ON executions (session, started_at);

CREATE TABLE tool_calls (
	id           BIGSERIAL PRIMARY KEY,
	execution_id TEXT NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
	tool         TEXT NOT NULL,
	args_hash    TEXT NOT NULL,
	status       TEXT NOT NULL,
	error_code   TEXT NOT NULL DEFAULT '',
	duration_us  BIGINT NOT NULL DEFAULT 0,
	started_at   BIGINT NOT NULL
);

CREATE INDEX tool_calls_execution ON tool_calls (execution_id);
CREATE INDEX tool_calls_tool ON tool_calls (tool, started_at);

CREATE TABLE http_requests (
	id           BIGSERIAL PRIMARY KEY,
	execution_id TEXT NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
	tool         TEXT NOT NULL,
	method       TEXT NOT NULL,
	host         TEXT NOT NULL,
	status       BIGINT NOT NULL DEFAULT 0,
	error        TEXT NOT NULL DEFAULT '',
	attempt      BIGINT NOT NULL DEFAULT 1,
	duration_us  BIGINT NOT NULL DEFAULT 0,
	started_at   BIGINT NOT NULL
);

CREATE INDEX http_requests_execution ON http_requests (execution_id);

CREATE TABLE results (
	id           TEXT PRIMARY KEY,
	principal    TEXT NOT NULL,
	session      TEXT NOT NULL,
	execution_id TEXT NOT NULL DEFAULT '',
	content_type TEXT NOT NULL,
	size         BIGINT NOT NULL,
	stored_size  BIGINT NOT NULL,
	sha256       TEXT NOT NULL,
	data         BYTEA NOT NULL,
	created_at   BIGINT NOT NULL,
	provenance   TEXT
);

CREATE INDEX results_created ON results (created_at);

CREATE TABLE workspace_files (
	principal   TEXT NOT NULL,
	path        TEXT NOT NULL,
	size        BIGINT NOT NULL,
	stored_size BIGINT NOT NULL,
	sha256      TEXT NOT NULL,
	data        BYTEA NOT NULL,
	created_at  BIGINT NOT NULL,
	updated_at  BIGINT NOT NULL,
	provenance  TEXT,
	PRIMARY KEY (principal, path)
);

CREATE TABLE skills (
	principal    TEXT NOT NULL,
	name         TEXT NOT NULL,
	description  TEXT NOT NULL,
	code         TEXT NOT NULL,
	language     TEXT NOT NULL,
	input_schema TEXT,
	version      BIGINT NOT NULL,
	created_at   BIGINT NOT NULL,
	updated_at   BIGINT NOT NULL,
	PRIMARY KEY (principal, name)
);

CREATE TABLE published_skills (
	name         TEXT PRIMARY KEY,
	owner        TEXT NOT NULL,
	description  TEXT NOT NULL,
	code         TEXT NOT NULL,
	code_sha256  TEXT NOT NULL,
	language     TEXT NOT NULL,
	input_schema TEXT,
	version      BIGINT NOT NULL,
	created_at   BIGINT NOT NULL,
	updated_at   BIGINT NOT NULL,
	published_at BIGINT NOT NULL
);

CREATE INDEX published_skills_owner ON published_skills (owner, name);

CREATE TABLE tool_shapes (
	source     TEXT NOT NULL,
	tool       TEXT NOT NULL,
	shape      TEXT NOT NULL,
	updated_at BIGINT NOT NULL,
	PRIMARY KEY (source, tool)
);
