-- Placeholder for migration 0011, which another branch (toolsets) adds;
-- the numbers must run without gaps. Drop this file when merging that
-- branch's 0011.
SELECT 1;
