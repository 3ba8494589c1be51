package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/codecell/codecell/filter"
)

// testSessions are sessions on a clock that moves a second at each use,
// counting what they evict by reason.
func testSessions(t *testing.T, lim SessionLimits) (*sessions, map[string]int) {
	t.Helper()
	key, err := filter.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	evicted := map[string]int{}
	ss := newSessions(key, nil, lim, nil, func(reason string) { evicted[reason]++ })
	clock := time.Unix(1e9, 0)
	ss.now = func() time.Time {
		clock = clock.Add(time.Second)
		return clock
	}
	return ss, evicted
}

// fill opens principal's session id and tokenizes n addresses in its
// vault, the same n in every vault, so that filled vaults hold as much.
func fill(t *testing.T, ss *sessions, principal, id string, n int) *Session {
	t.Helper()
	s, err := ss.get(principal, id)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		s.vault.Tokenize(filter.ClassEmail, fmt.Sprintf("user%06d@example.org", i), nil)
	}
	return s
}

func (ss *sessions) has(principal, id string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	_, ok := ss.m[sessionKey{principal, id}]
	return ok
}

// TestSweepEvictsTheLargestHolderFirst (issue 19, third round M2): over
// the total, the sweep dropped the least recently used sessions of
// anyone, so bob's sessions evicted alice's idle one. It now drops the
// largest holder's least recently used sessions first.
func TestSweepEvictsTheLargestHolderFirst(t *testing.T) {
	t.Parallel()
	one := fill(t, mustSessions(t), "x", "x", 100).vault.Stats().Bytes
	// Each principal may hold twice the total: only the total's rule acts.
	ss, evicted := testSessions(t, SessionLimits{VaultBytes: 2 * one, PrincipalVaultBytes: 20 * one, TotalVaultBytes: 10 * one})
	fill(t, ss, "alice", "a", 100) // the least recently used of all
	for i := range 12 {
		fill(t, ss, "bob", fmt.Sprint(i), 100)
	}
	count, held := ss.sweep()
	if !ss.has("alice", "a") {
		t.Errorf("the sweep dropped alice's session for bob's vaults: %v", evicted)
	}
	if held > 10*one || count != 10 || evicted["total_vault_bytes"] != 3 {
		t.Errorf("after the sweep %d sessions hold %d bytes (cap %d), evicted %v; want 10 sessions, 3 of bob's evicted", count, held, 10*one, evicted)
	}
	for i := range 3 {
		if ss.has("bob", fmt.Sprint(i)) {
			t.Errorf("bob's session %d, among his least recently used, was kept", i)
		}
	}
}

// TestPrincipalVaultShare: a principal's vaults together hold at most its
// share (a quarter of the total by default); its own least recently used
// sessions go when it opens another or at the sweep, nobody else's.
func TestPrincipalVaultShare(t *testing.T) {
	t.Parallel()
	one := fill(t, mustSessions(t), "x", "x", 100).vault.Stats().Bytes
	ss, evicted := testSessions(t, SessionLimits{VaultBytes: 2 * one, TotalVaultBytes: 40 * one})
	if got := ss.limits.PrincipalVaultBytes; got != 10*one {
		t.Fatalf("default share %d, want a quarter of the total %d", got, 10*one)
	}
	fill(t, ss, "alice", "a", 100)
	for i := range 12 {
		fill(t, ss, "bob", fmt.Sprint(i), 100)
	}
	// Opening his twelfth session found bob at his share: his oldest went.
	if evicted["principal_vault_bytes"] != 1 || ss.has("bob", "0") || !ss.has("bob", "1") {
		t.Errorf("after bob's twelfth session: evicted %v", evicted)
	}
	// Filling the twelfth took him past his share again; the sweep trims
	// him back to it.
	count, held := ss.sweep()
	if !ss.has("alice", "a") || count != 11 || held > 11*one || evicted["principal_vault_bytes"] != 2 || evicted["total_vault_bytes"] != 0 {
		t.Errorf("after the sweep %d sessions hold %d bytes, evicted %v; want alice's and 10 of bob's", count, held, evicted)
	}
	// The default share never falls below one vault.
	if l := (SessionLimits{VaultBytes: 8 << 20, TotalVaultBytes: 16 << 20}).withDefaults(); l.PrincipalVaultBytes != 8<<20 {
		t.Errorf("share %d below one vault's %d", l.PrincipalVaultBytes, 8<<20)
	}
}

func mustSessions(t *testing.T) *sessions {
	ss, _ := testSessions(t, SessionLimits{})
	return ss
}
