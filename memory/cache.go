package memory

import (
	"encoding/json"
	"time"
)

// The cache keeps short-lived values per principal, in two kinds: what
// programs store with cache.set (CacheUser) and the memoised results of
// read-only tools (CacheMemo). An entry lives until its expiry; reads
// never return an expired entry, and Prune deletes them. An entry keeps
// the provenance of its value, as memories and workspace files do (see
// WithProvenance), so that a value cached by one run is known by its
// sources in the next.

// Cache kinds. CacheJournal holds the journals of runs resumed after
// input_required (protocol 2026-07-28): they are kept apart from the
// shared bound (Limits.MaxCacheBytes neither counts nor evicts them, so
// that no other principal's writes evict a pending run's journal) and
// bounded per principal instead (Limits.MaxPrincipalJournalBytes).
const (
	CacheUser    = "user"
	CacheMemo    = "memo"
	CacheJournal = "mrtr-journal"
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

// CacheVictim is an entry CacheSet evicts to keep every principal's
// entries within Limits.MaxCacheBytes, or a principal's journals within
// Limits.MaxPrincipalJournalBytes.
type CacheVictim struct {
	Principal, Kind, Key string
	Bytes                int64
}

// CacheFull is CacheSet's error when the caller holds n unexpired
// entries of the kind, its limit, and sets a new key.
func CacheFull(n int) error {
	return Quota("the cache holds %d entries already, its limit; delete some (cache.delete) or let them expire", n)
}
