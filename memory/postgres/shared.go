package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
)

// State the instances on one database share, as memory/shared.go keeps
// it on SQLite: the token vaults' sealed entries, the per-principal
// rate-limit windows, the filter key's fingerprint; and what an operator
// needs to see how the pool is used (Ready is in store.go).
//
// Times: a token's expiry is the instance's (the filter sets it), and
// expiry is judged by this store's clock (Config.Now), as on SQLite; a
// rate window is the one the caller names (its start, from its clock),
// not one computed from PostgreSQL's now(): the caller keeps its
// reservation under that window and spends it until the window's end by
// its own clock, so the database must count the same window. Instances
// whose clocks disagree by d reserve in neighbouring windows for up to d
// at each edge; mcpserver's sharedQuota states that tolerance.

// PutVaultTokens stores tokens, replacing those already stored under the
// same principal, session and token (their sealed value and expiry), and
// adding their sources to those stored (memory.VaultToken.Sources): the
// union, in the order first stored, up to memory.MaxVaultSources, in the
// statement that writes the row, so that instances adding at once lose
// none. One invalid token stores none.
func (s *Store) PutVaultTokens(ctx context.Context, tokens ...memory.VaultToken) error {
	if len(tokens) == 0 {
		return nil
	}
	for _, t := range tokens {
		if err := memory.CheckVaultToken(t); err != nil {
			return err
		}
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var b pgx.Batch
		for _, t := range tokens {
			b.Queue(`INSERT INTO vault_tokens (principal, session, token, sealed, expires_at, sources) VALUES ($1, $2, $3, $4, $5, $6)
				ON CONFLICT (principal, session, token) DO UPDATE SET sealed = excluded.sealed, expires_at = excluded.expires_at,
					sources = ARRAY(SELECT s FROM unnest(vault_tokens.sources || excluded.sources) WITH ORDINALITY AS u(s, n)
						GROUP BY s ORDER BY min(n) LIMIT `+strconv.Itoa(memory.MaxVaultSources)+`)`,
				t.Principal, t.Session, t.Token, t.Sealed, ms(t.Expires), memory.MergeSources(nil, t.Sources))
		}
		return tx.SendBatch(ctx, &b).Close()
	})
	if err != nil {
		return fmt.Errorf("put vault tokens: %w", err)
	}
	return nil
}

// GetVaultToken returns the token stored for principal and session, or an
// error wrapping memory.ErrNotFound when there is none or it expired.
func (s *Store) GetVaultToken(ctx context.Context, principal, session, token string) (memory.VaultToken, error) {
	if s.closed.Load() {
		return memory.VaultToken{}, fmt.Errorf("get vault token: %w", memory.ErrClosed)
	}
	t := memory.VaultToken{Principal: principal, Session: session, Token: token}
	var exp int64
	err := s.db.QueryRow(ctx, `SELECT sealed, expires_at, sources FROM vault_tokens
		WHERE principal = $1 AND session = $2 AND token = $3 AND expires_at > $4`, principal, session, token, ms(s.now())).Scan(&t.Sealed, &exp, &t.Sources)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.VaultToken{}, fmt.Errorf("get vault token: %w", memory.ErrNotFound)
	}
	if err != nil {
		return memory.VaultToken{}, fmt.Errorf("get vault token: %w", err)
	}
	t.Expires = fromMS(exp)
	return t, nil
}

// DeleteVaultTokens forgets the tokens of one session of principal, when
// the session ends.
func (s *Store) DeleteVaultTokens(ctx context.Context, principal, session string) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM vault_tokens WHERE principal = $1 AND session = $2`, principal, session)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete vault tokens: %w", err)
	}
	return nil
}

// ReserveQuota reserves up to n units of the limit key in the fixed window
// that starts at start, of which limit may be spent in all, and returns
// how many it got: n while the window has room, less at its end, 0 once
// it is spent. The reservation is one atomic statement (INSERT … ON
// CONFLICT DO UPDATE … RETURNING: a concurrent one waits for the row and
// adds to what it committed), so instances reserving together never get
// more than limit between them. The window is start as given; see the
// note on times above.
func (s *Store) ReserveQuota(ctx context.Context, key string, start time.Time, limit, n int) (int, error) {
	if err := memory.CheckReserve(limit, n); err != nil {
		return 0, err
	}
	if s.closed.Load() {
		return 0, fmt.Errorf("reserve quota: %w", memory.ErrClosed)
	}
	var total int64
	err := s.db.QueryRow(ctx, `INSERT INTO rate_windows (key, window_start, n) VALUES ($1, $2, $3)
		ON CONFLICT (key, window_start) DO UPDATE SET n = rate_windows.n + excluded.n RETURNING n`, key, ms(start), n).Scan(&total)
	if err != nil {
		return 0, fmt.Errorf("reserve quota: %w", err)
	}
	return memory.Reserved(int(total), limit, n), nil
}

// PruneShared deletes expired vault tokens and the rate windows that
// started before windowsBefore, and returns how many rows went.
func (s *Store) PruneShared(ctx context.Context, windowsBefore time.Time) (int64, error) {
	var n int64
	err := s.tx(ctx, func(tx pgx.Tx) error {
		n = 0
		tag, err := tx.Exec(ctx, `DELETE FROM vault_tokens WHERE expires_at <= $1`, ms(s.now()))
		if err != nil {
			return fmt.Errorf("prune vault tokens: %w", err)
		}
		n += tag.RowsAffected()
		if tag, err = tx.Exec(ctx, `DELETE FROM rate_windows WHERE window_start < $1`, ms(windowsBefore)); err != nil {
			return fmt.Errorf("prune rate windows: %w", err)
		}
		n += tag.RowsAffected()
		return nil
	})
	return n, err
}

// CheckFilterKey records id, a fingerprint of the filter key (never the
// key), as the one every instance on this database must use, or, when
// one is recorded already, fails with memory.ErrKeyMismatch unless id is
// the same. Of instances starting together with different keys, the
// first to commit records its key and the others fail.
func (s *Store) CheckFilterKey(ctx context.Context, id string) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		// Two statements: the second's snapshot, taken after the first
		// waited for a concurrent insert of the key, sees that insert.
		if _, err := tx.Exec(ctx, `INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, memory.FilterKeyMeta, id); err != nil {
			return fmt.Errorf("check filter key: %w", err)
		}
		var have string
		if err := tx.QueryRow(ctx, `SELECT value FROM meta WHERE key = $1`, memory.FilterKeyMeta).Scan(&have); err != nil {
			return fmt.Errorf("check filter key: %w", err)
		}
		if have != id {
			return memory.FilterKeyMismatch(id, have)
		}
		return nil
	})
}
