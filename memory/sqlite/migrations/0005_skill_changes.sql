-- Every change of a skill, in order, so that each process sharing the
-- database hears of the changes the others made: a store reads the entries
-- after the last one it saw (skillwatch.go). origin names the store that
-- made the change, which skips its own. Prune keeps the latest entries
-- only; a store that fell further behind reloads every skill.
CREATE TABLE skill_changes (
	seq     INTEGER PRIMARY KEY AUTOINCREMENT,
	origin  TEXT NOT NULL,
	owner   TEXT NOT NULL,
	name    TEXT NOT NULL,
	kind    TEXT NOT NULL,
	version INTEGER NOT NULL,
	at      INTEGER NOT NULL
) STRICT;
