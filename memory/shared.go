package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// State that several codecell instances share through one store (one
// SQLite file in WAL mode here, PostgreSQL for a team): the token vaults'
// sealed entries and the per-principal rate-limit windows (migration
// 0013), the filter key's fingerprint, and what an operator needs to see
// whether the store is ready and how its connections are used.

// VaultToken is one sealed entry of a session's token vault. Sealed is
// opaque to the store: the filter encrypts it before and decrypts it after
// (filter.Vault), so the database never holds a value in clear.
type VaultToken struct {
	Principal string
	Session   string
	Token     string
	Sealed    []byte
	Expires   time.Time
}

// PutVaultTokens stores tokens, replacing those already stored under the
// same principal, session and token (their sources or expiry changed).
func (s *Store) PutVaultTokens(ctx context.Context, tokens ...VaultToken) error {
	if len(tokens) == 0 {
		return nil
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO vault_tokens (principal, session, token, sealed, expires_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (principal, session, token) DO UPDATE SET sealed = excluded.sealed, expires_at = excluded.expires_at`)
		if err != nil {
			return fmt.Errorf("put vault tokens: %w", err)
		}
		defer st.Close()
		for _, t := range tokens {
			if err := CheckVaultToken(t); err != nil {
				return err
			}
			if _, err := st.ExecContext(ctx, t.Principal, t.Session, t.Token, t.Sealed, ms(t.Expires)); err != nil {
				return fmt.Errorf("put vault tokens: %w", err)
			}
		}
		return nil
	})
}

// GetVaultToken returns the token stored for principal and session, or an
// error wrapping ErrNotFound when there is none or it expired.
func (s *Store) GetVaultToken(ctx context.Context, principal, session, token string) (VaultToken, error) {
	t := VaultToken{Principal: principal, Session: session, Token: token}
	var exp int64
	err := s.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT sealed, expires_at FROM vault_tokens
			WHERE principal = ? AND session = ? AND token = ? AND expires_at > ?`,
			principal, session, token, ms(s.now())).Scan(&t.Sealed, &exp)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return VaultToken{}, fmt.Errorf("get vault token: %w", ErrNotFound)
	}
	if err != nil {
		return VaultToken{}, fmt.Errorf("get vault token: %w", err)
	}
	t.Expires = fromMS(exp)
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
	if err := CheckReserve(limit, n); err != nil {
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
	return Reserved(total, limit, n), nil
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

// ErrKeyMismatch is an instance whose filter key is not the one the other
// instances on the store use: their tokens would not resolve on it.
var ErrKeyMismatch = errors.New("filter key mismatch")

// FilterKeyMeta is the meta key under which a store keeps the shared
// filter key's fingerprint (CheckFilterKey).
const FilterKeyMeta = "filter_key_id"

// CheckFilterKey records id, a fingerprint of the filter key (never the
// key), as the one every instance on this store must use, or, when one is
// recorded already, fails with ErrKeyMismatch unless id is the same.
func (s *Store) CheckFilterKey(ctx context.Context, id string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		have, ok, err := getMeta(ctx, tx, FilterKeyMeta)
		if err != nil {
			return err
		}
		if !ok {
			return setMeta(ctx, tx, FilterKeyMeta, id)
		}
		if have != id {
			return FilterKeyMismatch(id, have)
		}
		return nil
	})
}

// Ready reports whether the store can serve: it answers a query on a
// reader and on the writer, and its schema is this build's. The error
// says which of these failed.
func (s *Store) Ready(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	var v int
	if err := s.r.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("store unreachable: %w", err)
	}
	if want := SchemaVersion(); v != want {
		return fmt.Errorf("%w: the database has schema version %d, this build needs %d", ErrSchema, v, want)
	}
	if s.w != nil && s.w != s.r {
		if err := s.w.PingContext(ctx); err != nil {
			return fmt.Errorf("store writer unreachable: %w", err)
		}
	}
	return nil
}

// PoolStats describes a store's database connections, as a pool of any
// backend can: database/sql's for SQLite, pgxpool's for PostgreSQL.
type PoolStats struct {
	// MaxOpen is the most connections the pool opens (0: no limit).
	MaxOpen int
	// Open, InUse and Idle are the connections open now, in use and idle.
	Open, InUse, Idle int
	// WaitCount counts the times a caller waited for a connection, and
	// WaitDuration the time they waited in all.
	WaitCount    int64
	WaitDuration time.Duration
}

// PoolStats returns the statistics of the store's connections: the
// readers' pool and the single writer added together.
func (s *Store) PoolStats() PoolStats {
	var ps PoolStats
	add := func(db *sql.DB) {
		st := db.Stats()
		ps.MaxOpen += st.MaxOpenConnections
		ps.Open += st.OpenConnections
		ps.InUse += st.InUse
		ps.Idle += st.Idle
		ps.WaitCount += st.WaitCount
		ps.WaitDuration += st.WaitDuration
	}
	if s.r != nil {
		add(s.r)
	}
	if s.w != nil && s.w != s.r {
		add(s.w)
	}
	return ps
}

// CheckVaultToken checks a token to store as PutVaultTokens does.
func CheckVaultToken(t VaultToken) error {
	if t.Principal == "" || t.Token == "" || len(t.Sealed) == 0 {
		return fmt.Errorf("put vault tokens: %w: a token needs a principal, a token and a sealed value", ErrInvalid)
	}
	return nil
}

// CheckReserve checks the arguments of ReserveQuota.
func CheckReserve(limit, n int) error {
	if n <= 0 || limit <= 0 {
		return fmt.Errorf("reserve quota: %w: want n > 0 and limit > 0, got %d and %d", ErrInvalid, n, limit)
	}
	return nil
}

// Reserved is what ReserveQuota grants of n when the window's counter,
// n included, reached total: n while the window has room, less at its
// end, 0 once limit is spent.
func Reserved(total, limit, n int) int {
	before := total - n
	return max(0, min(n, limit-before))
}

// FilterKeyMismatch is CheckFilterKey's error when the store's instances
// use the key with fingerprint have and this one's is id.
func FilterKeyMismatch(id, have string) error {
	return fmt.Errorf("%w: this instance's filter key is %s, the store's instances use %s; give every instance the same key (filter.key_file on a shared secret, or cluster.key_env)", ErrKeyMismatch, id, have)
}
