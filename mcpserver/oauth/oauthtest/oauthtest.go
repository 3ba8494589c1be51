// Package oauthtest is a small OAuth 2.1 authorization server for tests,
// as net/http/httptest is a web server for tests: it publishes RFC 8414
// (or OpenID Connect) metadata and a JWKS, signs RS256 and ES256 access
// tokens with keys that a test adds and retires (a key rotation), answers
// token introspection (RFC 7662), registers clients dynamically (RFC 7591)
// and issues tokens through the authorization code grant with PKCE
// (auto-approved: the redirect carries the code at once) and the client
// credentials grant, each token for the resource (RFC 8707) the client
// asked for.
//
// It is for tests only: it keeps everything in memory and checks no user.
package oauthtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Server is a running test authorization server.
type Server struct {
	// URL is the server's base URL, which is also its issuer.
	URL string

	srv  *httptest.Server
	oidc bool

	mu       sync.Mutex
	keys     []signingKey // the newest last; the published ones
	opaque   map[string]map[string]any
	clients  map[string]client
	codes    map[string]grant
	audience string

	jwksFetches   atomic.Int64
	introspection atomic.Int64
}

type signingKey struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv any
}

type client struct {
	secret       string
	redirectURIs []string
}

type grant struct {
	clientID, redirectURI, challenge, resource, scope string
}

// Option configures a Server.
type Option func(*Server)

// OIDC makes the server publish OpenID Connect discovery
// (/.well-known/openid-configuration) instead of RFC 8414 metadata.
func OIDC() Option { return func(s *Server) { s.oidc = true } }

// IntrospectionClientID and IntrospectionSecret are the credentials of
// the client registered at start for resource servers to introspect with.
const (
	IntrospectionClientID = "resource-server"
	IntrospectionSecret   = "resource-server-secret"
)

// New starts a server with one RS256 key; it is closed when the test ends.
func New(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s := &Server{
		opaque:  map[string]map[string]any{},
		clients: map[string]client{IntrospectionClientID: {secret: IntrospectionSecret}},
		codes:   map[string]grant{},
	}
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	if s.oidc {
		mux.HandleFunc("GET /.well-known/openid-configuration", s.metadata)
	} else {
		mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	}
	mux.HandleFunc("GET /jwks", s.jwks)
	mux.HandleFunc("POST /introspect", s.introspect)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	tb.Cleanup(s.srv.Close)
	s.AddKey(tb, jose.RS256)
	return s
}

// SetAudience sets the aud of tokens issued to clients that name no
// resource.
func (s *Server) SetAudience(aud string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.audience = aud
}

// AddKey makes a new key for alg (RS256 or ES256), publishes it and signs
// tokens with it from now on; it returns its kid.
func (s *Server) AddKey(tb testing.TB, alg jose.SignatureAlgorithm) string {
	tb.Helper()
	var priv any
	var err error
	switch alg {
	case jose.RS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		tb.Fatalf("oauthtest: no keys for %s", alg)
	}
	if err != nil {
		tb.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	kid := fmt.Sprintf("%s-%d", strings.ToLower(string(alg)), len(s.keys)+1)
	s.keys = append(s.keys, signingKey{kid: kid, alg: alg, priv: priv})
	return kid
}

// RetireKey stops publishing the key kid.
func (s *Server) RetireKey(kid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = slices.DeleteFunc(s.keys, func(k signingKey) bool { return k.kid == kid })
}

// PublicKey returns the public key of kid.
func (s *Server) PublicKey(kid string) any {
	k, ok := s.key(kid)
	if !ok {
		return nil
	}
	jwk := jose.JSONWebKey{Key: k.priv}
	return jwk.Public().Key
}

// PrivateKey returns the private key of kid, to sign what the server
// would not.
func (s *Server) PrivateKey(kid string) any {
	k, _ := s.key(kid)
	return k.priv
}

func (s *Server) key(kid string) (signingKey, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.keys {
		if k.kid == kid {
			return k, true
		}
	}
	return signingKey{}, false
}

// JWKSFetches counts the requests for the key set.
func (s *Server) JWKSFetches() int { return int(s.jwksFetches.Load()) }

// Introspections counts the introspection requests.
func (s *Server) Introspections() int { return int(s.introspection.Load()) }

// Claims returns the claims of a good access token for sub and aud that
// expires in an hour, granting scopes.
func (s *Server) Claims(sub, aud string, scopes ...string) map[string]any {
	now := time.Now()
	c := map[string]any{
		"iss": s.URL, "sub": sub, "aud": aud,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"jti": rand.Text(),
	}
	if len(scopes) > 0 {
		c["scope"] = strings.Join(scopes, " ")
	}
	return c
}

// Sign returns claims as a JWT signed with the newest key.
func (s *Server) Sign(tb testing.TB, claims map[string]any) string {
	tb.Helper()
	s.mu.Lock()
	k := s.keys[len(s.keys)-1]
	s.mu.Unlock()
	return s.SignWith(tb, k.kid, claims)
}

// SignWith returns claims as a JWT signed with the key kid, even a
// retired one.
func (s *Server) SignWith(tb testing.TB, kid string, claims map[string]any) string {
	tb.Helper()
	k, ok := s.key(kid)
	if !ok {
		tb.Fatalf("oauthtest: no key %q", kid)
	}
	return SignJWT(tb, k.alg, k.priv, kid, claims)
}

// SignJWT signs claims with any key, for tokens the server would not
// issue (a forged signature, an HMAC over a public key).
func SignJWT(tb testing.TB, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	tb.Helper()
	tok, err := signJWT(alg, key, kid, claims)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

func signJWT(alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) (string, error) {
	opts := (&jose.SignerOptions{}).WithType("at+jwt")
	if kid != "" {
		opts = opts.WithHeader(jose.HeaderKey("kid"), kid)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	sig, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return sig.CompactSerialize()
}

// Unsigned returns claims as a JWT with alg "none".
func Unsigned(tb testing.TB, claims map[string]any) string {
	tb.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		tb.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(payload) + "."
}

// Opaque returns an opaque access token that introspection describes with
// claims; Revoke makes it inactive.
func (s *Server) Opaque(claims map[string]any) string {
	tok := "opaque-" + rand.Text()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opaque[tok] = claims
	return tok
}

// Revoke makes an opaque token inactive.
func (s *Server) Revoke(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.opaque, tok)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, code int, kind, desc string) {
	writeJSON(w, code, map[string]string{"error": kind, "error_description": desc})
}

func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                s.URL,
		"authorization_endpoint":                s.URL + "/authorize",
		"token_endpoint":                        s.URL + "/token",
		"registration_endpoint":                 s.URL + "/register",
		"introspection_endpoint":                s.URL + "/introspect",
		"jwks_uri":                              s.URL + "/jwks",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "client_credentials"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post", "none"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256", "ES256"},
	})
}

func (s *Server) jwks(w http.ResponseWriter, _ *http.Request) {
	s.jwksFetches.Add(1)
	s.mu.Lock()
	set := jose.JSONWebKeySet{}
	for _, k := range s.keys {
		jwk := jose.JSONWebKey{Key: k.priv, KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"}
		set.Keys = append(set.Keys, jwk.Public())
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, set)
}

// clientAuth returns the client a token or introspection request
// authenticates (Basic or client_secret_post; none for public clients).
func (s *Server) clientAuth(r *http.Request) (string, bool) {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	c, ok := s.clients[id]
	s.mu.Unlock()
	return id, ok && c.secret == secret
}

func (s *Server) introspect(w http.ResponseWriter, r *http.Request) {
	s.introspection.Add(1)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	if id, ok := s.clientAuth(r); !ok || id != IntrospectionClientID {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "introspection needs the resource server's credentials")
		return
	}
	s.mu.Lock()
	claims, ok := s.opaque[r.PostForm.Get("token")]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusOK, map[string]any{"active": false})
		return
	}
	out := map[string]any{"active": true, "token_type": "Bearer"}
	for k, v := range claims {
		out[k] = v
	}
	writeJSON(w, http.StatusOK, out)
}

// register implements dynamic client registration (RFC 7591).
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", err.Error())
		return
	}
	id := "client-" + rand.Text()
	c := client{redirectURIs: req.RedirectURIs}
	if req.AuthMethod != "none" {
		c.secret = rand.Text()
	}
	s.mu.Lock()
	s.clients[id] = c
	s.mu.Unlock()
	out := map[string]any{
		"client_id":                  id,
		"client_id_issued_at":        time.Now().Unix(),
		"redirect_uris":              req.RedirectURIs,
		"grant_types":                []string{"authorization_code", "client_credentials"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "client_secret_basic",
	}
	if c.secret != "" {
		out["client_secret"] = c.secret
	} else {
		out["token_endpoint_auth_method"] = "none"
	}
	writeJSON(w, http.StatusCreated, out)
}

// authorize approves at once: it redirects to the client with a code.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	c, ok := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	redirect := q.Get("redirect_uri")
	switch {
	case !ok:
		oauthError(w, http.StatusBadRequest, "invalid_client", "unknown client")
		return
	case !slices.Contains(c.redirectURIs, redirect):
		oauthError(w, http.StatusBadRequest, "invalid_request", "redirect_uri is not registered")
		return
	case q.Get("response_type") != "code":
		oauthError(w, http.StatusBadRequest, "unsupported_response_type", "only code")
		return
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		oauthError(w, http.StatusBadRequest, "invalid_request", "PKCE with S256 is required")
		return
	}
	code := rand.Text()
	s.mu.Lock()
	s.codes[code] = grant{clientID: q.Get("client_id"), redirectURI: redirect, challenge: q.Get("code_challenge"), resource: q.Get("resource"), scope: q.Get("scope")}
	s.mu.Unlock()
	u, err := url.Parse(redirect)
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "bad redirect_uri")
		return
	}
	rq := u.Query()
	rq.Set("code", code)
	if st := q.Get("state"); st != "" {
		rq.Set("state", st)
	}
	rq.Set("iss", s.URL)
	u.RawQuery = rq.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	f := r.PostForm
	var sub, resource, scope string
	switch f.Get("grant_type") {
	case "authorization_code":
		s.mu.Lock()
		g, ok := s.codes[f.Get("code")]
		delete(s.codes, f.Get("code"))
		c := s.clients[g.clientID]
		s.mu.Unlock()
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case !ok:
			oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown or used code")
			return
		case f.Get("redirect_uri") != g.redirectURI:
			oauthError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
			oauthError(w, http.StatusBadRequest, "invalid_grant", "PKCE verifier does not match")
			return
		}
		if c.secret != "" {
			if id, ok := s.clientAuth(r); !ok || id != g.clientID {
				oauthError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
				return
			}
		} else if f.Get("client_id") != g.clientID {
			oauthError(w, http.StatusUnauthorized, "invalid_client", "client_id differs")
			return
		}
		sub, resource, scope = "user-of-"+g.clientID, g.resource, g.scope
		if r := f.Get("resource"); r != "" {
			resource = r
		}
	case "client_credentials":
		id, ok := s.clientAuth(r)
		if !ok {
			oauthError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
			return
		}
		sub, resource, scope = id, f.Get("resource"), f.Get("scope")
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", f.Get("grant_type"))
		return
	}
	if resource == "" {
		s.mu.Lock()
		resource = s.audience
		s.mu.Unlock()
	}
	claims := s.Claims(sub, resource)
	if scope != "" {
		claims["scope"] = scope
	}
	s.mu.Lock()
	k := s.keys[len(s.keys)-1]
	s.mu.Unlock()
	tok, err := signJWT(k.alg, k.priv, k.kid, claims)
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	out := map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600}
	if scope != "" {
		out["scope"] = scope
	}
	writeJSON(w, http.StatusOK, out)
}
