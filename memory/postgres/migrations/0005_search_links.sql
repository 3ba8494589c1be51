-- memory/migrations/0014: what learning from use keeps for tool search,
-- a query word and a tool a later run of the same session called, with
-- how often. Names and words only; per installation; bounded in rows.
CREATE TABLE search_links (
	term       TEXT NOT NULL,
	tool       TEXT NOT NULL,
	count      BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	PRIMARY KEY (term, tool)
);

CREATE INDEX search_links_updated ON search_links (updated_at);
