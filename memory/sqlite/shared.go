package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// PutVaultTokens stores tokens, replacing those already stored under the
// same principal, session and token (their sealed value and expiry), and
// adding their sources to those stored (memory.VaultToken.Sources): the
// union, in the order first stored, up to memory.MaxVaultSources.
func (s *Store) PutVaultTokens(ctx context.Context, tokens ...memory.VaultToken) error {
	if len(tokens) == 0 {
		return nil
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO vault_tokens (principal, session, token, sealed, expires_at, sources) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (principal, session, token) DO UPDATE SET sealed = excluded.sealed, expires_at = excluded.expires_at,
				sources = (SELECT json_group_array(value) FROM (
					SELECT value FROM (
						SELECT value, key AS n FROM json_each(vault_tokens.sources)
						UNION ALL SELECT value, `+strconv.Itoa(memory.MaxVaultSources)+` + key FROM json_each(excluded.sources))
					GROUP BY value ORDER BY min(n) LIMIT `+strconv.Itoa(memory.MaxVaultSources)+`))`)
		if err != nil {
			return fmt.Errorf("put vault tokens: %w", err)
		}
		defer st.Close()
		for _, t := range tokens {
			if err := memory.CheckVaultToken(t); err != nil {
				return err
			}
			sources, err := json.Marshal(memory.MergeSources(nil, t.Sources))
			if err != nil {
				return fmt.Errorf("put vault tokens: %w", err)
			}
			if _, err := st.ExecContext(ctx, t.Principal, t.Session, t.Token, t.Sealed, ms(t.Expires), string(sources)); err != nil {
				return fmt.Errorf("put vault tokens: %w", err)
			}
		}
		return nil
	})
}

// GetVaultToken returns the token stored for principal and session, or an
// error wrapping ErrNotFound when there is none or it expired.
func (s *Store) GetVaultToken(ctx context.Context, principal, session, token string) (memory.VaultToken, error) {
	t := memory.VaultToken{Principal: principal, Session: session, Token: token}
	var exp int64
	var sources string
	err := s.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT sealed, expires_at, sources FROM vault_tokens
			WHERE principal = ? AND session = ? AND token = ? AND expires_at > ?`,
			principal, session, token, ms(s.now())).Scan(&t.Sealed, &exp, &sources)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return memory.VaultToken{}, fmt.Errorf("get vault token: %w", memory.ErrNotFound)
	}
	if err != nil {
		return memory.VaultToken{}, fmt.Errorf("get vault token: %w", err)
	}
	t.Expires = fromMS(exp)
	if err := json.Unmarshal([]byte(sources), &t.Sources); err != nil {
		return memory.VaultToken{}, fmt.Errorf("get vault token: its sources: %w", err)
	}
	return t, nil
}

// DeleteVaultTokens forgets the tokens of one session of principal, when
// the session ends.
func (s *Store) DeleteVaultTokens(ctx context.Context, principal, session string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM vault_tokens WHERE principal = ? AND session = ?`, principal, session); err != nil {
			return fmt.Errorf("delete vault tokens: %w", err)
		}
		return nil
	})
}

// ReserveQuota reserves up to n units of the limit key in the fixed window
// that starts at start, of which limit may be spent in all, and returns
// how many it got: n while the window has room, less at its end, 0 once
// it is spent. The reservation is one atomic statement, so instances
// reserving together never get more than limit between them.
func (s *Store) ReserveQuota(ctx context.Context, key string, start time.Time, limit, n int) (int, error) {
	if err := memory.CheckReserve(limit, n); err != nil {
		return 0, err
	}
	var total int
	err := s.write(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `INSERT INTO rate_windows (key, window_start, n) VALUES (?, ?, ?)
			ON CONFLICT (key, window_start) DO UPDATE SET n = n + excluded.n RETURNING n`, key, ms(start), n).Scan(&total)
	})
	if err != nil {
		return 0, fmt.Errorf("reserve quota: %w", err)
	}
	return memory.Reserved(total, limit, n), nil
}

// PruneShared deletes expired vault tokens and the rate windows that
// started before windowsBefore, and returns how many rows went.
func (s *Store) PruneShared(ctx context.Context, windowsBefore time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, `DELETE FROM vault_tokens WHERE expires_at <= ?`, ms(s.now()))
		if err != nil {
			return fmt.Errorf("prune vault tokens: %w", err)
		}
		a, _ := r.RowsAffected()
		if r, err = tx.ExecContext(ctx, `DELETE FROM rate_windows WHERE window_start < ?`, ms(windowsBefore)); err != nil {
			return fmt.Errorf("prune rate windows: %w", err)
		}
		b, _ := r.RowsAffected()
		n = a + b
		return nil
	})
	return n, err
}

// CheckFilterKey records id, a fingerprint of the filter key (never the
// key), as the one every instance on this store must use, or, when one is
// recorded already, fails with ErrKeyMismatch unless id is the same.
func (s *Store) CheckFilterKey(ctx context.Context, id string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		have, ok, err := getMeta(ctx, tx, memory.FilterKeyMeta)
		if err != nil {
			return err
		}
		if !ok {
			return setMeta(ctx, tx, memory.FilterKeyMeta, id)
		}
		if have != id {
			return memory.FilterKeyMismatch(id, have)
		}
		return nil
	})
}
