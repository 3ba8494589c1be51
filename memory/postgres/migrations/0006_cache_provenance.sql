-- A cache entry keeps the provenance of its value, as memories, workspace
-- files and stored results do: which tool sources the value came from, so
-- that a value cached by one run and read by another is still known by its
-- sources. NULL: none recorded (entries cached before this migration,
-- which expire within a day).
ALTER TABLE cache_entries ADD COLUMN provenance TEXT;
