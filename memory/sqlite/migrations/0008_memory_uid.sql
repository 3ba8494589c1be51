-- A stable identity for each memory, carried by exports, so that
-- importing an export into a store that already holds its memories (the
-- same store, or one it was restored to) skips them instead of doubling
-- them. The id column cannot serve: an import into another store gives
-- memories new ids. Existing memories get random identities here; new
-- ones get them from the store (newID) or from the export they came from.
ALTER TABLE memories ADD COLUMN uid TEXT;
UPDATE memories SET uid = lower(hex(randomblob(16)));
CREATE UNIQUE INDEX memories_uid ON memories (uid);
