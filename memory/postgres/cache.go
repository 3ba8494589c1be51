package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// The cache, as memory/cache.go keeps it on SQLite: short-lived values
// per principal, of two kinds (memory.CacheUser, memory.CacheMemo); reads
// never return an expired entry and Prune deletes them; an entry keeps the
// provenance of its value.

// cacheLockClass is the first key of the transaction-level advisory lock
// a CacheSet with a limit takes on its principal and kind (the second
// key): SQLite's single writer counts and inserts with nobody between,
// and so must two instances here, or both could add the last entry the
// limit allows.
const cacheLockClass = 0x63616368 // "cach"

// CacheGet returns the caller's unexpired entry, or memory.ErrNotFound.
func (s *Store) CacheGet(ctx context.Context, kind, key string) (memory.CacheEntry, error) {
	if s.closed.Load() {
		return memory.CacheEntry{}, memory.ErrClosed
	}
	principal := tools.CallerFrom(ctx).Principal
	var e memory.CacheEntry
	var created, expires int64
	var prov *string
	err := s.db.QueryRow(ctx, `SELECT value, created_at, expires_at, provenance FROM cache_entries
		WHERE principal = $1 AND kind = $2 AND key = $3 AND expires_at > $4`, principal, kind, key, ms(s.now())).Scan(&e.Value, &created, &expires, &prov)
	if errors.Is(err, pgx.ErrNoRows) {
		return memory.CacheEntry{}, memory.ErrNotFound
	}
	if err != nil {
		return memory.CacheEntry{}, fmt.Errorf("cache get: %w", err)
	}
	e.CreatedAt, e.ExpiresAt, e.Provenance = fromMS(created), fromMS(expires), provOf(prov)
	return e, nil
}

// CacheSet stores or replaces the caller's entry and returns its expiry.
// It also sweeps the caller's expired entries of that kind. With
// in.MaxEntries, a new key beyond that many unexpired entries fails with
// memory.CodeQuotaExceeded, however many instances set at once.
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
	err = s.tx(ctx, func(tx pgx.Tx) error {
		if in.MaxEntries > 0 {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1::int4, $2::int4)`, cacheLockClass, cacheLockKey(principal, in.Kind)); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM cache_entries WHERE principal = $1 AND kind = $2 AND expires_at <= $3`, principal, in.Kind, ms(now)); err != nil {
			return err
		}
		if in.MaxEntries > 0 {
			var n int
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(bool_or(key = $1), false) FROM cache_entries WHERE principal = $2 AND kind = $3`,
				in.Key, principal, in.Kind).Scan(&n, &exists); err != nil {
				return err
			}
			if !exists && n >= in.MaxEntries {
				return memory.CacheFull(n)
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO cache_entries (principal, kind, key, value, created_at, expires_at, provenance) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (principal, kind, key) DO UPDATE SET value = excluded.value, created_at = excluded.created_at, expires_at = excluded.expires_at,
			provenance = excluded.provenance`,
			principal, in.Kind, in.Key, in.Value, ms(now), ms(expires), provArg(prov))
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
// The total is cache_usage's running one (migration 11), not a sum of
// every value; the victims come from the indexes, as many as it takes.
// One instance at a time evicts (cacheEvictKey); the others, meanwhile,
// leave it to it rather than wait, as waiting while holding the row they
// set could deadlock with the evictor's deletes.
func (s *Store) evictCache(ctx context.Context, tx pgx.Tx, principal, kind, key string, now time.Time) error {
	total := func() (int64, error) {
		var n int64
		err := tx.QueryRow(ctx, `SELECT COALESCE(SUM(bytes), 0)::bigint FROM cache_usage WHERE kind <> $1`, memory.CacheJournal).Scan(&n)
		return n, err
	}
	n, err := total()
	if err != nil || n <= s.lim.MaxCacheBytes {
		return err
	}
	var mine bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1::int4, $2::int4)`, cacheLockClass, cacheEvictKey).Scan(&mine); err != nil || !mine {
		return err // another instance evicts now
	}
	if n, err = total(); err != nil || n <= s.lim.MaxCacheBytes {
		return err
	}
	need := n - s.lim.MaxCacheBytes
	skip := memory.CacheVictim{Principal: principal, Kind: kind, Key: key}
	var victims []memory.CacheVictim
	for _, q := range []string{
		`SELECT principal, kind, key, octet_length(value) FROM cache_entries WHERE expires_at <= $1 AND kind <> $2 ORDER BY expires_at`,
		`SELECT principal, kind, key, octet_length(value) FROM cache_entries WHERE expires_at > $1 AND kind <> $2 ORDER BY created_at`,
	} {
		rows, err := tx.Query(ctx, q, ms(now), memory.CacheJournal)
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
	if err := deleteCacheVictims(ctx, tx, victims); err != nil {
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
// own, never by another's writes. Two instances setting the principal's
// journals take turns on its cache_usage row, which the insert's trigger
// holds.
func (s *Store) boundJournals(ctx context.Context, tx pgx.Tx, principal, key string, now time.Time) error {
	var total int64
	if err := tx.QueryRow(ctx, `SELECT COALESCE(SUM(bytes), 0)::bigint FROM cache_usage WHERE principal = $1 AND kind = $2`, principal, memory.CacheJournal).Scan(&total); err != nil {
		return err
	}
	need := total - s.lim.MaxPrincipalJournalBytes
	if need <= 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT principal, kind, key, octet_length(value) FROM cache_entries WHERE principal = $1 AND kind = $2 ORDER BY expires_at > $3, created_at`,
		principal, memory.CacheJournal, ms(now))
	if err != nil {
		return err
	}
	victims, _, err := cacheVictims(rows, nil, need, memory.CacheVictim{Principal: principal, Kind: memory.CacheJournal, Key: key})
	if err != nil {
		return err
	}
	if err := deleteCacheVictims(ctx, tx, victims); err != nil {
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
func cacheVictims(rows pgx.Rows, victims []memory.CacheVictim, need int64, skip memory.CacheVictim) ([]memory.CacheVictim, int64, error) {
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
	rows.Close()
	return victims, need, rows.Err()
}

func deleteCacheVictims(ctx context.Context, tx pgx.Tx, victims []memory.CacheVictim) error {
	for _, v := range victims {
		if _, err := tx.Exec(ctx, `DELETE FROM cache_entries WHERE principal = $1 AND kind = $2 AND key = $3`, v.Principal, v.Kind, v.Key); err != nil {
			return err
		}
	}
	return nil
}

// cacheEvictKey is the second key of the lock an instance takes to evict
// cache entries; no principal's lock (cacheLockKey) is taken with it, so
// a collision costs only a wait.
const cacheEvictKey = 0

// cacheLockKey is the second key of a principal's cache lock for kind.
func cacheLockKey(principal, kind string) int32 {
	h := fnv.New32a()
	h.Write([]byte(principal))
	h.Write([]byte{0})
	h.Write([]byte(kind))
	return int32(h.Sum32())
}

// CacheDelete deletes the caller's entry and reports whether an
// unexpired one was there.
func (s *Store) CacheDelete(ctx context.Context, kind, key string) (bool, error) {
	principal := tools.CallerFrom(ctx).Principal
	var live bool
	err := s.tx(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `WITH gone AS (DELETE FROM cache_entries WHERE principal = $1 AND kind = $2 AND key = $3 RETURNING expires_at)
			SELECT EXISTS (SELECT 1 FROM gone WHERE expires_at > $4)`, principal, kind, key, ms(s.now())).Scan(&live)
	})
	if err != nil {
		return false, fmt.Errorf("cache delete: %w", err)
	}
	return live, nil
}
