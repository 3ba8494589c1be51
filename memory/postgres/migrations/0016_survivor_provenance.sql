-- A memory that consolidation merged into another gave it its metadata,
-- tags and entities, but the survivor kept only its own provenance (issue
-- 19, attack18 K2): a survivor now takes, with its own, the provenance of
-- every memory merged into it whose record is still kept (memory_merges,
-- for memory.audit_max_age), as a merge now records it. A record that is
-- not JSON is skipped.
DO $$
DECLARE
	m record;
	p jsonb;
BEGIN
	FOR m IN SELECT survivor_id, record FROM memory_merges WHERE record LIKE '%"provenance"%' ORDER BY merged_id LOOP
		BEGIN
			p := m.record::jsonb -> 'provenance';
		EXCEPTION WHEN others THEN
			p := NULL;
		END;
		IF jsonb_typeof(p) = 'array' THEN
			UPDATE memories SET provenance = (
				SELECT '[' || string_agg(e, ',' ORDER BY e COLLATE "C") || ']' FROM (
					SELECT DISTINCT to_json(v)::text AS e FROM jsonb_array_elements_text(p ||
						CASE WHEN provenance IS NOT NULL AND jsonb_typeof(provenance::jsonb) = 'array' THEN provenance::jsonb ELSE '[]'::jsonb END) v
				) x)
			WHERE id = m.survivor_id;
		END IF;
	END LOOP;
END $$;
