package security

import (
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"testing"
	"time"
)

// TestOnePrincipalEvictsAnothersVault (issue 19, third round M2): session
// state is bounded per session (limits.vault_bytes), in sessions per
// principal and for all (total_vault_bytes). The defaults let one
// principal's sessions hold twice the total (64 × 8 MiB against 256 MiB),
// and the sweep dropped the least recently used sessions of anyone: bob,
// filling his own sessions' vaults, evicted alice's idle session, and the
// tokens her model holds no longer resolved. Now a principal's vaults
// together hold at most limits.principal_vault_bytes (a quarter of the
// total by default), and over the total the largest holder loses its
// sessions first. Scaled with the defaults' ratio (64 × 128 KiB against
// 4 MiB) so that bob fills them in seconds.
func TestOnePrincipalEvictsAnothersVault(t *testing.T) {
	t.Parallel()
	s := ruledWith(t, "[limits]\nvault_bytes = 131072\ntotal_vault_bytes = 4194304\nsession_idle_ttl = \"2m\"\n")
	alice := s.open(t, aliceToken)
	tok := regexp.MustCompile(`⟦email:[0-9a-f]+⟧`).FindString(alice.run(`return (await crm.get_contact({id: "c_8812"})).email`).raw)
	if tok == "" {
		t.Fatal("no token")
	}
	use := `return (await util.echo({text: "` + tok + `"})).text.length`
	if rec := alice.run(use); rec.Status != "ok" {
		t.Fatalf("control: alice's token does not resolve: %.400s", rec.raw)
	}
	// Bob mints tokens in 64 sessions of his own.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range 64 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			bob := s.open(t, bobToken)
			bob.run(fmt.Sprintf(`return Array.from({length: 3000}, (_, k) => "user%d.n" + k + "@example.org")`, i), "budget_bytes", 262144)
		}()
	}
	wg.Wait()
	// Wait until bob's vaults were bounded — by his share, or, before
	// the fix, by the sweep for the total (every 30 s here, a quarter of
	// the idle TTL) — then use alice's token.
	evicted := regexp.MustCompile(`codecell_sessions_evicted_total\{reason="(total_vault_bytes|principal_vault_bytes)"\} [1-9]`)
	vaultBytes := regexp.MustCompile(`(?m)^codecell_vault_bytes .*$`)
	deadline := time.Now().Add(90 * time.Second)
	var metrics string
	for {
		_, _, metrics = do(t, http.MethodGet, s.base+"/metrics", map[string]string{"Authorization": "Bearer " + bobToken}, "")
		if evicted.MatchString(metrics) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob's sessions were never evicted for their vaults (%s)", vaultBytes.FindString(metrics))
		}
		time.Sleep(time.Second)
	}
	t.Logf("evicted: %s; %s", evicted.FindAllString(metrics, -1), vaultBytes.FindString(metrics))
	if rec := alice.run(use); rec.Status != "ok" {
		t.Errorf("bob's sessions evicted alice's: her token no longer resolves: %.400s", rec.raw)
	}
	s.open(t, bobToken).normal()
}
