package memory

import (
	"errors"
	"fmt"
	"slices"
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
	// Sources are the qualified names of the tools whose results held the
	// value (its data-flow labels), kept beside the sealed value so that
	// every instance adds to them: PutVaultTokens keeps the sources
	// already stored and adds these (up to MaxVaultSources), never
	// replaces them, and GetVaultToken returns them all. A value minted
	// again on another instance, from no source or another, so keeps the
	// labels it had (issue 19: a token resolved on another instance lost
	// them, and passed a data-flow rule there).
	Sources []string
}

// MaxVaultSources bounds the sources a stored token keeps, as the vault
// bounds them in memory.
const MaxVaultSources = 32

// MergeSources returns have with the sources of add it lacks appended,
// up to MaxVaultSources, as PutVaultTokens merges them.
func MergeSources(have, add []string) []string {
	out := append([]string{}, have...)
	for _, s := range add {
		if len(out) >= MaxVaultSources {
			break
		}
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// ErrKeyMismatch is an instance whose filter key is not the one the other
// instances on the store use: their tokens would not resolve on it.
var ErrKeyMismatch = errors.New("filter key mismatch")

// FilterKeyMeta is the meta key under which a store keeps the shared
// filter key's fingerprint (CheckFilterKey).
const FilterKeyMeta = "filter_key_id"

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
