-- The published snapshot of another principal's skill that a principal
-- runs: pinned at its first call, replaced only when the principal accepts
-- a newer one, so that republishing a skill does not silently change what
-- others' calls run.
CREATE TABLE skill_pins (
	principal   TEXT NOT NULL,
	name        TEXT NOT NULL,
	owner       TEXT NOT NULL,
	version     BIGINT NOT NULL,
	code_sha256 TEXT NOT NULL,
	pinned_at   BIGINT NOT NULL,
	PRIMARY KEY (principal, name)
);
