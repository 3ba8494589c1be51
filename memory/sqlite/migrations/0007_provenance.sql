-- Provenance: which tool sources the data of a memory, a workspace file or
-- a stored result came from, as JSON whose content package filter
-- defines; the store keeps it as given and returns it on read. NULL: none
-- recorded (everything stored before this migration).
ALTER TABLE memories ADD COLUMN provenance TEXT;
ALTER TABLE workspace_files ADD COLUMN provenance TEXT;
ALTER TABLE results ADD COLUMN provenance TEXT;
