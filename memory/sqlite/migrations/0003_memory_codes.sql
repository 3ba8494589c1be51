-- Binary codes in a plain table instead of the vec0 index memory_vec. The
-- coarse vector pass scans an in-process copy of them (codeindex.go): a
-- vec0 KNN query costs O(N·k) for its top-k selection, about 25 ms for
-- k = 200 over 100k codes. The store recomputes the codes from
-- memory_vectors when the quantizer recorded in meta is not its own, so
-- the record is dropped here.
DROP TABLE IF EXISTS memory_vec;
DELETE FROM meta WHERE key = 'quantizer';

-- principal and layer repeat the memory's so that loading a principal's
-- codes needs no join.
CREATE TABLE memory_codes (
	memory_id INTEGER PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
	principal TEXT NOT NULL,
	layer     TEXT NOT NULL,
	code      BLOB NOT NULL
) STRICT;

-- Every change of memory_codes, in order: an in-process copy catches up by
-- reading the entries after the last one it applied. Prune keeps the
-- latest entries only; a copy that fell further behind reloads.
CREATE TABLE memory_code_log (
	seq       INTEGER PRIMARY KEY AUTOINCREMENT,
	memory_id INTEGER NOT NULL
) STRICT;

CREATE TRIGGER memory_codes_log_insert AFTER INSERT ON memory_codes BEGIN
	INSERT INTO memory_code_log (memory_id) VALUES (new.memory_id);
END;

CREATE TRIGGER memory_codes_log_update AFTER UPDATE ON memory_codes BEGIN
	INSERT INTO memory_code_log (memory_id) VALUES (new.memory_id);
END;

CREATE TRIGGER memory_codes_log_delete AFTER DELETE ON memory_codes BEGIN
	INSERT INTO memory_code_log (memory_id) VALUES (old.memory_id);
END;
