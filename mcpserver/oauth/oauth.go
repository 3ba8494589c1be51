// Package oauth makes codecell an OAuth 2.1 resource server, as the MCP
// authorization specification asks of an HTTP server: it validates the
// access tokens clients present, either as JWTs signed by a configured
// authorization server (keys from its JWKS, discovered through RFC 8414 or
// OpenID Connect metadata, cached and refreshed) or by asking the
// authorization server (token introspection, RFC 7662), and checks issuer,
// audience (RFC 8707), lifetime and scopes.
//
// It owns token validation and nothing else: it serves no HTTP, knows no
// MCP, and issues no tokens. The protected-resource metadata (RFC 9728) and
// the 401 challenges are mcpserver's; static bearer tokens are too.
// Validation errors never contain the token.
package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Defaults of Config.
const (
	DefaultPrincipalClaim        = "sub"
	DefaultClockSkew             = time.Minute
	DefaultKeysMaxAge            = time.Hour
	DefaultKeysMinInterval       = 30 * time.Second
	DefaultIntrospectionCacheTTL = 2 * time.Minute
	// introspectionCacheSize bounds the introspection answers kept.
	introspectionCacheSize = 4096
)

// Config configures a Validator.
type Config struct {
	// Issuers are the issuer identifiers (RFC 8414) of the authorization
	// servers whose tokens are accepted. At least one.
	Issuers []string
	// Resource is this server's resource identifier (RFC 8707, RFC 9728):
	// the absolute URL clients connect to, such as
	// https://mcp.example.com/mcp. Required.
	Resource string
	// Audiences are the "aud" values accepted; default Resource alone.
	Audiences []string
	// JWKSURL, when set, is where the signing keys of the one issuer
	// are (it is refused with several); otherwise each issuer's metadata
	// names its jwks_uri.
	JWKSURL string
	// IntrospectionURL, when set, is asked about tokens that are not JWTs
	// (RFC 7662), authenticated with ClientID and ClientSecret (HTTP
	// Basic). JWTs are verified locally unless no key set can be found.
	IntrospectionURL       string
	ClientID, ClientSecret string
	// PrincipalClaim names the claim whose value names the principal;
	// default "sub".
	PrincipalClaim string
	// PrincipalPrefixes maps an issuer to the prefix of the principals
	// its tokens name: a token's principal is the prefix followed by its
	// principal claim. An issuer not in the map has DefaultPrefix(issuer),
	// its URL and "#", so that the same claim from two issuers is two
	// principals, neither a static token's principal. The same prefix for
	// two issuers merges their principals; the prefix "" makes the claim
	// the principal as it is, the same as a static token's of that name.
	PrincipalPrefixes map[string]string
	// Principals maps a principal, as the prefix makes it, to another:
	// one identity merged into another principal, such as a static
	// token's ("https://login.example.com#alice" = "alice").
	Principals map[string]string
	// RequiredScopes must all be granted by a token.
	RequiredScopes []string
	// ClockSkew is the leeway for exp, nbf and iat; default one minute.
	ClockSkew time.Duration
	// KeysMaxAge is how long a key set is used before it is fetched again;
	// default one hour.
	KeysMaxAge time.Duration
	// KeysMinInterval is the least time between two fetches of a key set
	// (or of an issuer's metadata) for a token whose kid is unknown: a
	// flood of forged kids cannot hammer the authorization server.
	// Default 30 s.
	KeysMinInterval time.Duration
	// IntrospectionCacheTTL bounds how long an introspection answer is
	// reused, never beyond the token's expiry; default two minutes.
	IntrospectionCacheTTL time.Duration
	// HTTPClient fetches metadata and keys and calls introspection;
	// default a client with a 10 s timeout.
	HTTPClient *http.Client
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Logger receives what the validator does (never tokens); nil
	// discards.
	Logger *slog.Logger
}

// Identity is who a valid access token authenticates.
type Identity struct {
	// Principal is who the token authenticates: the value of the
	// principal claim, prefixed by its issuer's prefix (see
	// Config.PrincipalPrefixes) and mapped by Config.Principals.
	Principal string
	// Subject is the value of the principal claim, as the token has it.
	Subject string
	// Scopes are the scopes the token grants, sorted, without duplicates.
	Scopes []string
	// Issuer is the authorization server that issued the token.
	Issuer string
	// Expiry is when the token expires; zero when an introspection answer
	// did not say.
	Expiry time.Time
}

// ErrInvalidToken is the kind of every refusal of the token itself:
// malformed, badly signed, expired, for another audience or issuer,
// unknown, inactive. The error's text says which, never the token.
var ErrInvalidToken = errors.New("invalid access token")

// ErrUnavailable means the token could not be checked because the
// authorization server (its metadata, keys or introspection endpoint)
// did not answer usefully.
var ErrUnavailable = errors.New("authorization server unavailable")

// ErrTooMany means the token could not be checked now because too many
// tokens were being checked: introspection calls are bounded in number
// and rate, per client and in all. The client may retry shortly.
var ErrTooMany = errors.New("too many access tokens being checked at once")

// ScopeError is a valid token that lacks required scopes.
type ScopeError struct {
	// Identity is who the token authenticates.
	Identity Identity
	// Missing are the required scopes it does not grant.
	Missing []string
}

func (e *ScopeError) Error() string {
	return "access token lacks the scopes " + strings.Join(e.Missing, " ")
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidToken, fmt.Sprintf(format, args...))
}

// ConfigError is a bad Config field.
type ConfigError struct {
	Field, Problem string
}

func (e *ConfigError) Error() string { return "oauth: " + e.Field + ": " + e.Problem }

// Validator validates access tokens. It is safe for concurrent use and
// starts no goroutines: keys are fetched when a token needs them.
type Validator struct {
	cfg  Config
	log  *slog.Logger
	http *http.Client

	// keys holds a key set per issuer, or one under "" for JWKSURL.
	keys map[string]*keySet
	// meta holds each issuer's discovered metadata.
	meta map[string]*issuerMeta

	introMu      sync.Mutex
	introCache   map[[sha256.Size]byte]introEntry // identities
	introRefused map[[sha256.Size]byte]introEntry // refusals, apart
	introCalls   *callBound
}

// New returns a validator for cfg. It fetches nothing yet.
func New(cfg Config) (*Validator, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.PrincipalClaim == "" {
		cfg.PrincipalClaim = DefaultPrincipalClaim
	}
	if len(cfg.Audiences) == 0 {
		cfg.Audiences = []string{cfg.Resource}
	}
	if cfg.ClockSkew == 0 {
		cfg.ClockSkew = DefaultClockSkew
	}
	if cfg.KeysMaxAge <= 0 {
		cfg.KeysMaxAge = DefaultKeysMaxAge
	}
	if cfg.KeysMinInterval <= 0 {
		cfg.KeysMinInterval = DefaultKeysMinInterval
	}
	if cfg.IntrospectionCacheTTL <= 0 {
		cfg.IntrospectionCacheTTL = DefaultIntrospectionCacheTTL
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.RequiredScopes = normScopes(cfg.RequiredScopes)
	v := &Validator{
		cfg:          cfg,
		log:          cfg.Logger.With("component", "oauth"),
		http:         cfg.HTTPClient,
		keys:         map[string]*keySet{},
		meta:         map[string]*issuerMeta{},
		introCache:   map[[sha256.Size]byte]introEntry{},
		introRefused: map[[sha256.Size]byte]introEntry{},
		introCalls:   newCallBound(),
	}
	for _, iss := range cfg.Issuers {
		v.meta[iss] = &issuerMeta{v: v, issuer: iss}
		if cfg.JWKSURL == "" {
			v.keys[iss] = &keySet{v: v, issuer: iss}
		}
	}
	if cfg.JWKSURL != "" {
		v.keys[""] = &keySet{v: v, url: cfg.JWKSURL}
	}
	return v, nil
}

// check returns every problem of cfg, joined.
func (c Config) check() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &ConfigError{field, fmt.Sprintf(format, args...)})
	}
	absURL := func(field, s string) {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			bad(field, "%q is not an absolute http(s) URL", s)
		}
	}
	if len(c.Issuers) == 0 {
		bad("Issuers", "name at least one authorization server")
	}
	for _, iss := range c.Issuers {
		absURL("Issuers", iss)
		if u, err := url.Parse(iss); err == nil && (u.RawQuery != "" || u.Fragment != "") {
			bad("Issuers", "%q: an issuer has no query or fragment (RFC 8414)", iss)
		}
	}
	if c.Resource == "" {
		bad("Resource", "is empty; give the URL clients connect to, such as https://mcp.example.com/mcp")
	} else {
		absURL("Resource", c.Resource)
	}
	if c.JWKSURL != "" {
		absURL("JWKSURL", c.JWKSURL)
		// One key set for several issuers would let any of its keys sign
		// a token in any issuer's name, and so choose the namespace of
		// its principal.
		if len(c.Issuers) > 1 {
			bad("JWKSURL", "is the key set of one issuer, and %d are configured: remove it, so that each issuer's keys come from its own metadata (jwks_uri), or configure that one issuer alone", len(c.Issuers))
		}
	}
	if c.IntrospectionURL != "" {
		absURL("IntrospectionURL", c.IntrospectionURL)
		if c.ClientID == "" {
			bad("ClientID", "introspection needs the client credentials of this server")
		}
	}
	if c.ClockSkew < 0 {
		bad("ClockSkew", "must not be negative")
	}
	for iss := range c.PrincipalPrefixes {
		if !slices.Contains(c.Issuers, iss) {
			bad("PrincipalPrefixes", "%q is not one of the issuers", iss)
		}
	}
	for from, to := range c.Principals {
		if from == "" || strings.TrimSpace(to) == "" {
			bad("Principals", "%q = %q: map a principal to a non-empty one", from, to)
		}
	}
	return errors.Join(errs...)
}

// DefaultPrefix is the prefix of the principals of an issuer that
// Config.PrincipalPrefixes does not name: its URL and "#", which no
// issuer URL has (RFC 8414: no fragment).
func DefaultPrefix(issuer string) string { return issuer + "#" }

// PrincipalPrefix returns the prefix of the principals issuer's tokens
// name.
func (c Config) PrincipalPrefix(issuer string) string {
	if p, ok := c.PrincipalPrefixes[issuer]; ok {
		return p
	}
	return DefaultPrefix(issuer)
}

// Claims reports the issuer whose tokens may name principal, when its
// prefix is not empty: a static token of that name would share the
// principal with them. Principals mapped by Config.Principals are
// merges the configuration asked for and do not count.
func (c Config) Claims(principal string) (issuer string, ok bool) {
	for _, iss := range c.Issuers {
		if p := c.PrincipalPrefix(iss); p != "" && strings.HasPrefix(principal, p) {
			return iss, true
		}
	}
	return "", false
}

// Metadata is what the protected-resource metadata (RFC 9728) says of
// this server.
type Metadata struct {
	Resource             string
	AuthorizationServers []string
	ScopesSupported      []string
}

// Metadata returns what the protected-resource metadata document says.
func (v *Validator) Metadata() Metadata {
	return Metadata{
		Resource:             v.cfg.Resource,
		AuthorizationServers: slices.Clone(v.cfg.Issuers),
		ScopesSupported:      slices.Clone(v.cfg.RequiredScopes),
	}
}

// RequiredScopes returns the scopes every token must grant, sorted.
func (v *Validator) RequiredScopes() []string { return slices.Clone(v.cfg.RequiredScopes) }

// Validate returns who the access token authenticates. Errors are
// ErrInvalidToken, ErrUnavailable (both wrapped, with the reason) or a
// *ScopeError.
func (v *Validator) Validate(ctx context.Context, token string) (Identity, error) {
	if token == "" {
		return Identity{}, invalid("empty token")
	}
	var (
		id  Identity
		err error
	)
	if looksLikeJWT(token) {
		id, err = v.verifyJWT(ctx, token)
		if errors.Is(err, errNoKeys) && v.cfg.IntrospectionURL != "" {
			id, err = v.introspect(ctx, token)
		}
	} else if v.cfg.IntrospectionURL != "" {
		id, err = v.introspect(ctx, token)
	} else {
		err = invalid("not a JWT, and no introspection endpoint is configured")
	}
	if err != nil {
		return Identity{}, err
	}
	if missing := missingScopes(v.cfg.RequiredScopes, id.Scopes); len(missing) > 0 {
		return Identity{}, &ScopeError{Identity: id, Missing: missing}
	}
	return id, nil
}

// looksLikeJWT reports a JWS compact serialization: three base64url
// parts, the first a JSON header.
func looksLikeJWT(tok string) bool {
	if strings.Count(tok, ".") != 2 {
		return false
	}
	h, _, _ := strings.Cut(tok, ".")
	return strings.HasPrefix(h, "eyJ") // base64url of `{"`
}

// normScopes sorts scopes and drops empty and duplicate ones.
func normScopes(s []string) []string {
	out := slices.DeleteFunc(slices.Clone(s), func(x string) bool { return x == "" })
	slices.Sort(out)
	return slices.Compact(out)
}

// scopesOf reads a scope claim: a space-separated string ("scope", and
// "scp" at some providers) or an array of strings ("scp").
func scopesOf(raw ...json.RawMessage) ([]string, error) {
	var out []string
	for _, r := range raw {
		if len(r) == 0 || string(r) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(r, &s); err == nil {
			out = append(out, strings.Fields(s)...)
			continue
		}
		var list []string
		if err := json.Unmarshal(r, &list); err != nil {
			return nil, errors.New("scope claim is neither a string nor a list of strings")
		}
		for _, s := range list {
			out = append(out, strings.Fields(s)...)
		}
	}
	return normScopes(out), nil
}

func missingScopes(required, granted []string) []string {
	var missing []string
	for _, r := range required {
		if _, ok := slices.BinarySearch(granted, r); !ok {
			missing = append(missing, r)
		}
	}
	return missing
}

// principalOf reads the principal claim from claims.
// identity returns who a token of issuer with claims authenticates,
// with scopes and expiry.
func (v *Validator) identity(issuer string, claims map[string]json.RawMessage, scopes []string, expiry time.Time) (Identity, error) {
	raw, ok := claims[v.cfg.PrincipalClaim]
	if !ok {
		return Identity{}, invalid("no %q claim names the principal", v.cfg.PrincipalClaim)
	}
	var sub string
	if err := json.Unmarshal(raw, &sub); err != nil || strings.TrimSpace(sub) == "" {
		return Identity{}, invalid("the %q claim is not a non-empty string", v.cfg.PrincipalClaim)
	}
	p := v.cfg.PrincipalPrefix(issuer) + sub
	if to, ok := v.cfg.Principals[p]; ok {
		p = to
	}
	return Identity{Principal: p, Subject: sub, Scopes: scopes, Issuer: issuer, Expiry: expiry}, nil
}

// audienceOK reports whether aud names one of the accepted audiences.
func (v *Validator) audienceOK(aud []string) bool {
	for _, a := range aud {
		if slices.Contains(v.cfg.Audiences, a) {
			return true
		}
	}
	return false
}
