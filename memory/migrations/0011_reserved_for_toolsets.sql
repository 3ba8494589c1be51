-- Placeholder on the multi branch only: 0011 belongs to the toolsets
-- branch. The lead drops this file when merging.
SELECT 1;
