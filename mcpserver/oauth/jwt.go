package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// algorithms are the signature algorithms a token may use: asymmetric
// ones only. "none" and the HMAC family are refused before any key is
// looked at, so a public key can never serve as an HMAC secret.
var algorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512,
	jose.EdDSA,
}

// errNoKeys means no key set exists for the issuer: its metadata names
// no jwks_uri and none is configured.
var errNoKeys = errors.New("the authorization server publishes no signing keys")

// maxDocument bounds a metadata or key-set document.
const maxDocument = 1 << 20

// accessClaims are the claims of an access token that validation reads.
type accessClaims struct {
	jwt.Claims
	Scope json.RawMessage `json:"scope"`
	Scp   json.RawMessage `json:"scp"`
}

// verifyJWT checks the token's signature against its issuer's keys, then
// its claims.
func (v *Validator) verifyJWT(ctx context.Context, token string) (Identity, error) {
	tok, err := jwt.ParseSigned(token, algorithms)
	if err != nil {
		if strings.Contains(err.Error(), "unexpected signature algorithm") {
			return Identity{}, invalid("signature algorithm not accepted (want an asymmetric one such as RS256 or ES256)")
		}
		return Identity{}, invalid("malformed JWT")
	}
	if len(tok.Headers) != 1 {
		return Identity{}, invalid("want exactly one signature")
	}
	hdr := tok.Headers[0]
	// The issuer picks the key set; it is checked again once verified.
	// A token never makes the validator fetch from a URL it names.
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return Identity{}, invalid("malformed claims")
	}
	if !slices.Contains(v.cfg.Issuers, unverified.Issuer) {
		return Identity{}, invalid("issuer is not accepted (the token names one that is not configured)")
	}
	ks := v.keys[""]
	if ks == nil {
		ks = v.keys[unverified.Issuer]
	}
	key, err := ks.key(ctx, hdr.KeyID, hdr.Algorithm)
	if err != nil {
		return Identity{}, err
	}
	var (
		claims accessClaims
		all    map[string]json.RawMessage
	)
	if err := tok.Claims(key.Key, &claims, &all); err != nil {
		return Identity{}, invalid("signature does not verify")
	}
	if claims.Expiry == nil {
		return Identity{}, invalid("no exp claim")
	}
	err = claims.ValidateWithLeeway(jwt.Expected{Issuer: unverified.Issuer, Time: v.cfg.Now()}, v.cfg.ClockSkew)
	switch {
	case errors.Is(err, jwt.ErrExpired):
		return Identity{}, invalid("token expired")
	case errors.Is(err, jwt.ErrNotValidYet):
		return Identity{}, invalid("token not valid yet (nbf)")
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return Identity{}, invalid("token issued in the future (iat)")
	case err != nil:
		return Identity{}, invalid("claims: %v", err)
	}
	if !v.audienceOK(claims.Audience) {
		return Identity{}, invalid("token is for another audience (want %s)", strings.Join(v.cfg.Audiences, " or "))
	}
	scopes, err := scopesOf(claims.Scope, claims.Scp)
	if err != nil {
		return Identity{}, invalid("%v", err)
	}
	return v.identity(claims.Issuer, all, scopes, claims.Expiry.Time())
}

// keySet is the signing keys of one issuer (or the configured JWKS URL),
// fetched when needed: at first use, when older than KeysMaxAge, and for
// an unknown kid at most once per KeysMinInterval.
type keySet struct {
	v      *Validator
	issuer string // whose metadata names the URL, when url is ""
	url    string

	fetchMu sync.Mutex // held by the one fetch in progress

	mu      sync.Mutex
	keys    []jose.JSONWebKey
	fetched time.Time // last successful fetch
	tried   time.Time // last attempt
	noKeys  bool      // the issuer's metadata names no jwks_uri
}

// key returns the key that verifies a token with the given kid and alg.
func (k *keySet) key(ctx context.Context, kid, alg string) (*jose.JSONWebKey, error) {
	k.mu.Lock()
	noKeys := k.noKeys
	k.mu.Unlock()
	if noKeys {
		return nil, errNoKeys
	}
	_, fetched, tried := k.snapshot()
	now := k.v.cfg.Now()
	switch {
	case fetched.IsZero():
		// Nothing yet: fetch, unless an attempt just failed.
		if err := k.refresh(ctx, tried); err != nil {
			return nil, err
		}
	case now.Sub(fetched) > k.v.cfg.KeysMaxAge:
		// Stale: one request refreshes, the others use what is there.
		if k.fetchMu.TryLock() {
			err := k.refreshLocked(ctx)
			k.fetchMu.Unlock()
			if err != nil {
				k.v.log.Warn("refresh signing keys; using the previous ones", "issuer", k.issuer, "err", err)
			}
		}
	}
	keys, _, tried := k.snapshot()
	if key, err := pick(keys, kid, alg); err == nil || !errors.Is(err, errUnknownKid) {
		return key, err
	}
	// An unknown kid: the issuer may have rotated its keys.
	if err := k.refresh(ctx, tried); err != nil && !errors.Is(err, errRateLimited) {
		return nil, err
	}
	keys, _, _ = k.snapshot()
	return pick(keys, kid, alg)
}

var (
	errUnknownKid  = invalid("no signing key has the token's kid")
	errRateLimited = errors.New("key set fetched too recently")
)

func (k *keySet) snapshot() ([]jose.JSONWebKey, time.Time, time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys, k.fetched, k.tried
}

// refresh fetches the key set unless an attempt was made after seen (by
// another request, while this one waited) or less than KeysMinInterval
// ago.
func (k *keySet) refresh(ctx context.Context, seen time.Time) error {
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	k.mu.Lock()
	tried, fetched := k.tried, k.fetched
	k.mu.Unlock()
	if tried.After(seen) {
		if fetched.IsZero() {
			return fmt.Errorf("%w: signing keys could not be fetched", ErrUnavailable)
		}
		return nil // someone else just fetched
	}
	if !tried.IsZero() && k.v.cfg.Now().Sub(tried) < k.v.cfg.KeysMinInterval {
		if fetched.IsZero() {
			return fmt.Errorf("%w: signing keys could not be fetched; retrying in %s", ErrUnavailable, k.v.cfg.KeysMinInterval)
		}
		return errRateLimited
	}
	return k.refreshLocked(ctx)
}

// refreshLocked fetches the key set; fetchMu is held.
func (k *keySet) refreshLocked(ctx context.Context) error {
	k.mu.Lock()
	k.tried = k.v.cfg.Now()
	k.mu.Unlock()
	u := k.url
	if u == "" {
		m, err := k.v.meta[k.issuer].get(ctx)
		if err != nil {
			return err
		}
		if m.JWKSURI == "" {
			k.mu.Lock()
			k.noKeys = true
			k.mu.Unlock()
			return errNoKeys
		}
		u = m.JWKSURI
	}
	keys, err := k.v.fetchKeys(ctx, u)
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.keys, k.fetched = keys, k.v.cfg.Now()
	k.mu.Unlock()
	k.v.log.Info("fetched signing keys", "issuer", k.issuer, "url", u, "keys", len(keys))
	return nil
}

// pick returns the key for kid (the only signing key when the token has
// no kid) that fits alg.
func pick(keys []jose.JSONWebKey, kid, alg string) (*jose.JSONWebKey, error) {
	var found *jose.JSONWebKey
	if kid == "" {
		if len(keys) != 1 {
			return nil, invalid("token has no kid and the issuer has %d signing keys", len(keys))
		}
		found = &keys[0]
	} else {
		for i := range keys {
			if keys[i].KeyID == kid {
				found = &keys[i]
				break
			}
		}
	}
	if found == nil {
		return nil, errUnknownKid
	}
	if found.Algorithm != "" && found.Algorithm != alg {
		return nil, invalid("the key %q is for %s, the token says %s", found.KeyID, found.Algorithm, alg)
	}
	return found, nil
}

// fetchKeys reads a JWK Set, keeping the public signing keys it can use
// and skipping the others (another kty, an encryption key).
func (v *Validator) fetchKeys(ctx context.Context, u string) ([]jose.JSONWebKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := v.getJSON(ctx, u, &set); err != nil {
		return nil, fmt.Errorf("%w: fetch signing keys: %w", ErrUnavailable, err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			v.log.Debug("skip a key of the key set", "url", u, "err", err)
			continue
		}
		if _, sym := k.Key.([]byte); sym || !k.IsPublic() || !k.Valid() || (k.Use != "" && k.Use != "sig") {
			v.log.Debug("skip a key of the key set: not a public signing key", "url", u, "kid", k.KeyID)
			continue
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// issuerMeta is an issuer's authorization server metadata, discovered at
// first need.
type issuerMeta struct {
	v      *Validator
	issuer string

	mu    sync.Mutex
	doc   *asMetadata
	tried time.Time
}

// asMetadata is what codecell reads of RFC 8414 / OpenID Connect
// discovery metadata.
type asMetadata struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
}

// get returns the metadata, discovering it at the first call and, after
// a failure, at most once per KeysMinInterval.
func (m *issuerMeta) get(ctx context.Context) (*asMetadata, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.doc != nil {
		return m.doc, nil
	}
	if !m.tried.IsZero() && m.v.cfg.Now().Sub(m.tried) < m.v.cfg.KeysMinInterval {
		return nil, fmt.Errorf("%w: metadata of %s could not be fetched; retrying in %s", ErrUnavailable, m.issuer, m.v.cfg.KeysMinInterval)
	}
	m.tried = m.v.cfg.Now()
	var errs []error
	for _, u := range DiscoveryURLs(m.issuer) {
		var doc asMetadata
		if err := m.v.getJSON(ctx, u, &doc); err != nil {
			errs = append(errs, err)
			continue
		}
		if doc.Issuer != m.issuer {
			// RFC 8414 §3.3: a document for another issuer is not this one's.
			errs = append(errs, fmt.Errorf("%s names issuer %q, not %q", u, doc.Issuer, m.issuer))
			continue
		}
		m.doc = &doc
		m.v.log.Info("discovered authorization server", "issuer", m.issuer, "metadata", u, "jwks_uri", doc.JWKSURI)
		return m.doc, nil
	}
	return nil, fmt.Errorf("%w: discover %s: %w", ErrUnavailable, m.issuer, errors.Join(errs...))
}

// DiscoveryURLs are where an issuer's metadata is looked for, in order:
// RFC 8414 (the well-known segment inserted before the issuer's path),
// then OpenID Connect Discovery (appended to it).
func DiscoveryURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	p := strings.TrimSuffix(u.Path, "/")
	rfc := *u
	rfc.Path = "/.well-known/oauth-authorization-server" + p
	oidc := *u
	oidc.Path = p + "/.well-known/openid-configuration"
	return []string{rfc.String(), oidc.String()}
}

// getJSON fetches u and decodes its JSON body into dst.
func (v *Validator) getJSON(ctx context.Context, u string, dst any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocument))
		return fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDocument)).Decode(dst); err != nil {
		return fmt.Errorf("GET %s: decode: %w", u, err)
	}
	return nil
}
