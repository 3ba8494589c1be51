package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
)

// introEntry is a cached introspection answer: an identity or the
// refusal, until a time no later than the token's expiry.
type introEntry struct {
	id    Identity
	err   error
	until time.Time
}

// introspection is what codecell reads of an RFC 7662 answer.
type introspection struct {
	Active bool            `json:"active"`
	Scope  json.RawMessage `json:"scope"`
	Scp    json.RawMessage `json:"scp"`
	Iss    string          `json:"iss"`
	Aud    jwt.Audience    `json:"aud"`
	Exp    *int64          `json:"exp"`
	Nbf    *int64          `json:"nbf"`
}

// introspect asks the authorization server about the token, reusing an
// earlier answer while it is fresh. The cache is keyed by the token's
// SHA-256, never the token.
func (v *Validator) introspect(ctx context.Context, token string) (Identity, error) {
	h := sha256.Sum256([]byte(token))
	now := v.cfg.Now()
	v.introMu.Lock()
	e, ok := v.introCache[h]
	v.introMu.Unlock()
	if ok && now.Before(e.until) {
		return e.id, e.err
	}
	id, err := v.askIntrospection(ctx, token)
	if err != nil && !errors.Is(err, ErrInvalidToken) {
		return Identity{}, err // not cached: the server may answer next time
	}
	until := now.Add(v.cfg.IntrospectionCacheTTL)
	if err == nil && !id.Expiry.IsZero() && id.Expiry.Before(until) {
		until = id.Expiry
	}
	v.introMu.Lock()
	if len(v.introCache) >= introspectionCacheSize {
		for k, old := range v.introCache {
			if !now.Before(old.until) {
				delete(v.introCache, k)
			}
		}
		for k := range v.introCache { // still full: drop any
			if len(v.introCache) < introspectionCacheSize {
				break
			}
			delete(v.introCache, k)
		}
	}
	v.introCache[h] = introEntry{id: id, err: err, until: until}
	v.introMu.Unlock()
	return id, err
}

// askIntrospection posts the token to the introspection endpoint and
// checks the answer as it would a JWT's claims.
func (v *Validator) askIntrospection(ctx context.Context, token string) (Identity, error) {
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.cfg.IntrospectionURL, strings.NewReader(form.Encode()))
	if err != nil {
		return Identity{}, fmt.Errorf("%w: introspection: %w", ErrUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749 §2.3.1: the credentials are form-encoded before Basic.
	req.SetBasicAuth(url.QueryEscape(v.cfg.ClientID), url.QueryEscape(v.cfg.ClientSecret))
	resp, err := v.http.Do(req)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: introspection: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocument))
		return Identity{}, fmt.Errorf("%w: introspection: status %d", ErrUnavailable, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument))
	if err != nil {
		return Identity{}, fmt.Errorf("%w: introspection: %w", ErrUnavailable, err)
	}
	var ans introspection
	var all map[string]json.RawMessage
	if err := json.Unmarshal(body, &ans); err != nil {
		return Identity{}, fmt.Errorf("%w: introspection: decode: %w", ErrUnavailable, err)
	}
	if err := json.Unmarshal(body, &all); err != nil {
		return Identity{}, fmt.Errorf("%w: introspection: decode: %w", ErrUnavailable, err)
	}
	if !ans.Active {
		return Identity{}, invalid("token is not active (introspection)")
	}
	now, skew := v.cfg.Now(), v.cfg.ClockSkew
	var expiry time.Time
	if ans.Exp != nil {
		expiry = time.Unix(*ans.Exp, 0)
		if now.Add(-skew).After(expiry) {
			return Identity{}, invalid("token expired")
		}
	}
	if ans.Nbf != nil && now.Add(skew).Before(time.Unix(*ans.Nbf, 0)) {
		return Identity{}, invalid("token not valid yet (nbf)")
	}
	if ans.Iss != "" && !slices.Contains(v.cfg.Issuers, ans.Iss) {
		return Identity{}, invalid("issuer is not accepted (introspection names one that is not configured)")
	}
	// An answer without aud is the authorization server's word that the
	// token is good for this client; one with aud must name this server.
	if len(ans.Aud) > 0 && !v.audienceOK(ans.Aud) {
		return Identity{}, invalid("token is for another audience (want %s)", strings.Join(v.cfg.Audiences, " or "))
	}
	scopes, err := scopesOf(ans.Scope, ans.Scp)
	if err != nil {
		return Identity{}, invalid("%v", err)
	}
	// Principals are namespaced by issuer: an answer that names none is
	// the only issuer's, and cannot be told apart among several.
	iss := ans.Iss
	if iss == "" {
		if len(v.cfg.Issuers) > 1 {
			return Identity{}, invalid("the introspection answer names no issuer (iss), and %d are configured: whose principal it is cannot be told", len(v.cfg.Issuers))
		}
		iss = v.cfg.Issuers[0]
	}
	return v.identity(iss, all, scopes, expiry)
}
