-- memory/migrations/0013: state the instances on one database share.
--
-- vault_tokens: the session token vaults' entries, sealed by the filter
-- (AES-256-GCM under a key derived from the filter key, bound to
-- principal, session and token): the database never holds a value in
-- clear. Rows past expires_at (ms) are dead and pruned.
CREATE TABLE vault_tokens (
	principal  TEXT NOT NULL,
	session    TEXT NOT NULL,
	token      TEXT NOT NULL,
	sealed     BYTEA NOT NULL,
	expires_at BIGINT NOT NULL,
	PRIMARY KEY (principal, session, token)
);

CREATE INDEX vault_tokens_expires ON vault_tokens (expires_at);

-- rate_windows: per-principal rate limits as fixed-window counters; key
-- names the limit and the principal, window_start (ms) the window, as
-- the instance that reserves computes it; n is the quota the instances
-- reserved in it.
CREATE TABLE rate_windows (
	key          TEXT NOT NULL,
	window_start BIGINT NOT NULL,
	n            BIGINT NOT NULL,
	PRIMARY KEY (key, window_start)
);

CREATE INDEX rate_windows_start ON rate_windows (window_start);
