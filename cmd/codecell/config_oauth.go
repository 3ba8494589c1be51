package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/codecell/codecell/mcpserver/oauth"
)

// This file reads the [auth.oauth] table: codecell as an OAuth 2.1
// resource server (mcpserver/oauth), beside the static tokens.
//
//	[auth.oauth]
//	issuer = "https://login.example.com/realms/team"
//	resource = "https://mcp.example.com/mcp"
//	required_scopes = ["mcp"]
//	[auth.oauth.principal_prefix]      # principals "team:<sub>", not "<issuer>#<sub>"
//	"https://login.example.com/realms/team" = "team:"
//	[auth.oauth.principals]            # one identity merged into a static principal
//	"team:alice" = "alice"

// OAuthConfig is the [auth.oauth] table. OAuth is on when an issuer is
// named.
type OAuthConfig struct {
	// Issuer and Issuers name the authorization servers whose tokens are
	// accepted; both may be used.
	Issuer  string   `toml:"issuer"`
	Issuers []string `toml:"issuers"`
	// Resource is this server's URL as clients reach it (the /mcp
	// endpoint); tokens must be issued for it.
	Resource string `toml:"resource"`
	// Audiences are other accepted "aud" values; default Resource.
	Audiences []string `toml:"audiences"`
	// JWKSURL overrides the jwks_uri of the issuer's metadata; with one
	// issuer only.
	JWKSURL string `toml:"jwks_url"`
	// IntrospectionURL checks opaque tokens (RFC 7662) with ClientID and
	// the secret in the environment variable ClientSecretEnv.
	IntrospectionURL string `toml:"introspection_url"`
	ClientID         string `toml:"client_id"`
	ClientSecretEnv  string `toml:"client_secret_env"`
	// PrincipalClaim names the principal; default "sub".
	PrincipalClaim string `toml:"principal_claim"`
	// PrincipalPrefix maps an issuer to the prefix of its principals;
	// default the issuer's URL and "#" (oauth.Config.PrincipalPrefixes).
	PrincipalPrefix map[string]string `toml:"principal_prefix"`
	// Principals maps a principal, prefixed, to another
	// (oauth.Config.Principals).
	Principals     map[string]string `toml:"principals"`
	RequiredScopes []string          `toml:"required_scopes"`
	ClockSkew      Duration          `toml:"clock_skew"`
	// KeysMaxAge and KeysMinInterval: how long keys are used before they
	// are fetched again, and the least time between two fetches for an
	// unknown kid.
	KeysMaxAge            Duration `toml:"keys_max_age"`
	KeysMinInterval       Duration `toml:"keys_min_interval"`
	IntrospectionCacheTTL Duration `toml:"introspection_cache_ttl"`

	// clientSecret is read from ClientSecretEnv by validation.
	clientSecret string
}

// enabled reports whether the table turns OAuth on.
func (o OAuthConfig) enabled() bool { return o.Issuer != "" || len(o.Issuers) > 0 }

// serverConfig is the validator's configuration; nil when OAuth is off.
func (o OAuthConfig) serverConfig() *oauth.Config {
	if !o.enabled() {
		return nil
	}
	var issuers []string
	if o.Issuer != "" {
		issuers = append(issuers, o.Issuer)
	}
	issuers = append(issuers, o.Issuers...)
	return &oauth.Config{
		Issuers:               issuers,
		Resource:              o.Resource,
		Audiences:             o.Audiences,
		JWKSURL:               o.JWKSURL,
		IntrospectionURL:      o.IntrospectionURL,
		ClientID:              o.ClientID,
		ClientSecret:          o.clientSecret,
		PrincipalClaim:        o.PrincipalClaim,
		PrincipalPrefixes:     o.PrincipalPrefix,
		Principals:            o.Principals,
		RequiredScopes:        o.RequiredScopes,
		ClockSkew:             time.Duration(o.ClockSkew),
		KeysMaxAge:            time.Duration(o.KeysMaxAge),
		KeysMinInterval:       time.Duration(o.KeysMinInterval),
		IntrospectionCacheTTL: time.Duration(o.IntrospectionCacheTTL),
	}
}

// oauthKeys maps the validator's fields to the keys of [auth.oauth].
var oauthKeys = map[string]string{
	"Issuers":           "auth.oauth.issuer",
	"Resource":          "auth.oauth.resource",
	"JWKSURL":           "auth.oauth.jwks_url",
	"IntrospectionURL":  "auth.oauth.introspection_url",
	"ClientID":          "auth.oauth.client_id",
	"ClockSkew":         "auth.oauth.clock_skew",
	"PrincipalPrefixes": "auth.oauth.principal_prefix",
	"Principals":        "auth.oauth.principals",
}

// validateOAuth checks [auth.oauth] and reads the client secret from the
// environment.
func (c *Config) validateOAuth(env func(string) string) []error {
	o := &c.Auth.OAuth
	if !o.enabled() {
		if o.Resource+o.JWKSURL+o.IntrospectionURL+o.ClientID != "" {
			return []error{configError{"auth.oauth.issuer", "is empty; name the authorization server (its issuer URL) to turn OAuth on"}}
		}
		return nil
	}
	var errs []error
	if o.ClientSecretEnv != "" {
		o.clientSecret = env(o.ClientSecretEnv)
		if o.clientSecret == "" {
			errs = append(errs, configError{"auth.oauth.client_secret_env", "environment variable " + o.ClientSecretEnv + " is empty or unset"})
		}
	} else if o.IntrospectionURL != "" {
		errs = append(errs, configError{"auth.oauth.client_secret_env", "introspection needs the client secret: name the environment variable that holds it"})
	}
	for _, d := range []struct {
		key string
		v   Duration
	}{
		{"auth.oauth.keys_max_age", o.KeysMaxAge},
		{"auth.oauth.keys_min_interval", o.KeysMinInterval},
		{"auth.oauth.introspection_cache_ttl", o.IntrospectionCacheTTL},
	} {
		if d.v < 0 {
			errs = append(errs, configError{d.key, "must not be negative"})
		}
	}
	sc := *o.serverConfig()
	for i, t := range c.Auth.Tokens {
		if iss, ok := sc.Claims(t.Principal); ok {
			errs = append(errs, configError{fmt.Sprintf("auth.tokens[%d].principal", i),
				fmt.Sprintf("%q is named like the principals of OAuth issuer %s (%q…), which must stay apart; rename it, or set that issuer's auth.oauth.principal_prefix (map one identity to it with auth.oauth.principals)", t.Principal, iss, sc.PrincipalPrefix(iss))})
		}
	}
	_, err := oauth.New(sc)
	var list interface{ Unwrap() []error }
	if errors.As(err, &list) {
		for _, e := range list.Unwrap() {
			var ce *oauth.ConfigError
			if errors.As(e, &ce) {
				errs = append(errs, configError{oauthKeys[ce.Field], ce.Problem})
			}
		}
	}
	return errs
}
