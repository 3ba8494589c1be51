package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/codecell/codecell/tools"
)

// The cache keeps short-lived values per principal, in two kinds: what
// programs store with cache.set (CacheUser) and the memoised results of
// read-only tools (CacheMemo). An entry lives until its expiry; reads
// never return an expired entry, and Prune deletes them.

// Cache kinds.
const (
	CacheUser = "user"
	CacheMemo = "memo"
)

// CacheEntry is a cached value.
type CacheEntry struct {
	Value     []byte
	CreatedAt time.Time
	ExpiresAt time.Time
}

// CacheSetInput is a value to cache for the caller in the context.
type CacheSetInput struct {
	Kind  string
	Key   string
	Value []byte
	// TTL is how long the entry lives; it must be positive.
	TTL time.Duration
	// MaxEntries, when positive, bounds the caller's entries of this
	// kind: setting a new key when the caller has that many (unexpired)
	// fails with CodeQuotaExceeded.
	MaxEntries int
}

// CacheGet returns the caller's unexpired entry, or ErrNotFound.
func (s *Store) CacheGet(ctx context.Context, kind, key string) (CacheEntry, error) {
	principal := tools.CallerFrom(ctx).Principal
	var e CacheEntry
	var created, expires int64
	err := s.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT value, created_at, expires_at FROM cache_entries WHERE principal = ? AND kind = ? AND key = ? AND expires_at > ?`,
			principal, kind, key, ms(s.now())).Scan(&e.Value, &created, &expires)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return CacheEntry{}, ErrNotFound
	}
	if err != nil {
		return CacheEntry{}, fmt.Errorf("cache get: %w", err)
	}
	e.CreatedAt, e.ExpiresAt = fromMS(created), fromMS(expires)
	return e, nil
}

// CacheSet stores or replaces the caller's entry and returns its expiry.
// It also sweeps the caller's expired entries of that kind.
func (s *Store) CacheSet(ctx context.Context, in CacheSetInput) (time.Time, error) {
	principal := tools.CallerFrom(ctx).Principal
	if err := CheckCacheSet(in); err != nil {
		return time.Time{}, err
	}
	now := s.now()
	expires := now.Add(in.TTL)
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM cache_entries WHERE principal = ? AND kind = ? AND expires_at <= ?`, principal, in.Kind, ms(now)); err != nil {
			return err
		}
		if in.MaxEntries > 0 {
			var n int
			var exists bool
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(MAX(key = ?), 0) FROM cache_entries WHERE principal = ? AND kind = ?`,
				in.Key, principal, in.Kind).Scan(&n, &exists); err != nil {
				return err
			}
			if !exists && n >= in.MaxEntries {
				return CacheFull(n)
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO cache_entries (principal, kind, key, value, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (principal, kind, key) DO UPDATE SET value = excluded.value, created_at = excluded.created_at, expires_at = excluded.expires_at`,
			principal, in.Kind, in.Key, in.Value, ms(now), ms(expires))
		return err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("cache set: %w", err)
	}
	return expires.UTC(), nil
}

// CacheDelete deletes the caller's entry and reports whether an
// unexpired one was there.
func (s *Store) CacheDelete(ctx context.Context, kind, key string) (bool, error) {
	principal := tools.CallerFrom(ctx).Principal
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM cache_entries WHERE principal = ? AND kind = ? AND key = ? AND expires_at > ?`, principal, kind, key, ms(s.now()))
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		_, err = tx.ExecContext(ctx, `DELETE FROM cache_entries WHERE principal = ? AND kind = ? AND key = ?`, principal, kind, key)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("cache delete: %w", err)
	}
	return n > 0, nil
}

// CheckCacheSet checks an entry to set as CacheSet does.
func CheckCacheSet(in CacheSetInput) error {
	if in.TTL <= 0 {
		return Invalid("cache set: the time to live must be positive")
	}
	if in.Kind == "" || in.Key == "" {
		return Invalid("cache set: kind and key must not be empty")
	}
	return nil
}

// CacheFull is CacheSet's error when the caller holds n unexpired
// entries of the kind, its limit, and sets a new key.
func CacheFull(n int) error {
	return Quota("the cache holds %d entries already, its limit; delete some (cache.delete) or let them expire", n)
}
