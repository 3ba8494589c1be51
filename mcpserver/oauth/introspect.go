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
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/time/rate"
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

// Introspection calls are made for anyone who can reach the port: a
// request with a token not seen before is one call to the authorization
// server, with this server's client credentials. So calls for tokens
// that are not cached are bounded: at most introspectionConcurrent at
// once, introspectionPerSecond a second (introspectionBurst at once after
// a quiet time) in all and introspectionPerClient (introspectionBurstPerClient)
// from one client address. Past a bound, the token is not checked and the
// request fails with ErrTooMany.
const (
	introspectionConcurrent     = 8
	introspectionPerSecond      = 20
	introspectionBurst          = 40
	introspectionPerClient      = 2
	introspectionBurstPerClient = 10
	// introspectionClients bounds the client addresses remembered.
	introspectionClients = 4096
)

type clientKey struct{}

// WithClient returns ctx naming the address of the client that presents
// a token, whose introspection calls are bounded together. Without one,
// only the bounds of all calls apply.
func WithClient(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientKey{}, addr)
}

// callBound bounds introspection calls in number and rate.
type callBound struct {
	slots chan struct{}
	all   *rate.Limiter

	mu       sync.Mutex
	byClient map[string]*rate.Limiter
}

func newCallBound() *callBound {
	return &callBound{
		slots:    make(chan struct{}, introspectionConcurrent),
		all:      rate.NewLimiter(introspectionPerSecond, introspectionBurst),
		byClient: map[string]*rate.Limiter{},
	}
}

// take reserves a call for client, or says which bound refused it; the
// caller calls the returned release once the call is answered.
func (c *callBound) take(client string) (release func(), err error) {
	now := time.Now() // the authorization server's load is in real time
	if client != "" {
		if err := c.takeClient(client, now); err != nil {
			return nil, err
		}
	}
	if !c.all.AllowN(now, 1) {
		return nil, fmt.Errorf("%w: more than %d new tokens a second; retry shortly", ErrTooMany, introspectionPerSecond)
	}
	select {
	case c.slots <- struct{}{}:
		return func() { <-c.slots }, nil
	default:
		return nil, fmt.Errorf("%w: %d are being checked with the authorization server; retry shortly", ErrTooMany, introspectionConcurrent)
	}
}

// takeClient takes one of client's calls.
func (c *callBound) takeClient(client string, now time.Time) error {
	c.mu.Lock()
	l, ok := c.byClient[client]
	if !ok {
		if len(c.byClient) >= introspectionClients {
			for k, old := range c.byClient { // a full bucket is as a new one
				if old.TokensAt(now) >= introspectionBurstPerClient {
					delete(c.byClient, k)
				}
			}
			for k := range c.byClient { // still full: drop any
				if len(c.byClient) < introspectionClients {
					break
				}
				delete(c.byClient, k)
			}
		}
		l = rate.NewLimiter(introspectionPerClient, introspectionBurstPerClient)
		c.byClient[client] = l
	}
	c.mu.Unlock()
	if !l.AllowN(now, 1) {
		return fmt.Errorf("%w: more than %d new tokens a second from this client; retry shortly", ErrTooMany, introspectionPerClient)
	}
	return nil
}

// introspect asks the authorization server about the token, reusing an
// earlier answer while it is fresh. The cache is keyed by the token's
// SHA-256, never the token. Identities and refusals are cached apart, so
// that a flood of unknown tokens never evicts a valid one's identity.
func (v *Validator) introspect(ctx context.Context, token string) (Identity, error) {
	h := sha256.Sum256([]byte(token))
	now := v.cfg.Now()
	v.introMu.Lock()
	e, ok := v.introCache[h]
	if !ok {
		e, ok = v.introRefused[h]
	}
	v.introMu.Unlock()
	if ok && now.Before(e.until) {
		return e.id, e.err
	}
	client, _ := ctx.Value(clientKey{}).(string)
	release, err := v.introCalls.take(client)
	if err != nil {
		return Identity{}, err
	}
	id, err := v.askIntrospection(ctx, token)
	release()
	if err != nil && !errors.Is(err, ErrInvalidToken) {
		return Identity{}, err // not cached: the server may answer next time
	}
	until := now.Add(v.cfg.IntrospectionCacheTTL)
	if err == nil && !id.Expiry.IsZero() && id.Expiry.Before(until) {
		until = id.Expiry
	}
	v.remember(h, introEntry{id: id, err: err, until: until}, now)
	return id, err
}

// remember caches an introspection answer: an identity among the
// identities, a refusal among the refusals. A full cache drops its
// expired answers, then any of its own.
func (v *Validator) remember(h [sha256.Size]byte, e introEntry, now time.Time) {
	cache := v.introCache
	if e.err != nil {
		cache = v.introRefused
	}
	v.introMu.Lock()
	defer v.introMu.Unlock()
	if len(cache) >= introspectionCacheSize {
		for k, old := range cache {
			if !now.Before(old.until) {
				delete(cache, k)
			}
		}
		for k := range cache { // still full: drop any
			if len(cache) < introspectionCacheSize {
				break
			}
			delete(cache, k)
		}
	}
	cache[h] = e
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
