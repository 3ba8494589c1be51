-- What consolidation keeps of the memories it merges (memory_merges'
-- records) counts toward the principal's memory bytes: a record's bytes
-- are added to its principal's 'memories' row of principal_usage as it is
-- stored, and taken back as it goes (a forget of its survivor, which
-- cascades, or Prune), so that merging cannot hold more than
-- memory.max_memory_bytes. The records a store already holds are added
-- here: a principal they take over the quota can still forget, and
-- cannot grow.
INSERT INTO principal_usage (principal, kind, entries, bytes)
	SELECT DISTINCT principal, 'memories', 0, 0 FROM memory_merges
	WHERE principal NOT IN (SELECT principal FROM principal_usage WHERE kind = 'memories');
UPDATE principal_usage SET bytes = bytes +
	(SELECT coalesce(sum(length(CAST(record AS BLOB))), 0) FROM memory_merges WHERE memory_merges.principal = principal_usage.principal)
	WHERE kind = 'memories';

CREATE TRIGGER principal_usage_merges_insert AFTER INSERT ON memory_merges BEGIN
	INSERT INTO principal_usage (principal, kind, entries, bytes) SELECT new.principal, 'memories', 0, 0
		WHERE NOT EXISTS (SELECT 1 FROM principal_usage WHERE principal = new.principal AND kind = 'memories');
	UPDATE principal_usage SET bytes = bytes + length(CAST(new.record AS BLOB))
		WHERE principal = new.principal AND kind = 'memories';
END;

CREATE TRIGGER principal_usage_merges_delete AFTER DELETE ON memory_merges BEGIN
	UPDATE principal_usage SET bytes = bytes - length(CAST(old.record AS BLOB))
		WHERE principal = old.principal AND kind = 'memories';
END;

CREATE TRIGGER principal_usage_merges_update AFTER UPDATE OF principal, record ON memory_merges BEGIN
	UPDATE principal_usage SET bytes = bytes - length(CAST(old.record AS BLOB))
		WHERE principal = old.principal AND kind = 'memories';
	INSERT INTO principal_usage (principal, kind, entries, bytes) SELECT new.principal, 'memories', 0, 0
		WHERE NOT EXISTS (SELECT 1 FROM principal_usage WHERE principal = new.principal AND kind = 'memories');
	UPDATE principal_usage SET bytes = bytes + length(CAST(new.record AS BLOB))
		WHERE principal = new.principal AND kind = 'memories';
END;

-- Prune drops records older than memory.audit_max_age.
CREATE INDEX memory_merges_merged_at ON memory_merges (merged_at);
