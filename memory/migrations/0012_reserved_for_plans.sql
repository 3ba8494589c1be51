-- Placeholder on the multi branch only: 0012 belongs to the plans branch.
-- The lead drops this file when merging.
SELECT 1;
