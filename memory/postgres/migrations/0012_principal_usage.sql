-- What each principal holds of memories and of the knowledge graph
-- (kind 'memories', 'entities', 'relations'): how many, and their bytes
-- (a memory's content, tags and metadata; an entity's name, description
-- and properties; a relation's type and properties), kept by triggers in
-- the same transaction as every change, whoever makes it. Writes check
-- the principal's quotas (memory.Limits.MaxMemories, MaxMemoryBytes,
-- MaxGraphEntities, MaxGraphRelations, MaxGraphBytes) from these rows
-- instead of counting; a write holds its principal's row until it ends,
-- so that two instances cannot both take the last of a quota. Rows of
-- nothing held stay, at 0.
CREATE TABLE principal_usage (
	principal TEXT NOT NULL,
	kind      TEXT NOT NULL,
	entries   BIGINT NOT NULL,
	bytes     BIGINT NOT NULL,
	PRIMARY KEY (principal, kind)
);

INSERT INTO principal_usage (principal, kind, entries, bytes)
	SELECT principal, 'memories', count(*), sum(octet_length(content) + octet_length(tags) + octet_length(metadata))
	FROM memories GROUP BY principal;
INSERT INTO principal_usage (principal, kind, entries, bytes)
	SELECT principal, 'entities', count(*), sum(octet_length(name) + octet_length(description) + octet_length(properties))
	FROM entities GROUP BY principal;
INSERT INTO principal_usage (principal, kind, entries, bytes)
	SELECT principal, 'relations', count(*), sum(octet_length(type) + octet_length(properties))
	FROM relations GROUP BY principal;

-- principal_usage_add adds n entries and b bytes to a principal's kind.
CREATE FUNCTION principal_usage_add(p TEXT, k TEXT, n BIGINT, b BIGINT) RETURNS void LANGUAGE sql AS $$
	INSERT INTO principal_usage AS u (principal, kind, entries, bytes) VALUES (p, k, n, b)
		ON CONFLICT (principal, kind) DO UPDATE SET entries = u.entries + excluded.entries, bytes = u.bytes + excluded.bytes;
$$;

CREATE FUNCTION principal_usage_memories() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('DELETE', 'UPDATE') THEN
		PERFORM principal_usage_add(OLD.principal, 'memories', -1, -(octet_length(OLD.content) + octet_length(OLD.tags) + octet_length(OLD.metadata)));
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		PERFORM principal_usage_add(NEW.principal, 'memories', 1, octet_length(NEW.content) + octet_length(NEW.tags) + octet_length(NEW.metadata));
	END IF;
	RETURN NULL;
END
$$;

CREATE FUNCTION principal_usage_entities() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('DELETE', 'UPDATE') THEN
		PERFORM principal_usage_add(OLD.principal, 'entities', -1, -(octet_length(OLD.name) + octet_length(OLD.description) + octet_length(OLD.properties)));
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		PERFORM principal_usage_add(NEW.principal, 'entities', 1, octet_length(NEW.name) + octet_length(NEW.description) + octet_length(NEW.properties));
	END IF;
	RETURN NULL;
END
$$;

CREATE FUNCTION principal_usage_relations() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP IN ('DELETE', 'UPDATE') THEN
		PERFORM principal_usage_add(OLD.principal, 'relations', -1, -(octet_length(OLD.type) + octet_length(OLD.properties)));
	END IF;
	IF TG_OP IN ('INSERT', 'UPDATE') THEN
		PERFORM principal_usage_add(NEW.principal, 'relations', 1, octet_length(NEW.type) + octet_length(NEW.properties));
	END IF;
	RETURN NULL;
END
$$;

CREATE TRIGGER principal_usage_memories AFTER INSERT OR DELETE OR UPDATE OF principal, content, tags, metadata ON memories
	FOR EACH ROW EXECUTE FUNCTION principal_usage_memories();
CREATE TRIGGER principal_usage_entities AFTER INSERT OR DELETE OR UPDATE OF principal, name, description, properties ON entities
	FOR EACH ROW EXECUTE FUNCTION principal_usage_entities();
CREATE TRIGGER principal_usage_relations AFTER INSERT OR DELETE OR UPDATE OF principal, type, properties ON relations
	FOR EACH ROW EXECUTE FUNCTION principal_usage_relations();
