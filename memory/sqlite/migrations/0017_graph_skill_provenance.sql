-- The knowledge graph's entities and relations, and skills, keep the
-- provenance of their data, as memories, workspace files, stored results
-- and cache entries do (migrations 7 and 15): which tool sources it came
-- from, so that a value written into the graph or into a skill's code by
-- one run is still known by its sources when another run reads it. An
-- entity's or relation's is every write's together; a skill's is its
-- last save's, and a published snapshot keeps its own. NULL: none
-- recorded (rows written before this migration).
ALTER TABLE entities ADD COLUMN provenance TEXT;
ALTER TABLE relations ADD COLUMN provenance TEXT;
ALTER TABLE skills ADD COLUMN provenance TEXT;
ALTER TABLE published_skills ADD COLUMN provenance TEXT;
