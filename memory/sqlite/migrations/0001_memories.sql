-- Memories in four layers, their tags, vectors and full-text index, and the
-- knowledge graph. The vec0 index (memory_vec) depends on the embedder's
-- dimension and is created by the store, not by a migration.

CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) STRICT;

CREATE TABLE memories (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	principal    TEXT NOT NULL,
	layer        TEXT NOT NULL CHECK (layer IN ('episodic', 'semantic', 'procedural', 'prospective')),
	content      TEXT NOT NULL,
	tags         TEXT NOT NULL DEFAULT '[]',
	metadata     TEXT NOT NULL DEFAULT '{}',
	importance   REAL NOT NULL DEFAULT 0.5,
	source       TEXT NOT NULL DEFAULT '',
	session      TEXT NOT NULL DEFAULT '',
	occurred_at  INTEGER,
	due_at       INTEGER,
	status       TEXT,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	accessed_at  INTEGER,
	access_count INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX memories_principal_time ON memories (principal, created_at);
CREATE INDEX memories_principal_layer ON memories (principal, layer, created_at);
CREATE INDEX memories_principal_session ON memories (principal, session);
CREATE INDEX memories_tasks ON memories (principal, status, due_at) WHERE layer = 'prospective';

CREATE TABLE memory_tags (
	tag       TEXT NOT NULL,
	memory_id INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
	PRIMARY KEY (tag, memory_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX memory_tags_memory ON memory_tags (memory_id);

-- Unit-length float32 vectors, little-endian, the form sqlite-vec reads:
-- exact search scans them, the binary-code pass re-scores with them.
-- principal and layer repeat the memory's so that a scan needs no join.
CREATE TABLE memory_vectors (
	memory_id INTEGER PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
	principal TEXT NOT NULL,
	layer     TEXT NOT NULL,
	embedding BLOB NOT NULL
) STRICT;

CREATE VIRTUAL TABLE memory_fts USING fts5 (
	content, tags,
	content = '', contentless_delete = 1,
	tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TABLE entities (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	principal   TEXT NOT NULL,
	name        TEXT NOT NULL,
	type        TEXT NOT NULL DEFAULT '',
	description TEXT NOT NULL DEFAULT '',
	properties  TEXT NOT NULL DEFAULT '{}',
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
) STRICT;

CREATE UNIQUE INDEX entities_name ON entities (principal, name COLLATE NOCASE);

CREATE TABLE relations (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	principal  TEXT NOT NULL,
	from_id    INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
	to_id      INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
	type       TEXT NOT NULL,
	weight     REAL NOT NULL DEFAULT 1,
	properties TEXT NOT NULL DEFAULT '{}',
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	UNIQUE (from_id, to_id, type)
) STRICT;

CREATE INDEX relations_to ON relations (to_id);

CREATE TABLE memory_entities (
	memory_id INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
	entity_id INTEGER NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
	PRIMARY KEY (memory_id, entity_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX memory_entities_entity ON memory_entities (entity_id);

-- Provenance of consolidation: each merged memory as it was, and the
-- memory it was merged into.
CREATE TABLE memory_merges (
	merged_id   INTEGER PRIMARY KEY,
	survivor_id INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
	principal   TEXT NOT NULL,
	record      TEXT NOT NULL,
	similarity  REAL NOT NULL,
	overlap     REAL NOT NULL,
	merged_at   INTEGER NOT NULL
) STRICT;

CREATE INDEX memory_merges_survivor ON memory_merges (survivor_id);

-- Memories per principal, kept by triggers: recall reads it to choose
-- between an exact scan and the binary-code pass without counting.
CREATE TABLE memory_counts (
	principal TEXT PRIMARY KEY,
	n         INTEGER NOT NULL
) STRICT;

CREATE TRIGGER memories_count_insert AFTER INSERT ON memories BEGIN
	INSERT OR IGNORE INTO memory_counts (principal, n) VALUES (new.principal, 0);
	UPDATE memory_counts SET n = n + 1 WHERE principal = new.principal;
END;

CREATE TRIGGER memories_count_delete AFTER DELETE ON memories BEGIN
	UPDATE memory_counts SET n = n - 1 WHERE principal = old.principal;
END;
