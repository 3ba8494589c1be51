package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/mcpserver/oauth"
)

// Token authenticates an HTTP client as a principal.
type Token struct {
	Principal string
	Token     string
}

// identity is who authenticated a request: the principal and, for an
// OAuth access token, the scopes it grants (sorted, space-separated).
type identity struct {
	principal string
	scopes    string
}

type identityKey struct{}

// withIdentity returns ctx carrying the authenticated identity.
func withIdentity(ctx context.Context, id identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// identityFrom returns the identity withIdentity stored.
func identityFrom(ctx context.Context) (identity, bool) {
	id, ok := ctx.Value(identityKey{}).(identity)
	return id, ok
}

// principalFrom returns the authenticated principal.
func principalFrom(ctx context.Context) (string, bool) {
	id, ok := identityFrom(ctx)
	return id.principal, ok
}

// copyPrincipal carries the identity from the HTTP request into the
// context mcp-go hands to handlers.
func copyPrincipal(ctx context.Context, r *http.Request) context.Context {
	if id, ok := identityFrom(r.Context()); ok {
		return withIdentity(ctx, id)
	}
	return ctx
}

// authenticator checks bearer tokens in constant time: it compares the
// SHA-256 of the presented token with that of every configured token, so
// neither the match nor its position shows in the timing.
type authenticator struct {
	hashes     [][sha256.Size]byte
	principals []string
}

func newAuthenticator(tokens []Token) *authenticator {
	a := &authenticator{}
	for _, t := range tokens {
		a.hashes = append(a.hashes, sha256.Sum256([]byte(t.Token)))
		a.principals = append(a.principals, t.Principal)
	}
	return a
}

func (a *authenticator) enabled() bool { return len(a.hashes) > 0 }

// principal returns who a static bearer token authenticates.
func (a *authenticator) principal(tok string) (string, bool) {
	h := sha256.Sum256([]byte(tok))
	found := -1
	for i := range a.hashes {
		if subtle.ConstantTimeCompare(h[:], a.hashes[i][:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return a.principals[found], true
}

// bearer returns the token of an Authorization: Bearer header.
func bearer(header string) (string, bool) {
	scheme, tok, ok := strings.Cut(header, " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", false
	}
	return tok, true
}

// errNoToken is a request without a bearer token.
var errNoToken = errors.New("missing bearer token: send Authorization: Bearer <token>")

// errBadStatic is a bearer token that is neither a static token nor, with
// OAuth off, anything else.
var errBadStatic = errors.New("invalid bearer token")

// authRequired reports whether HTTP requests must authenticate.
func (s *Server) authRequired() bool { return s.auth.enabled() || s.oauth != nil }

// authenticate returns who the request's bearer token authenticates: a
// static token's principal, or an OAuth access token's principal and
// scopes.
func (s *Server) authenticate(r *http.Request) (identity, error) {
	tok, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		return identity{}, errNoToken
	}
	if p, ok := s.auth.principal(tok); ok {
		return identity{principal: p}, nil
	}
	if s.oauth == nil {
		return identity{}, errBadStatic
	}
	ctx := r.Context()
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		ctx = oauth.WithClient(ctx, host)
	}
	id, err := s.oauth.Validate(ctx, tok)
	if err != nil {
		return identity{}, err
	}
	return identity{principal: id.Principal, scopes: strings.Join(id.Scopes, " ")}, nil
}

// refuseAuth answers a request that did not authenticate: 401 with a
// Bearer challenge (RFC 6750) that, with OAuth on, names the
// protected-resource metadata (RFC 9728) where a client learns which
// authorization server to ask; 403 for a token without the required
// scopes; 429 when too many tokens are being checked, 503 when the
// authorization server could not be asked.
func (s *Server) refuseAuth(w http.ResponseWriter, err error) {
	s.eng.Metrics().Refused("auth")
	params := []string{`realm="codecell"`}
	if s.oauth != nil {
		params = append(params, `resource_metadata="`+s.resourceMetadata+`"`)
	}
	code, msg := http.StatusUnauthorized, err.Error()
	var se *oauth.ScopeError
	switch {
	case errors.Is(err, errNoToken):
		if s.oauth != nil {
			msg += ", or get an access token from the authorization server named at " + s.resourceMetadata
		}
	case errors.As(err, &se):
		code = http.StatusForbidden
		params = append(params, `error="insufficient_scope"`, `scope="`+strings.Join(s.oauth.RequiredScopes(), " ")+`"`)
		s.log.Info("refused an access token", "principal", se.Identity.Principal, "missing_scopes", strings.Join(se.Missing, " "))
	case errors.Is(err, oauth.ErrTooMany):
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusTooManyRequests, "cannot check the access token now: "+err.Error())
		return
	case errors.Is(err, oauth.ErrUnavailable):
		s.log.Warn("cannot check an access token", "err", err)
		httpError(w, http.StatusServiceUnavailable, "cannot check the access token now: "+err.Error())
		return
	default:
		params = append(params, `error="invalid_token"`)
		if errors.Is(err, oauth.ErrInvalidToken) {
			params = append(params, `error_description="`+headerSafe(err.Error())+`"`)
			s.log.Debug("refused an access token", "reason", err)
		}
	}
	if scopes := s.requiredScopes(); scopes != "" && code == http.StatusUnauthorized {
		params = append(params, `scope="`+scopes+`"`)
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	httpError(w, code, msg)
}

func (s *Server) requiredScopes() string {
	if s.oauth == nil {
		return ""
	}
	return strings.Join(s.oauth.RequiredScopes(), " ")
}

// headerSafe makes s fit a quoted-string of a header: printable ASCII
// without quotes or backslashes, at most 200 bytes.
func headerSafe(s string) string {
	b := make([]byte, 0, min(len(s), 200))
	for i := 0; i < len(s) && len(b) < 200; i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\'')
		case c >= 0x20 && c < 0x7f:
			b = append(b, c)
		}
	}
	return string(b)
}

// initOAuth makes the validator of OAuth access tokens, when configured,
// and the address of the protected-resource metadata.
func (s *Server) initOAuth() error {
	if s.cfg.OAuth == nil {
		return nil
	}
	cfg := *s.cfg.OAuth
	if cfg.Logger == nil {
		cfg.Logger = s.log
	}
	v, err := oauth.New(cfg)
	if err != nil {
		return err
	}
	// Static principals stay apart from OAuth ones: a static token may
	// not be named like the principals an issuer's tokens name.
	for _, t := range s.cfg.Auth {
		if iss, ok := cfg.Claims(t.Principal); ok {
			return fmt.Errorf("oauth: the static token of %q is named like the principals of issuer %s (%q…); rename it, or give the issuer another principal prefix", t.Principal, iss, cfg.PrincipalPrefix(iss))
		}
	}
	for _, iss := range cfg.Issuers {
		s.log.Info("oauth principals", "issuer", iss, "prefix", cfg.PrincipalPrefix(iss))
	}
	u, err := url.Parse(cfg.Resource)
	if err != nil {
		return fmt.Errorf("oauth resource: %w", err)
	}
	s.oauth = v
	s.resourceMetadata = u.Scheme + "://" + u.Host + server.ProtectedResourceMetadataPath(cfg.Resource)
	return nil
}

// addOAuthRoutes serves the protected-resource metadata (RFC 9728) at
// the well-known path, at its variant suffixed with the resource's path
// (RFC 9728 §3.1) and with /mcp, where MCP clients look for it.
func (s *Server) addOAuthRoutes(mux *http.ServeMux) {
	if s.oauth == nil {
		return
	}
	md := s.oauth.Metadata()
	h := s.hostOnly(server.NewProtectedResourceMetadataHandler(server.ProtectedResourceMetadataConfig{
		Resource:               md.Resource,
		AuthorizationServers:   md.AuthorizationServers,
		ScopesSupported:        md.ScopesSupported,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           Name,
	}))
	paths := []string{
		server.WellKnownProtectedResourcePath,
		server.WellKnownProtectedResourcePath + PathStreamable,
		server.ProtectedResourceMetadataPath(md.Resource),
	}
	slices.Sort(paths)
	for _, p := range slices.Compact(paths) {
		mux.Handle(p, h)
	}
}

// guard wraps the MCP endpoints: it refuses foreign Host headers on a
// loopback listener (403, DNS rebinding), foreign origins (403), bodies
// over the limit (413), requests past the open requests' bounds (429),
// requests without a valid token (401) and session
// IDs that are unknown, ended or another principal's (404), and puts the
// authenticated principal into the request's context.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rebinding(r) {
			s.eng.Metrics().Refused("host")
			httpError(w, http.StatusForbidden, fmt.Sprintf("host %q is not allowed on a loopback server", r.Host))
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !s.allowedOrigin(origin, r.Host) {
			s.eng.Metrics().Refused("origin")
			httpError(w, http.StatusForbidden, fmt.Sprintf("origin %q is not allowed; add it to server.allowed_origins", origin))
			return
		}
		if s.authRequired() {
			id, err := s.authenticate(r)
			if err != nil {
				s.refuseAuth(w, err)
				return
			}
			r = r.WithContext(withIdentity(r.Context(), id))
		}
		if code, msg := s.checkSession(r); code != 0 {
			s.eng.Metrics().Refused("session")
			httpError(w, code, msg)
			return
		}
		principal := s.owners.principalOf(r)
		serve := next
		if s.sessionless.applies(r) {
			serve = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var body []byte
				if hb, ok := r.Body.(*heldBody); ok {
					body = hb.data
				}
				s.sessionless.serve(w, r, principal, body, next)
			})
		}
		// Past the token and the body: a client the server knows, whose
		// connection does not give way to a new one at the bound.
		admitted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			serving(r.Context())
			serve.ServeHTTP(w, r)
		})
		s.open.bounded(w, r, principal, s.authRequired(), s.eng.Limits().MaxBodyBytes(), func(reason string) { s.eng.Metrics().Refused(reason) }, admitted)
	})
}

// presizeMax is the most readAll allocates before the bytes arrive:
// nearly every request body is smaller.
const presizeMax = 64 << 10

// readAll reads r to its end into a buffer of size bytes, the request's
// Content-Length when it has one (up to presizeMax), grown if more come.
func readAll(r io.Reader, size int64) ([]byte, error) {
	if size <= 0 {
		return io.ReadAll(r)
	}
	// A declared length buys at most presizeMax up front: past it the
	// buffer grows as bytes arrive, so that headers alone cannot make the
	// server hold memory (attack6 A1).
	size = min(size, presizeMax)
	var b bytes.Buffer
	b.Grow(int(size) + bytes.MinRead) // room for ReadFrom to see the end without growing
	_, err := b.ReadFrom(r)
	return b.Bytes(), err
}

// hostOnly refuses DNS-rebinding requests to endpoints that need no
// other check.
func (s *Server) hostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rebinding(r) {
			s.eng.Metrics().Refused("host")
			httpError(w, http.StatusForbidden, fmt.Sprintf("host %q is not allowed on a loopback server", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// home answers GET / with how to connect, for whoever opens the server's
// address in a browser or with curl.
func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	base := "http://" + r.Host
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, `codecell %s — an MCP server: code execution with progressive tool disclosure.

Connect an MCP client to:
  Streamable HTTP  %s%s
  SSE              %s%s
Try it with the MCP Inspector:
  npx @modelcontextprotocol/inspector   (transport "Streamable HTTP", URL %s%s)
Health: %s%s   Metrics (Prometheus): %s%s
`, s.cfg.Version, base, PathStreamable, base, PathSSE, base, PathStreamable, base, PathHealth, base, PathMetrics)
	if s.authRequired() {
		fmt.Fprintln(w, "Every MCP request needs Authorization: Bearer <token>.")
	}
	if s.oauth != nil {
		fmt.Fprintf(w, "OAuth: access tokens from the authorization server named at %s\n", s.resourceMetadata)
	}
}

// checkSession refuses a request whose MCP session is not the caller's
// own live one, and a Streamable HTTP GET stream opened without a session.
func (s *Server) checkSession(r *http.Request) (int, string) {
	const unknown = "unknown or ended session; initialize a new one"
	principal := s.owners.principalOf(r)
	switch r.URL.Path {
	case PathStreamable:
		if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
			return 0, "" // the stateless protocol has no sessions
		}
		id := r.Header.Get(server.HeaderKeySessionID)
		if id == "" {
			if r.Method == http.MethodGet {
				return http.StatusBadRequest, "GET " + PathStreamable + " opens the stream of an existing session: send the Mcp-Session-Id header that initialize returned"
			}
			return 0, ""
		}
		if ok, _ := s.owners.check(id, principal); !ok {
			return http.StatusNotFound, unknown
		}
	case PathMessage:
		if id := r.URL.Query().Get("sessionId"); id != "" {
			if ok, _ := s.owners.check(id, principal); !ok {
				return http.StatusNotFound, unknown
			}
		}
	}
	return 0, ""
}

// rebinding reports a request that reached a loopback listener with a
// Host header that is not a loopback name: a web page's DNS-rebinding
// attack on a local server.
func rebinding(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && loopbackHost(local.String()) && !loopbackHost(r.Host)
}

func loopbackHost(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// allowedOrigin accepts the server's own origin and the configured ones.
func (s *Server) allowedOrigin(origin, host string) bool {
	for _, o := range s.cfg.AllowedOrigins {
		if o == "*" || strings.EqualFold(o, origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"error":%q}`+"\n", msg)
}
