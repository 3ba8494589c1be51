-- What learning from use keeps for tool search: a word of a search_tools
-- query and a catalogue tool that a run of the same session called after
-- it, with how often that happened. Names and words only: never a
-- program's arguments or results. Per installation (every principal's
-- searches teach the one index), bounded in rows (searchlinks.go), and
-- emptied by `codecell memory reset-learning`.
CREATE TABLE search_links (
	term       TEXT NOT NULL,
	tool       TEXT NOT NULL,
	count      INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (term, tool)
) STRICT;

CREATE INDEX search_links_updated ON search_links (updated_at);
