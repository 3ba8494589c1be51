-- What each principal holds of memories and of the knowledge graph
-- (kind 'memories', 'entities', 'relations'): how many, and their bytes
-- (a memory's content, tags and metadata; an entity's name, description
-- and properties; a relation's type and properties), kept by triggers in
-- the same transaction as every change, whoever makes it. Writes check
-- the principal's quotas (memory.Limits.MaxMemories, MaxMemoryBytes,
-- MaxGraphEntities, MaxGraphRelations, MaxGraphBytes) from these rows
-- instead of counting. Rows of nothing held stay, at 0.
CREATE TABLE principal_usage (
	principal TEXT NOT NULL,
	kind      TEXT NOT NULL,
	entries   INTEGER NOT NULL,
	bytes     INTEGER NOT NULL,
	PRIMARY KEY (principal, kind)
) STRICT, WITHOUT ROWID;

INSERT INTO principal_usage (principal, kind, entries, bytes)
	SELECT principal, 'memories', count(*), sum(length(CAST(content AS BLOB)) + length(CAST(tags AS BLOB)) + length(CAST(metadata AS BLOB)))
	FROM memories GROUP BY principal;
INSERT INTO principal_usage (principal, kind, entries, bytes)
	SELECT principal, 'entities', count(*), sum(length(CAST(name AS BLOB)) + length(CAST(description AS BLOB)) + length(CAST(properties AS BLOB)))
	FROM entities GROUP BY principal;
INSERT INTO principal_usage (principal, kind, entries, bytes)
	SELECT principal, 'relations', count(*), sum(length(CAST(type AS BLOB)) + length(CAST(properties AS BLOB)))
	FROM relations GROUP BY principal;

CREATE TRIGGER principal_usage_memories_insert AFTER INSERT ON memories BEGIN
	INSERT INTO principal_usage (principal, kind, entries, bytes) SELECT new.principal, 'memories', 0, 0
		WHERE NOT EXISTS (SELECT 1 FROM principal_usage WHERE principal = new.principal AND kind = 'memories');
	UPDATE principal_usage SET entries = entries + 1,
		bytes = bytes + length(CAST(new.content AS BLOB)) + length(CAST(new.tags AS BLOB)) + length(CAST(new.metadata AS BLOB))
		WHERE principal = new.principal AND kind = 'memories';
END;

CREATE TRIGGER principal_usage_memories_delete AFTER DELETE ON memories BEGIN
	UPDATE principal_usage SET entries = entries - 1,
		bytes = bytes - length(CAST(old.content AS BLOB)) - length(CAST(old.tags AS BLOB)) - length(CAST(old.metadata AS BLOB))
		WHERE principal = old.principal AND kind = 'memories';
END;

CREATE TRIGGER principal_usage_memories_update AFTER UPDATE OF content, tags, metadata ON memories BEGIN
	UPDATE principal_usage SET
		bytes = bytes - length(CAST(old.content AS BLOB)) - length(CAST(old.tags AS BLOB)) - length(CAST(old.metadata AS BLOB))
			+ length(CAST(new.content AS BLOB)) + length(CAST(new.tags AS BLOB)) + length(CAST(new.metadata AS BLOB))
		WHERE principal = new.principal AND kind = 'memories';
END;

CREATE TRIGGER principal_usage_entities_insert AFTER INSERT ON entities BEGIN
	INSERT INTO principal_usage (principal, kind, entries, bytes) SELECT new.principal, 'entities', 0, 0
		WHERE NOT EXISTS (SELECT 1 FROM principal_usage WHERE principal = new.principal AND kind = 'entities');
	UPDATE principal_usage SET entries = entries + 1,
		bytes = bytes + length(CAST(new.name AS BLOB)) + length(CAST(new.description AS BLOB)) + length(CAST(new.properties AS BLOB))
		WHERE principal = new.principal AND kind = 'entities';
END;

CREATE TRIGGER principal_usage_entities_delete AFTER DELETE ON entities BEGIN
	UPDATE principal_usage SET entries = entries - 1,
		bytes = bytes - length(CAST(old.name AS BLOB)) - length(CAST(old.description AS BLOB)) - length(CAST(old.properties AS BLOB))
		WHERE principal = old.principal AND kind = 'entities';
END;

CREATE TRIGGER principal_usage_entities_update AFTER UPDATE OF name, description, properties ON entities BEGIN
	UPDATE principal_usage SET
		bytes = bytes - length(CAST(old.name AS BLOB)) - length(CAST(old.description AS BLOB)) - length(CAST(old.properties AS BLOB))
			+ length(CAST(new.name AS BLOB)) + length(CAST(new.description AS BLOB)) + length(CAST(new.properties AS BLOB))
		WHERE principal = new.principal AND kind = 'entities';
END;

CREATE TRIGGER principal_usage_relations_insert AFTER INSERT ON relations BEGIN
	INSERT INTO principal_usage (principal, kind, entries, bytes) SELECT new.principal, 'relations', 0, 0
		WHERE NOT EXISTS (SELECT 1 FROM principal_usage WHERE principal = new.principal AND kind = 'relations');
	UPDATE principal_usage SET entries = entries + 1,
		bytes = bytes + length(CAST(new.type AS BLOB)) + length(CAST(new.properties AS BLOB))
		WHERE principal = new.principal AND kind = 'relations';
END;

CREATE TRIGGER principal_usage_relations_delete AFTER DELETE ON relations BEGIN
	UPDATE principal_usage SET entries = entries - 1,
		bytes = bytes - length(CAST(old.type AS BLOB)) - length(CAST(old.properties AS BLOB))
		WHERE principal = old.principal AND kind = 'relations';
END;

CREATE TRIGGER principal_usage_relations_update AFTER UPDATE OF type, properties ON relations BEGIN
	UPDATE principal_usage SET
		bytes = bytes - length(CAST(old.type AS BLOB)) - length(CAST(old.properties AS BLOB))
			+ length(CAST(new.type AS BLOB)) + length(CAST(new.properties AS BLOB))
		WHERE principal = new.principal AND kind = 'relations';
END;
