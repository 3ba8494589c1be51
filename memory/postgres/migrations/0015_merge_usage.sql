-- What consolidation keeps of the memories it merges (memory_merges'
-- records) counts toward the principal's memory bytes: a record's bytes
-- are added to its principal's 'memories' row of principal_usage as it is
-- stored, and taken back as it goes (a forget of its survivor, which
-- cascades, or Prune), so that merging cannot hold more than
-- memory.max_memory_bytes. The records a store already holds are added
-- here: a principal they take over the quota can still forget, and
-- cannot grow.
INSERT INTO principal_usage AS u (principal, kind, entries, bytes)
	SELECT principal, 'memories', 0, sum(octet_length(record)) FROM memory_merges GROUP BY principal
	ON CONFLICT (principal, kind) DO UPDATE SET bytes = u.bytes + excluded.bytes;

CREATE FUNCTION principal_usage_merges() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('DELETE', 'UPDATE') THEN
		PERFORM principal_usage_add(OLD.principal, 'memories', 0, -octet_length(OLD.record));
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		PERFORM principal_usage_add(NEW.principal, 'memories', 0, octet_length(NEW.record));
	END IF;
	RETURN NULL;
END
$$;

CREATE TRIGGER principal_usage_merges AFTER INSERT OR DELETE OR UPDATE OF principal, record ON memory_merges
	FOR EACH ROW EXECUTE FUNCTION principal_usage_merges();

-- Prune drops records older than memory.audit_max_age.
CREATE INDEX memory_merges_merged_at ON memory_merges (merged_at);
