-- A listing of skills shows each one's description, data of the sources
-- the skill was saved from: it carries the skill's provenance too (issue
-- 19, attack18 K6), and the indexes that cover the listing (migration 25)
-- hold it, so that reading it reads no row (the code before it).
DROP INDEX skills_listing;
DROP INDEX published_skills_listing;
CREATE INDEX skills_listing ON skills (principal, name, description, language, version, updated_at, provenance);
CREATE INDEX published_skills_listing ON published_skills (name, owner, description, language, version, updated_at, code_sha256, published_at, provenance);
