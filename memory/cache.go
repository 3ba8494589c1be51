package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/codecell/codecell/tools"
)

// The cache keeps short-lived values per principal, in two kinds: what
// programs store with cache.set (CacheUser) and the memoised results of
// read-only tools (CacheMemo). An entry lives until its expiry; reads
// never return an expired entry, and Prune deletes them. An entry keeps
// the provenance of its value, as memories and workspace files do (see
// WithProvenance), so that a value cached by one run is known by its
// sources in the next.

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
	// Provenance is the tool sources the value came from; nil when none
	// was recorded.
	Provenance json.RawMessage
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
	// Provenance, set by the server (see WithProvenance); nil takes the
	// context's.
	Provenance json.RawMessage
}

// CacheGet returns the caller's unexpired entry, or ErrNotFound.
func (s *Store) CacheGet(ctx context.Context, kind, key string) (CacheEntry, error) {
	principal := tools.CallerFrom(ctx).Principal
	var e CacheEntry
	var created, expires int64
	var prov sql.NullString
	err := s.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT value, created_at, expires_at, provenance FROM cache_entries WHERE principal = ? AND kind = ? AND key = ? AND expires_at > ?`,
			principal, kind, key, ms(s.now())).Scan(&e.Value, &created, &expires, &prov)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return CacheEntry{}, ErrNotFound
	}
	if err != nil {
		return CacheEntry{}, fmt.Errorf("cache get: %w", err)
	}
	e.CreatedAt, e.ExpiresAt, e.Provenance = fromMS(created), fromMS(expires), provenanceOf(prov)
	return e, nil
}

// CacheSet stores or replaces the caller's entry and returns its expiry.
// It also sweeps the caller's expired entries of that kind.
func (s *Store) CacheSet(ctx context.Context, in CacheSetInput) (time.Time, error) {
	principal := tools.CallerFrom(ctx).Principal
	if err := CheckCacheSet(in); err != nil {
		return time.Time{}, err
	}
	prov, err := s.provenance(ctx, in.Provenance, "")
	if err != nil {
		return time.Time{}, err
	}
	now := s.now()
	expires := now.Add(in.TTL)
	err = s.write(ctx, func(tx *sql.Tx) error {
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
		_, err := tx.ExecContext(ctx, `INSERT INTO cache_entries (principal, kind, key, value, created_at, expires_at, provenance) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (principal, kind, key) DO UPDATE SET value = excluded.value, created_at = excluded.created_at, expires_at = excluded.expires_at,
			provenance = excluded.provenance`,
			principal, in.Kind, in.Key, in.Value, ms(now), ms(expires), provenanceArg(prov))
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
