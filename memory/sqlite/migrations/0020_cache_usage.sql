-- The cache's running totals, per principal and kind, kept by triggers in
-- the same transaction as every change of cache_entries (whoever makes
-- it: CacheSet, its evictions, CacheDelete, Prune, an import): a cache
-- write reads the total of every principal's entries from a few rows
-- instead of summing every value (O(entries) under the single writer).
-- Rows of no entries stay, at 0. (The triggers insert a missing row with
-- NOT EXISTS, not INSERT OR IGNORE: a CacheSet's upsert would impose its
-- own conflict policy on the trigger's insert.)
CREATE TABLE cache_usage (
	principal TEXT NOT NULL,
	kind      TEXT NOT NULL,
	entries   INTEGER NOT NULL,
	bytes     INTEGER NOT NULL,
	PRIMARY KEY (principal, kind)
) STRICT, WITHOUT ROWID;

INSERT INTO cache_usage (principal, kind, entries, bytes)
	SELECT principal, kind, count(*), sum(length(value)) FROM cache_entries GROUP BY principal, kind;

CREATE TRIGGER cache_usage_insert AFTER INSERT ON cache_entries BEGIN
	INSERT INTO cache_usage (principal, kind, entries, bytes) SELECT new.principal, new.kind, 0, 0
		WHERE NOT EXISTS (SELECT 1 FROM cache_usage WHERE principal = new.principal AND kind = new.kind);
	UPDATE cache_usage SET entries = entries + 1, bytes = bytes + length(new.value) WHERE principal = new.principal AND kind = new.kind;
END;

CREATE TRIGGER cache_usage_delete AFTER DELETE ON cache_entries BEGIN
	UPDATE cache_usage SET entries = entries - 1, bytes = bytes - length(old.value) WHERE principal = old.principal AND kind = old.kind;
END;

CREATE TRIGGER cache_usage_update AFTER UPDATE OF principal, kind, value ON cache_entries BEGIN
	UPDATE cache_usage SET entries = entries - 1, bytes = bytes - length(old.value) WHERE principal = old.principal AND kind = old.kind;
	INSERT INTO cache_usage (principal, kind, entries, bytes) SELECT new.principal, new.kind, 0, 0
		WHERE NOT EXISTS (SELECT 1 FROM cache_usage WHERE principal = new.principal AND kind = new.kind);
	UPDATE cache_usage SET entries = entries + 1, bytes = bytes + length(new.value) WHERE principal = new.principal AND kind = new.kind;
END;

-- Eviction takes the oldest live entries in this order, from the index,
-- rather than sorting every entry.
CREATE INDEX cache_entries_created ON cache_entries (created_at);
