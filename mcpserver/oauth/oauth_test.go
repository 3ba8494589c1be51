package oauth_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/codecell/codecell/mcpserver/oauth"
	"github.com/codecell/codecell/mcpserver/oauth/oauthtest"
)

const resource = "https://mcp.example.test/mcp"

// clock is a settable time for the validator.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newValidator(tb testing.TB, cfg oauth.Config) *oauth.Validator {
	tb.Helper()
	if cfg.Resource == "" {
		cfg.Resource = resource
	}
	v, err := oauth.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

func TestValidateJWT(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	esKid := as.AddKey(t, jose.ES256)
	rsKid := "rs256-1"
	v := newValidator(t, oauth.Config{Issuers: []string{as.URL}})
	email := newValidator(t, oauth.Config{Issuers: []string{as.URL}, PrincipalClaim: "email"})

	with := func(edit func(map[string]any)) map[string]any {
		c := as.Claims("alice", resource, "tools:read", "memory:write")
		edit(c)
		return c
	}
	stranger := oauthtest.New(t) // another issuer's key, for forgeries
	otherRSA, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := func() []byte {
		der, err := x509.MarshalPKIXPublicKey(as.PublicKey(rsKid))
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}()
	for _, tc := range []struct {
		name      string
		v         *oauth.Validator
		token     string
		principal string
		scopes    []string
		reason    string // in the error, when refused
	}{
		{name: "rs256", token: as.SignWith(t, rsKid, with(func(map[string]any) {})), principal: "alice", scopes: []string{"memory:write", "tools:read"}},
		{name: "es256", token: as.SignWith(t, esKid, with(func(map[string]any) {})), principal: "alice", scopes: []string{"memory:write", "tools:read"}},
		{name: "audience list", token: as.Sign(t, with(func(c map[string]any) { c["aud"] = []string{"other", resource} })), principal: "alice", scopes: []string{"memory:write", "tools:read"}},
		{name: "scp array", token: as.Sign(t, with(func(c map[string]any) { delete(c, "scope"); c["scp"] = []string{"b", "a", "a"} })), principal: "alice", scopes: []string{"a", "b"}},
		{name: "principal claim", v: email, token: as.Sign(t, with(func(c map[string]any) { c["email"] = "alice@example.test" })), principal: "alice@example.test", scopes: []string{"memory:write", "tools:read"}},
		{name: "principal claim missing", v: email, token: as.Sign(t, with(func(map[string]any) {})), reason: `no "email" claim`},
		{name: "wrong audience", token: as.Sign(t, with(func(c map[string]any) { c["aud"] = "https://other.example.test/mcp" })), reason: "another audience"},
		{name: "no audience", token: as.Sign(t, with(func(c map[string]any) { delete(c, "aud") })), reason: "another audience"},
		{name: "expired", token: as.Sign(t, with(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })), reason: "expired"},
		{name: "no exp", token: as.Sign(t, with(func(c map[string]any) { delete(c, "exp") })), reason: "no exp"},
		{name: "not yet valid", token: as.Sign(t, with(func(c map[string]any) { c["nbf"] = time.Now().Add(time.Hour).Unix() })), reason: "not valid yet"},
		{name: "issued in the future", token: as.Sign(t, with(func(c map[string]any) { c["iat"] = time.Now().Add(time.Hour).Unix() })), reason: "future"},
		{name: "wrong issuer", token: stranger.Sign(t, stranger.Claims("alice", resource)), reason: "issuer"},
		{name: "forged signature", token: stranger.SignWith(t, rsKid, with(func(map[string]any) {})), reason: "signature does not verify"},
		{name: "alg none", token: oauthtest.Unsigned(t, with(func(map[string]any) {})), reason: "algorithm not accepted"},
		{name: "hs256 with the public key", token: oauthtest.SignJWT(t, jose.HS256, pubPEM, rsKid, with(func(map[string]any) {})), reason: "algorithm not accepted"},
		{name: "key for another alg", token: oauthtest.SignJWT(t, jose.PS256, otherRSA, rsKid, with(func(map[string]any) {})), reason: "is for RS256"},
		{name: "not a jwt", token: "some-opaque-token", reason: "not a JWT"},
		{name: "garbage jwt", token: "eyJhbGciOi.x.y", reason: "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			val := tc.v
			if val == nil {
				val = v
			}
			id, err := val.Validate(t.Context(), tc.token)
			if tc.reason != "" {
				if !errors.Is(err, oauth.ErrInvalidToken) || !strings.Contains(err.Error(), tc.reason) {
					t.Fatalf("err = %v, want an invalid token error saying %q", err, tc.reason)
				}
				if strings.Contains(err.Error(), tc.token) {
					t.Fatalf("the error holds the token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if id.Subject != tc.principal || id.Principal != as.URL+"#"+tc.principal || !slices.Equal(id.Scopes, tc.scopes) || id.Issuer != as.URL {
				t.Fatalf("identity = %+v, want subject %q (principal %s#%[2]s) scopes %v issuer %[3]s", id, tc.principal, as.URL, tc.scopes)
			}
		})
	}
}

func TestRequiredScopes(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	v := newValidator(t, oauth.Config{Issuers: []string{as.URL}, RequiredScopes: []string{"mcp", "tools:read"}})
	_, err := v.Validate(t.Context(), as.Sign(t, as.Claims("bob", resource, "tools:read")))
	var se *oauth.ScopeError
	if !errors.As(err, &se) || !slices.Equal(se.Missing, []string{"mcp"}) || se.Identity.Subject != "bob" {
		t.Fatalf("err = %v, want a scope error missing mcp", err)
	}
	id, err := v.Validate(t.Context(), as.Sign(t, as.Claims("bob", resource, "tools:read", "mcp", "more")))
	if err != nil || !slices.Equal(id.Scopes, []string{"mcp", "more", "tools:read"}) {
		t.Fatalf("identity %+v, err %v", id, err)
	}
}

// TestKeyRotation follows the issuer through a rotation: a new kid is
// fetched when a token first shows it, an unknown kid costs at most one
// fetch per interval however many tokens carry it, and a retired key is
// refused once the set is fetched again.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	clk := &clock{now: time.Now()}
	v := newValidator(t, oauth.Config{Issuers: []string{as.URL}, Now: clk.Now, KeysMinInterval: time.Minute, KeysMaxAge: time.Hour})
	claims := as.Claims("carol", resource)
	claims["exp"] = clk.Now().Add(3 * time.Hour).Unix() // the clock moves an hour on
	ok := func(tok string) {
		t.Helper()
		if _, err := v.Validate(t.Context(), tok); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(tok, reason string) {
		t.Helper()
		if _, err := v.Validate(t.Context(), tok); !errors.Is(err, oauth.ErrInvalidToken) || !strings.Contains(err.Error(), reason) {
			t.Fatalf("err = %v, want refused for %q", err, reason)
		}
	}
	fetches := func(want int) {
		t.Helper()
		if got := as.JWKSFetches(); got != want {
			t.Fatalf("%d key set fetches, want %d", got, want)
		}
	}
	old := as.SignWith(t, "rs256-1", claims)
	ok(old)
	ok(old)
	fetches(1)

	// Forged kids: once the interval since the last fetch has passed,
	// the first costs one fetch, the next ones none.
	clk.Advance(time.Minute)
	stranger := oauthtest.New(t)
	for range 20 {
		stranger.AddKey(t, jose.RS256)
		forged := stranger.Sign(t, claims) // kid rs256-2, rs256-3, ...: unknown here
		refused(forged, "kid")
	}
	fetches(2)

	// A new key appears; its first token must wait for the interval.
	clk.Advance(time.Minute)
	newKid := as.AddKey(t, jose.ES256)
	fresh := as.SignWith(t, newKid, claims)
	ok(fresh)
	fetches(3)
	ok(old) // both published

	// The old key is retired; once the set is stale it is fetched again
	// and the old key's tokens are refused.
	as.RetireKey("rs256-1")
	ok(old) // still cached
	clk.Advance(time.Hour + time.Second)
	ok(fresh)
	fetches(4)
	refused(old, "kid")
	fetches(4) // within the interval: no fetch for the unknown kid
}

func TestDiscovery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []oauthtest.Option
	}{
		{"rfc8414", nil},
		{"openid", []oauthtest.Option{oauthtest.OIDC()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			as := oauthtest.New(t, tc.opts...)
			v := newValidator(t, oauth.Config{Issuers: []string{as.URL}})
			if _, err := v.Validate(t.Context(), as.Sign(t, as.Claims("dan", resource))); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("jwks url given", func(t *testing.T) {
		t.Parallel()
		as := oauthtest.New(t, oauthtest.OIDC())
		// An issuer whose metadata is nowhere: the keys come from the URL.
		v := newValidator(t, oauth.Config{Issuers: []string{as.URL}, JWKSURL: as.URL + "/jwks"})
		if _, err := v.Validate(t.Context(), as.Sign(t, as.Claims("dan", resource))); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		as := oauthtest.New(t)
		v := newValidator(t, oauth.Config{Issuers: []string{as.URL + "/nowhere"}})
		c := as.Claims("dan", resource)
		c["iss"] = as.URL + "/nowhere"
		if _, err := v.Validate(t.Context(), as.Sign(t, c)); !errors.Is(err, oauth.ErrUnavailable) {
			t.Fatalf("err = %v, want unavailable", err)
		}
	})
	t.Run("urls", func(t *testing.T) {
		got := oauth.DiscoveryURLs("https://as.example.test/tenant/")
		want := []string{"https://as.example.test/.well-known/oauth-authorization-server/tenant", "https://as.example.test/tenant/.well-known/openid-configuration"}
		if !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
}

func TestIntrospection(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	clk := &clock{now: time.Now()}
	cfg := oauth.Config{
		Issuers: []string{as.URL}, IntrospectionURL: as.URL + "/introspect",
		ClientID: oauthtest.IntrospectionClientID, ClientSecret: oauthtest.IntrospectionSecret,
		IntrospectionCacheTTL: time.Minute, Now: clk.Now,
	}
	v := newValidator(t, cfg)

	active := as.Opaque(as.Claims("erin", resource, "tools:read"))
	id, err := v.Validate(t.Context(), active)
	if err != nil || id.Principal != as.URL+"#erin" || !slices.Equal(id.Scopes, []string{"tools:read"}) {
		t.Fatalf("identity %+v, err %v", id, err)
	}
	n := as.Introspections()
	as.Revoke(active)
	if _, err := v.Validate(t.Context(), active); err != nil || as.Introspections() != n {
		t.Fatalf("err %v, %d introspections: want the cached answer", err, as.Introspections()-n)
	}
	clk.Advance(time.Minute + time.Second)
	if _, err := v.Validate(t.Context(), active); !errors.Is(err, oauth.ErrInvalidToken) || !strings.Contains(err.Error(), "not active") {
		t.Fatalf("err = %v, want inactive once the cache expired", err)
	}

	for _, tc := range []struct {
		name, token, reason string
	}{
		{"unknown", "opaque-never-issued", "not active"},
		{"wrong audience", as.Opaque(as.Claims("erin", "https://other.example.test")), "another audience"},
		{"expired", as.Opaque(func() map[string]any {
			c := as.Claims("erin", resource)
			c["exp"] = clk.Now().Add(-time.Hour).Unix()
			return c
		}()), "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := v.Validate(t.Context(), tc.token); !errors.Is(err, oauth.ErrInvalidToken) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("err = %v, want %q", err, tc.reason)
			}
		})
	}
	t.Run("bad credentials", func(t *testing.T) {
		bad := cfg
		bad.ClientSecret = "wrong"
		if _, err := newValidator(t, bad).Validate(t.Context(), as.Opaque(as.Claims("erin", resource))); !errors.Is(err, oauth.ErrUnavailable) {
			t.Fatalf("err = %v, want unavailable", err)
		}
	})
	t.Run("jwt still verified locally", func(t *testing.T) {
		n := as.Introspections()
		if _, err := v.Validate(t.Context(), as.Sign(t, as.Claims("erin", resource))); err != nil || as.Introspections() != n {
			t.Fatalf("err %v, introspections %d", err, as.Introspections()-n)
		}
	})
}

func TestConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  oauth.Config
		want string
	}{
		{"no issuer", oauth.Config{Resource: resource}, "Issuers"},
		{"no resource", oauth.Config{Issuers: []string{"https://as.example.test"}}, "Resource"},
		{"relative resource", oauth.Config{Issuers: []string{"https://as.example.test"}, Resource: "/mcp"}, "Resource"},
		// Third attack round, L10: one key set signed for every issuer.
		{"one jwks_url for two issuers", oauth.Config{Issuers: []string{"https://as.example.test", "https://other.example.test"}, Resource: resource, JWKSURL: "https://as.example.test/keys"}, "JWKSURL"},
		{"introspection without client", oauth.Config{Issuers: []string{"https://as.example.test"}, Resource: resource, IntrospectionURL: "https://as.example.test/i"}, "ClientID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := oauth.New(tc.cfg)
			var ce *oauth.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.want {
				t.Fatalf("err = %v, want a problem with %s", err, tc.want)
			}
		})
	}
}

// TestPrincipalNamespaces: the principal of a token is its claim in its
// issuer's namespace, so that the same sub from two issuers is two
// principals, neither a static token's; prefixes and a mapping merge
// them when asked.
func TestPrincipalNamespaces(t *testing.T) {
	t.Parallel()
	one, two := oauthtest.New(t), oauthtest.New(t)
	principal := func(v *oauth.Validator, token string) string {
		t.Helper()
		id, err := v.Validate(t.Context(), token)
		if err != nil {
			t.Fatal(err)
		}
		if id.Subject != "alice" {
			t.Fatalf("subject %q, want alice", id.Subject)
		}
		return id.Principal
	}
	fromOne, fromTwo := one.Sign(t, one.Claims("alice", resource)), two.Sign(t, two.Claims("alice", resource))
	for _, tc := range []struct {
		name     string
		prefixes map[string]string
		mapping  map[string]string
		one, two string
	}{
		{name: "by issuer", one: one.URL + "#alice", two: two.URL + "#alice"},
		{name: "a prefix of one's own", prefixes: map[string]string{two.URL: "team:"}, one: one.URL + "#alice", two: "team:alice"},
		{name: "two issuers merged", prefixes: map[string]string{one.URL: "team:", two.URL: "team:"}, one: "team:alice", two: "team:alice"},
		{name: "the claim as it is", prefixes: map[string]string{one.URL: ""}, one: "alice", two: two.URL + "#alice"},
		{name: "one identity mapped", mapping: map[string]string{two.URL + "#alice": "alice"}, one: one.URL + "#alice", two: "alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newValidator(t, oauth.Config{Issuers: []string{one.URL, two.URL}, PrincipalPrefixes: tc.prefixes, Principals: tc.mapping})
			if got := principal(v, fromOne); got != tc.one {
				t.Errorf("the first issuer's alice is %q, want %q", got, tc.one)
			}
			if got := principal(v, fromTwo); got != tc.two {
				t.Errorf("the second issuer's alice is %q, want %q", got, tc.two)
			}
		})
	}

	cfg := oauth.Config{Issuers: []string{one.URL, two.URL}, Resource: resource, PrincipalPrefixes: map[string]string{two.URL: ""}}
	for name, want := range map[string]bool{"alice": false, one.URL + "#alice": true, one.URL + "#": true, "https://elsewhere#x": false} {
		if iss, got := cfg.Claims(name); got != want || (got && iss != one.URL) {
			t.Errorf("Claims(%q) = %s, %v; want %v", name, iss, got, want)
		}
	}
	if _, err := oauth.New(oauth.Config{Issuers: []string{one.URL}, Resource: resource, PrincipalPrefixes: map[string]string{two.URL: "x"}}); err == nil || !strings.Contains(err.Error(), "not one of the issuers") {
		t.Errorf("a prefix for an issuer not configured: %v", err)
	}

	// An introspection answer that names no issuer is the only one's,
	// and refused when there are two.
	claims := one.Claims("alice", resource)
	delete(claims, "iss")
	opaque := one.Opaque(claims)
	intro := func(issuers ...string) oauth.Config {
		return oauth.Config{Issuers: issuers, IntrospectionURL: one.URL + "/introspect",
			ClientID: oauthtest.IntrospectionClientID, ClientSecret: oauthtest.IntrospectionSecret}
	}
	if got := principal(newValidator(t, intro(one.URL)), opaque); got != one.URL+"#alice" {
		t.Errorf("introspected alice is %q", got)
	}
	if _, err := newValidator(t, intro(one.URL, two.URL)).Validate(t.Context(), opaque); !errors.Is(err, oauth.ErrInvalidToken) || !strings.Contains(err.Error(), "names no issuer") {
		t.Errorf("an answer without iss among two issuers: %v", err)
	}
}

// TestIntrospectionFlood (issue 19, fourth attack round, A2): every
// unknown token was one introspection call, for anyone who could reach
// the port, and the refusals shared one cache with the identities, whose
// random evictions dropped valid principals' answers. Calls for tokens
// not cached are bounded per client and in all, and refusals are cached
// apart: a flood is refused with ErrTooMany without asking, and a cached
// identity stays cached.
func TestIntrospectionFlood(t *testing.T) {
	t.Parallel()
	as := oauthtest.New(t)
	v := newValidator(t, oauth.Config{
		Issuers: []string{as.URL}, IntrospectionURL: as.URL + "/introspect",
		ClientID: oauthtest.IntrospectionClientID, ClientSecret: oauthtest.IntrospectionSecret,
	})
	good := as.Opaque(as.Claims("erin", resource))
	if _, err := v.Validate(oauth.WithClient(t.Context(), "192.0.2.1"), good); err != nil {
		t.Fatal(err)
	}
	n := as.Introspections()
	attacker := oauth.WithClient(t.Context(), "198.51.100.7")
	var tooMany int
	const flood = 200
	for i := range flood {
		_, err := v.Validate(attacker, fmt.Sprintf("junk-%d", i))
		switch {
		case errors.Is(err, oauth.ErrTooMany):
			tooMany++
		case !errors.Is(err, oauth.ErrInvalidToken):
			t.Fatalf("token %d: err = %v", i, err)
		}
	}
	if calls := as.Introspections() - n; calls > flood/4 || tooMany == 0 {
		t.Errorf("%d unknown tokens from one client: %d introspection calls, %d refused as too many", flood, calls, tooMany)
	}
	if _, err := v.Validate(oauth.WithClient(t.Context(), "192.0.2.1"), good); err != nil {
		t.Errorf("the valid token after the flood: %v", err)
	}
	if as.Introspections() != n+flood-tooMany {
		t.Errorf("the valid token was introspected again after the flood")
	}
}
