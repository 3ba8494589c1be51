-- A listing of skills shows each one's description, data of the sources
-- the skill was saved from: it carries the skill's provenance too (issue
-- 19, attack18 K6), and the indexes that cover the listing (migration 25)
-- hold it, so that reading it reads no row (the code before it).
DROP INDEX skills_listing;
DROP INDEX published_skills_listing;
CREATE INDEX skills_listing ON skills (principal, name, description, language, version, updated_at, provenance);
CREATE INDEX published_skills_listing ON published_skills (name, owner, description, language, version, updated_at, code_sha256, published_at, provenance);

-- A memory that consolidation merged into another gave it its metadata,
-- tags and entities, but the survivor kept only its own provenance (issue
-- 19, attack18 K2): a survivor now takes, with its own, the provenance of
-- every memory merged into it whose record is still kept (memory_merges,
-- for memory.audit_max_age), as a merge now records it.
UPDATE memories SET provenance = (
	SELECT '[' || group_concat(v, ',') || ']' FROM (
		SELECT DISTINCT json_quote(j.value) AS v FROM (
			SELECT memories.provenance AS p
			UNION ALL
			SELECT CASE WHEN json_valid(r.record) THEN json_extract(r.record, '$.provenance') END FROM memory_merges r WHERE r.survivor_id = memories.id
		) s, json_each(CASE WHEN json_valid(s.p) THEN (CASE json_type(s.p) WHEN 'array' THEN s.p END) END) j
		ORDER BY v
	)
) WHERE id IN (SELECT survivor_id FROM memory_merges
	WHERE (CASE WHEN json_valid(record) THEN json_type(record, '$.provenance') END) = 'array');
