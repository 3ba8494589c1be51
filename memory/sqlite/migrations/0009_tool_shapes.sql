-- What tool sources learned about the results of their tools, one row per
-- source and tool, so that it survives restarts: for an upstream MCP
-- server's tool that declares no output schema, the JSON Schema inferred
-- from the results it returned (package tools/upstream). The content is
-- the source's business; the store keeps it as given, bounded in size and
-- in rows per source (toolshapes.go).
CREATE TABLE tool_shapes (
	source     TEXT NOT NULL,
	tool       TEXT NOT NULL,
	shape      TEXT NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (source, tool)
) STRICT;
