-- The cache's running totals, per principal and kind, kept by a trigger in
-- the same transaction as every change of cache_entries (whoever makes
-- it: CacheSet, its evictions, CacheDelete, Prune, an import, a copy): a
-- cache write reads the total of every principal's entries from a few
-- rows instead of summing every value (O(entries) per write). Rows of no
-- entries stay, at 0. A transaction that changes a principal's entries
-- of a kind holds that row until it ends, so two such writes of one
-- principal take turns; other principals' do not wait.
CREATE TABLE cache_usage (
	principal TEXT NOT NULL,
	kind      TEXT NOT NULL,
	entries   BIGINT NOT NULL,
	bytes     BIGINT NOT NULL,
	PRIMARY KEY (principal, kind)
);

INSERT INTO cache_usage (principal, kind, entries, bytes)
	SELECT principal, kind, count(*), sum(octet_length(value)) FROM cache_entries GROUP BY principal, kind;

CREATE FUNCTION cache_usage_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('DELETE', 'UPDATE') THEN
		UPDATE cache_usage SET entries = entries - 1, bytes = bytes - octet_length(OLD.value)
			WHERE principal = OLD.principal AND kind = OLD.kind;
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		INSERT INTO cache_usage AS u (principal, kind, entries, bytes) VALUES (NEW.principal, NEW.kind, 1, octet_length(NEW.value))
			ON CONFLICT (principal, kind) DO UPDATE SET entries = u.entries + 1, bytes = u.bytes + excluded.bytes;
	END IF;
	RETURN NULL;
END
$$;

CREATE TRIGGER cache_usage_count AFTER INSERT OR DELETE OR UPDATE OF principal, kind, value ON cache_entries
	FOR EACH ROW EXECUTE FUNCTION cache_usage_count();

-- Eviction takes the oldest live entries in this order, from the index,
-- rather than sorting every entry.
CREATE INDEX cache_entries_created ON cache_entries (created_at);
