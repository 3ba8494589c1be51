-- The toolset an execution's principal had when it ran: its key, which
-- callers under the same access rules share, and the rules as text
-- ("read_only & allow memory.*"). Both empty when every tool was
-- reachable, and for executions recorded before this migration.
ALTER TABLE executions ADD COLUMN toolset TEXT NOT NULL DEFAULT '';
ALTER TABLE executions ADD COLUMN toolset_description TEXT NOT NULL DEFAULT '';
