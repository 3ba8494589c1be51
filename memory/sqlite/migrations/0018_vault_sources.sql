-- A shared vault's token keeps the sources of its value (the tools whose
-- results held it) in clear beside the sealed value, as a JSON array of
-- tool names, so that every instance adds to them and every instance that
-- resolves the token knows them: the sealed copy is the last writer's
-- alone, and an instance that minted the value again from no source
-- replaced it. '[]': none recorded (rows written before this migration
-- still carry theirs in the sealed value).
ALTER TABLE vault_tokens ADD COLUMN sources TEXT NOT NULL DEFAULT '[]';
