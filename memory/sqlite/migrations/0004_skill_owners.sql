-- Skills belong to their owner. The skills table holds each principal's
-- own skills (principal is the owner); published_skills holds the
-- snapshots that owners published for every principal to call: the code
-- is fixed when published (code_sha256 is its hash) and only the owner can
-- replace or withdraw it. A published name is unique across owners.
--
-- Skills of the former shared scope (principal 'skills') become skills of
-- the local user ('local', the stdio principal) and are published, so that
-- every principal can still call what it could call before; the Go step of
-- this migration (migrateSharedSkills) moves them, since SQL has no
-- SHA-256.

CREATE TABLE published_skills (
	name         TEXT PRIMARY KEY,
	owner        TEXT NOT NULL,
	description  TEXT NOT NULL,
	code         TEXT NOT NULL,
	code_sha256  TEXT NOT NULL,
	language     TEXT NOT NULL,
	input_schema TEXT,
	version      INTEGER NOT NULL,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	published_at INTEGER NOT NULL
) STRICT;

CREATE INDEX published_skills_owner ON published_skills (owner, name);
