package oauth_test

import (
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/codecell/codecell/mcpserver/oauth"
	"github.com/codecell/codecell/mcpserver/oauth/oauthtest"
)

// BenchmarkValidate measures the cost of one access token check once the
// keys are cached (JWTs) or the answer is (introspection).
func BenchmarkValidate(b *testing.B) {
	as := oauthtest.New(b)
	esKid := as.AddKey(b, jose.ES256)
	v := newValidator(b, oauth.Config{
		Issuers: []string{as.URL}, IntrospectionURL: as.URL + "/introspect",
		ClientID: oauthtest.IntrospectionClientID, ClientSecret: oauthtest.IntrospectionSecret,
	})
	for _, bc := range []struct{ name, token string }{
		{"rs256", as.SignWith(b, "rs256-1", as.Claims("alice", resource, "mcp"))},
		{"es256", as.SignWith(b, esKid, as.Claims("alice", resource, "mcp"))},
		{"introspection-cached", as.Opaque(as.Claims("alice", resource, "mcp"))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if _, err := v.Validate(b.Context(), bc.token); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Validate(b.Context(), bc.token); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/op")
		})
	}
}
