-- A listing of skills (skills.list) reads names, descriptions and
-- versions, never code; but in a row, the columns stored after the code
-- sit behind its overflow pages, which SQLite walks to reach them: a
-- page of 500 skills of 99 KB read some 12,500 pages. These indexes
-- cover a listing, and the published state an own copy shows, so that it
-- reads no row of either table.
CREATE INDEX skills_listing ON skills (principal, name, description, language, version, updated_at);
CREATE INDEX published_skills_listing ON published_skills (name, owner, description, language, version, updated_at, code_sha256, published_at);
