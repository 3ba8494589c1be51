-- State that instances behind one load balancer share through the store.
--
-- vault_tokens: the session token vaults' entries, so that a token minted
-- by one instance resolves on another. sealed is the entry (value, class,
-- sources) encrypted with AES-256-GCM under a key derived from the filter
-- key, bound to (principal, session, token): the database never holds a
-- value in clear. Rows past expires_at (ms) are dead and pruned.
CREATE TABLE vault_tokens (
	principal  TEXT NOT NULL,
	session    TEXT NOT NULL,
	token      TEXT NOT NULL,
	sealed     BLOB NOT NULL,
	expires_at INTEGER NOT NULL,
	PRIMARY KEY (principal, session, token)
) STRICT, WITHOUT ROWID;

CREATE INDEX vault_tokens_expires ON vault_tokens (expires_at);

-- rate_windows: per-principal rate limits as fixed-window counters; key
-- names the limit and the principal, window_start (ms) the window; n is
-- the quota the instances reserved in it.
CREATE TABLE rate_windows (
	key          TEXT NOT NULL,
	window_start INTEGER NOT NULL,
	n            INTEGER NOT NULL,
	PRIMARY KEY (key, window_start)
) STRICT, WITHOUT ROWID;

CREATE INDEX rate_windows_start ON rate_windows (window_start);
