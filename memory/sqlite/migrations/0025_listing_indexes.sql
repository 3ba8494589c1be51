-- A listing reads what describes each item, never its value: skills.list
-- names, descriptions and versions, not code; workspace.list paths, sizes
-- and times, not data; a listing of stored results (and their eviction)
-- ids, sizes and times, not data. But in a row, the columns stored after
-- a large value sit behind its overflow pages, which SQLite walks to reach
-- them: a page of 500 skills of 99 KB read some 12,500 pages (50 ms),
-- and a workspace.list of 16 files of 8 MiB the whole 128 MiB (60–130
-- ms). These indexes cover each listing, so that it reads no row.
CREATE INDEX skills_listing ON skills (principal, name, description, language, version, updated_at);
CREATE INDEX published_skills_listing ON published_skills (name, owner, description, language, version, updated_at, code_sha256, published_at);
CREATE INDEX workspace_files_listing ON workspace_files (principal, path, size, stored_size, sha256, created_at, updated_at, provenance);
CREATE INDEX results_listing ON results (principal, created_at, id, session, execution_id, content_type, size, stored_size, sha256, provenance);
