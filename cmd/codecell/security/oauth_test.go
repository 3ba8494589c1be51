package security

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/codecell/codecell/mcpserver/oauth/oauthtest"
)

// TestForgedAndExpiredAccessTokens attacks a binary configured for OAuth
// with access tokens its authorization server did not issue, or no longer
// stands behind: each is refused with invalid_token, none reaches the
// logs, and a good token and a static token still open sessions.
func TestForgedAndExpiredAccessTokens(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	const resource = "http://codecell.test/mcp"
	cfg := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(cfg, []byte("[auth.oauth]\nissuer = \""+as.URL+"\"\nresource = \""+resource+"\"\n"), 0o600)
	s := start(t, "--config", cfg, "--log-level", "debug")

	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	good := func(edit func(map[string]any)) map[string]any {
		c := as.Claims("mallory", resource)
		if edit != nil {
			edit(c)
		}
		return c
	}
	attacks := []struct{ name, token string }{
		{"forged signature", oauthtest.SignJWT(t, jose.RS256, other, "rs256-1", good(nil))},
		{"expired", as.Sign(t, good(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() }))},
		{"another audience", as.Sign(t, good(func(c map[string]any) { c["aud"] = "http://elsewhere.test/mcp" }))},
		{"alg none", oauthtest.Unsigned(t, good(nil))},
		{"principal forged in a good token's payload", tamper(t, as.Sign(t, good(nil)), good(func(c map[string]any) { c["sub"] = "admin" }))},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			code, h, body := do(t, http.MethodPost, s.base+"/mcp", map[string]string{"Authorization": "Bearer " + a.token},
				`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"attacker","version":"1"}}}`)
			if code != http.StatusUnauthorized || !strings.Contains(h.Get("WWW-Authenticate"), `error="invalid_token"`) ||
				!strings.Contains(h.Get("WWW-Authenticate"), `resource_metadata="http://codecell.test/.well-known/oauth-protected-resource/mcp"`) {
				t.Fatalf("status %d, challenge %q: %s", code, h.Get("WWW-Authenticate"), body)
			}
		})
	}
	s.open(t, as.Sign(t, good(nil))).normal()
	s.open(t, aliceToken).normal()
	logs := s.stderr.String()
	for _, a := range attacks {
		if strings.Contains(logs, a.token) {
			t.Fatalf("the log holds the %s token", a.name)
		}
	}
}

// tamper swaps the payload of a signed token for claims, keeping the
// signature.
func tamper(t *testing.T, tok string, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	return parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
}
