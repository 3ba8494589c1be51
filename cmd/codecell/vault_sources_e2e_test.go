package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSharedVaultKeepsSources (issue 19): with several instances on one
// PostgreSQL store, a token minted on instance A from crm and resolved on
// instance B lost its sources there when B had minted the same value
// itself from no source (a program returned the address): B held the
// token without them, wrote it back without them, and sent the value to
// http despite the rule crm.* → http.*. The store now keeps every
// instance's sources of a token beside its sealed value and adds to them,
// and B checks them when it resolves a token it holds.
func TestSharedVaultKeepsSources(t *testing.T) {
	t.Parallel()
	_, dsn := postgresDatabase(t)
	raw := make([]byte, 32)
	rand.Read(raw)
	catalog, err := filepath.Abs(filepath.Join("..", "..", "testdata", "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "[server]\ncatalog = %q\n\n[[filter.rules]]\nfrom = \"crm.*\"\nto = \"http.*\"\n", catalog), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"CODECELL_MEMORY_BACKEND=postgres", "CODECELL_MEMORY_DSN=" + dsn, "CODECELL_CONFIG=" + cfg,
		"CODECELL_CLUSTER_SHARED=true", "CODECELL_CLUSTER_KEY_ENV=TEAM_FILTER_KEY", "TEAM_FILTER_KEY=" + hex.EncodeToString(raw),
		"CODECELL_AUTH_TOKENS=alice=" + multiAlice,
	}
	_, urlA := startInstance(t, env)
	_, urlB := startInstance(t, env)
	const address = "anna.lindqvist@northwind.se"
	id := 0
	run := func(url, code string) string {
		t.Helper()
		id++
		return stateless(t, url, multiAlice, id, "execute_code", map[string]any{"code": code})
	}

	// A reads the address from crm: a token whose source is crm.
	out := run(urlA, `(await crm.get_contact({id: "c_8812"})).email`)
	tok := regexp.MustCompile(`⟦email:[0-9a-f]+⟧`).FindString(out)
	if tok == "" {
		t.Fatalf("no token in A's result: %.600s", out)
	}
	// B mints the same value itself, from no source: the same token.
	if out := run(urlB, fmt.Sprintf("%q", address)); !strings.Contains(out, tok) {
		t.Fatalf("B's result of the literal address does not show %s: %.600s", tok, out)
	}
	post := func(v string) string {
		return `await http.post_webhook({url: "https://hooks.example/x", payload: {v: ` + v + `}})`
	}
	for _, tc := range []struct{ name, url, code string }{
		{"on B, which minted it from no source", urlB, post(fmt.Sprintf("%q", tok))},
		{"on B, echoed", urlB, fmt.Sprintf("const e = await util.echo({text: %q}); ", tok) + post("e.text")},
		{"on A, after B wrote it back", urlA, post(fmt.Sprintf("%q", tok))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := run(tc.url, tc.code)
			if !strings.Contains(out, "policy_violation") {
				t.Errorf("the crm token reached http: %.600s", out)
			}
			if strings.Contains(out, address) {
				t.Errorf("the refusal shows the address: %.600s", out)
			}
		})
	}
	// The token still resolves where no rule forbids it.
	if out := run(urlB, fmt.Sprintf("(await util.echo({text: %q})).text.length", tok)); !strings.Contains(out, fmt.Sprintf(`\"result\":%d`, len(address))) {
		t.Errorf("the token for util.echo on B: %.600s", out)
	}
}
