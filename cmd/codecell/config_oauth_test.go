package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestOAuthConfig reads [auth.oauth]: every key, the secret from the
// environment, and the validator's configuration made from them.
func TestOAuthConfig(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.toml")
	os.WriteFile(path, []byte(`
[auth.oauth]
issuer = "https://login.example.test/realms/team"
issuers = ["https://other.example.test"]
resource = "https://mcp.example.test/mcp"
audiences = ["codecell"]
introspection_url = "https://login.example.test/introspect"
client_id = "codecell"
client_secret_env = "CODECELL_TEST_OAUTH_SECRET"
principal_claim = "email"
required_scopes = ["mcp"]
clock_skew = "30s"
keys_max_age = "2h"
keys_min_interval = "10s"
introspection_cache_ttl = "1m"
[auth.oauth.principal_prefix]
"https://other.example.test" = "other:"
[auth.oauth.principals]
"other:alice" = "alice"
`), 0o600)
	cfg, pv, err := loadConfig(configSources{path, environ(map[string]string{"CODECELL_TEST_OAUTH_SECRET": "s3cret"}), nil})
	if err != nil {
		t.Fatal(err)
	}
	if len(pv.unknownEnv) > 0 {
		t.Errorf("unknown environment reported: %v", pv.unknownEnv)
	}
	oc := cfg.Auth.OAuth.serverConfig()
	if oc == nil {
		t.Fatal("OAuth is off")
	}
	if !slices.Equal(oc.Issuers, []string{"https://login.example.test/realms/team", "https://other.example.test"}) ||
		oc.Resource != "https://mcp.example.test/mcp" || !slices.Equal(oc.Audiences, []string{"codecell"}) ||
		oc.JWKSURL != "" || oc.IntrospectionURL != "https://login.example.test/introspect" ||
		oc.ClientID != "codecell" || oc.ClientSecret != "s3cret" || oc.PrincipalClaim != "email" ||
		!slices.Equal(oc.RequiredScopes, []string{"mcp"}) || oc.ClockSkew != 30*time.Second ||
		oc.KeysMaxAge != 2*time.Hour || oc.KeysMinInterval != 10*time.Second || oc.IntrospectionCacheTTL != time.Minute ||
		oc.PrincipalPrefix("https://other.example.test") != "other:" || oc.PrincipalPrefix("https://login.example.test/realms/team") != "https://login.example.test/realms/team#" ||
		oc.Principals["other:alice"] != "alice" {
		t.Errorf("validator configuration %+v", *oc)
	}
	if (OAuthConfig{}).serverConfig() != nil {
		t.Error("OAuth is on without an issuer")
	}
}

func TestOAuthConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"no resource", "issuer = \"https://as.example.test\"", []string{"auth.oauth.resource: is empty"}},
		{"bad urls", "issuer = \"as.example.test\"\nresource = \"/mcp\"\njwks_url = \"ftp://x\"", []string{"auth.oauth.issuer:", "auth.oauth.resource:", "auth.oauth.jwks_url:"}},
		{"one jwks_url for two issuers", "issuers = [\"https://as.example.test\", \"https://other.example.test\"]\nresource = \"https://mcp.example.test/mcp\"\njwks_url = \"https://as.example.test/keys\"",
			[]string{"auth.oauth.jwks_url: is the key set of one issuer, and 2 are configured"}},
		{"introspection without secret", "issuer = \"https://as.example.test\"\nresource = \"https://mcp.example.test/mcp\"\nintrospection_url = \"https://as.example.test/i\"",
			[]string{"auth.oauth.client_secret_env: introspection needs", "auth.oauth.client_id:"}},
		{"secret unset", "issuer = \"https://as.example.test\"\nresource = \"https://mcp.example.test/mcp\"\nclient_secret_env = \"CODECELL_TEST_UNSET_SECRET\"", []string{"auth.oauth.client_secret_env: environment variable CODECELL_TEST_UNSET_SECRET is empty"}},
		{"no issuer", "resource = \"https://mcp.example.test/mcp\"", []string{"auth.oauth.issuer: is empty"}},
		{"unknown key", "issuer = \"https://as.example.test\"\nresource = \"https://mcp.example.test/mcp\"\naudience = \"x\"", []string{"auth.oauth.audience: unknown key"}},
		{"prefix of an issuer not configured", "issuer = \"https://as.example.test\"\nresource = \"https://mcp.example.test/mcp\"\n[auth.oauth.principal_prefix]\n\"https://nope.example.test\" = \"x:\"",
			[]string{`auth.oauth.principal_prefix: "https://nope.example.test" is not one of the issuers`}},
		{"static principal named like an issuer's", "issuer = \"https://as.example.test\"\nresource = \"https://mcp.example.test/mcp\"\n[[auth.tokens]]\nprincipal = \"https://as.example.test#alice\"\ntoken = \"alice-0123456789abcdef0123456789\"",
			[]string{`auth.tokens[0].principal: "https://as.example.test#alice" is named like the principals of OAuth issuer https://as.example.test`}},
		{"negative", "issuer = \"https://as.example.test\"\nresource = \"https://mcp.example.test/mcp\"\nkeys_min_interval = \"-1s\"\nclock_skew = \"-1s\"", []string{"auth.oauth.keys_min_interval: must not be negative", "auth.oauth.clock_skew: must not be negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "c.toml")
			os.WriteFile(path, []byte("[auth.oauth]\n"+tc.file+"\n"), 0o600)
			_, _, err := loadConfig(configSources{path, nil, nil})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
