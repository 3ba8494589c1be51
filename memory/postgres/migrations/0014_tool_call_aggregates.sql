-- Past a principal's daily allowance of audited calls, a run's calls of
-- one tool with one outcome are kept as one row: calls is how many it
-- stands for (0 on the row of a single call). Issue 19, attack9's D9.
ALTER TABLE tool_calls ADD COLUMN calls BIGINT NOT NULL DEFAULT 0;
