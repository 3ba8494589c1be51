-- memory/migrations/0011 and the audit columns of 0012: the toolset an
-- execution's principal had (its key and its rules as text; empty when
-- every tool was reachable), whether a run was a plan or a commit (with
-- the plan's id hash), and which tool calls came from the memo cache or
-- were recorded by a dry run. cached and planned are 0 or 1, as on
-- SQLite, so that rows copy as they are.
ALTER TABLE executions ADD COLUMN toolset TEXT NOT NULL DEFAULT '';
ALTER TABLE executions ADD COLUMN toolset_description TEXT NOT NULL DEFAULT '';
ALTER TABLE executions ADD COLUMN mode TEXT NOT NULL DEFAULT '';
ALTER TABLE executions ADD COLUMN plan_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE tool_calls ADD COLUMN cached BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tool_calls ADD COLUMN planned BIGINT NOT NULL DEFAULT 0;
