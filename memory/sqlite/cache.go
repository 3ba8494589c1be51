package sqlite

import (
	"github.com/codecell/codecell/memory"

	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/codecell/codecell/tools"
)

// CacheGet returns the caller's unexpired entry, or ErrNotFound.
func (s *Store) CacheGet(ctx context.Context, kind, key string) (memory.CacheEntry, error) {
	principal := tools.CallerFrom(ctx).Principal
	var e memory.CacheEntry
	var created, expires int64
	var prov sql.NullString
	err := s.read(ctx, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT value, created_at, expires_at, provenance FROM cache_entries WHERE principal = ? AND kind = ? AND key = ? AND expires_at > ?`,
			principal, kind, key, ms(s.now())).Scan(&e.Value, &created, &expires, &prov)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return memory.CacheEntry{}, memory.ErrNotFound
	}
	if err != nil {
		return memory.CacheEntry{}, fmt.Errorf("cache get: %w", err)
	}
	e.CreatedAt, e.ExpiresAt, e.Provenance = fromMS(created), fromMS(expires), provenanceOf(prov)
	return e, nil
}

// CacheSet stores or replaces the caller's entry and returns its expiry.
// It also sweeps the caller's expired entries of that kind.
func (s *Store) CacheSet(ctx context.Context, in memory.CacheSetInput) (time.Time, error) {
	principal := tools.CallerFrom(ctx).Principal
	if err := memory.CheckCacheSet(in); err != nil {
		return time.Time{}, err
	}
	prov, err := memory.Provenance(ctx, in.Provenance, "", s.lim)
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
				return memory.CacheFull(n)
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO cache_entries (principal, kind, key, value, created_at, expires_at, provenance) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (principal, kind, key) DO UPDATE SET value = excluded.value, created_at = excluded.created_at, expires_at = excluded.expires_at,
			provenance = excluded.provenance`,
			principal, in.Kind, in.Key, in.Value, ms(now), ms(expires), provenanceArg(prov))
		if err != nil {
			return err
		}
		if in.Kind == memory.CacheJournal {
			return s.boundJournals(ctx, tx, principal, in.Key, now)
		}
		return s.evictCache(ctx, tx, principal, in.Kind, in.Key, now)
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("cache set: %w", err)
	}
	return expires.UTC(), nil
}

// evictCache deletes the oldest cache entries, expired ones first, of any
// principal, until every value together is within the store's
// MaxCacheBytes, sparing the entry just set. Journals (CacheJournal) are
// neither counted nor evicted: boundJournals bounds them per principal.
// The total is cache_usage's running one (migration 20), not a sum of
// every value; the victims come from the indexes, as many as it takes.
func (s *Store) evictCache(ctx context.Context, tx *sql.Tx, principal, kind, key string, now time.Time) error {
	var total int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(bytes), 0) FROM cache_usage WHERE kind <> ?`, memory.CacheJournal).Scan(&total); err != nil {
		return err
	}
	need := total - s.lim.MaxCacheBytes
	if need <= 0 {
		return nil
	}
	skip := memory.CacheVictim{Principal: principal, Kind: kind, Key: key}
	var victims []memory.CacheVictim
	for _, q := range []string{
		`SELECT principal, kind, key, length(value) FROM cache_entries WHERE expires_at <= ? AND kind <> ? ORDER BY expires_at`,
		`SELECT principal, kind, key, length(value) FROM cache_entries WHERE expires_at > ? AND kind <> ? ORDER BY created_at`,
	} {
		rows, err := tx.QueryContext(ctx, q, ms(now), memory.CacheJournal)
		if err != nil {
			return err
		}
		if victims, need, err = cacheVictims(rows, victims, need, skip); err != nil {
			return err
		}
		if need <= 0 {
			break
		}
	}
	if err := s.deleteCacheVictims(ctx, tx, victims); err != nil {
		return err
	}
	if len(victims) > 0 {
		s.log.Info("cache over its bound: evicted the oldest entries", "entries", len(victims), "max_cache_bytes", s.lim.MaxCacheBytes)
	}
	return nil
}

// boundJournals deletes the principal's oldest journals, expired ones
// first, until its journals together are within MaxPrincipalJournalBytes,
// sparing the one just set: a principal's journals are evicted by its
// own, never by another's writes.
func (s *Store) boundJournals(ctx context.Context, tx *sql.Tx, principal, key string, now time.Time) error {
	var total int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(bytes), 0) FROM cache_usage WHERE principal = ? AND kind = ?`, principal, memory.CacheJournal).Scan(&total); err != nil {
		return err
	}
	need := total - s.lim.MaxPrincipalJournalBytes
	if need <= 0 {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT principal, kind, key, length(value) FROM cache_entries WHERE principal = ? AND kind = ? ORDER BY expires_at > ?, created_at`,
		principal, memory.CacheJournal, ms(now))
	if err != nil {
		return err
	}
	victims, _, err := cacheVictims(rows, nil, need, memory.CacheVictim{Principal: principal, Kind: memory.CacheJournal, Key: key})
	if err != nil {
		return err
	}
	if err := s.deleteCacheVictims(ctx, tx, victims); err != nil {
		return err
	}
	if len(victims) > 0 {
		s.log.Info("a principal's journals over their bound: evicted its oldest", "principal", principal, "entries", len(victims),
			"max_principal_journal_bytes", s.lim.MaxPrincipalJournalBytes)
	}
	return nil
}

// cacheVictims adds to victims the entries rows yields, sparing skip,
// until they free need bytes; it returns what is still needed, and
// closes rows.
func cacheVictims(rows *sql.Rows, victims []memory.CacheVictim, need int64, skip memory.CacheVictim) ([]memory.CacheVictim, int64, error) {
	defer rows.Close()
	for need > 0 && rows.Next() {
		var e memory.CacheVictim
		if err := rows.Scan(&e.Principal, &e.Kind, &e.Key, &e.Bytes); err != nil {
			return nil, 0, err
		}
		if e.Principal == skip.Principal && e.Kind == skip.Kind && e.Key == skip.Key {
			continue // the entry just set
		}
		victims = append(victims, e)
		need -= e.Bytes
	}
	return victims, need, rows.Err()
}

func (s *Store) deleteCacheVictims(ctx context.Context, tx *sql.Tx, victims []memory.CacheVictim) error {
	for _, v := range victims {
		if _, err := tx.ExecContext(ctx, `DELETE FROM cache_entries WHERE principal = ? AND kind = ? AND key = ?`, v.Principal, v.Kind, v.Key); err != nil {
			return err
		}
	}
	return nil
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
