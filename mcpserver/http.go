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
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
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

// withPrincipal returns ctx carrying the authenticated principal.
func withPrincipal(ctx context.Context, p string) context.Context {
	return withIdentity(ctx, identity{principal: p})
}

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

// principal returns who the Authorization header authenticates.
func (a *authenticator) principal(header string) (string, bool) {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", false
	}
	h := sha256.Sum256([]byte(strings.TrimSpace(tok)))
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

// guard wraps the MCP endpoints: it refuses foreign Host headers on a
// loopback listener (403, DNS rebinding), foreign origins (403), bodies
// over the limit (413), requests without a valid token (401) and session
// IDs that are unknown, ended or another principal's (404), and puts the
// authenticated principal into the request's context.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rebinding(r) {
			s.metrics.refusals.WithLabelValues("host").Inc()
			httpError(w, http.StatusForbidden, fmt.Sprintf("host %q is not allowed on a loopback server", r.Host))
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !s.allowedOrigin(origin, r.Host) {
			s.metrics.refusals.WithLabelValues("origin").Inc()
			httpError(w, http.StatusForbidden, fmt.Sprintf("origin %q is not allowed; add it to server.allowed_origins", origin))
			return
		}
		if s.auth.enabled() {
			p, ok := s.auth.principal(r.Header.Get("Authorization"))
			if !ok {
				s.metrics.refusals.WithLabelValues("auth").Inc()
				challenge := `Bearer realm="codecell"`
				msg := "missing bearer token: send Authorization: Bearer <token>"
				if r.Header.Get("Authorization") != "" {
					challenge += `, error="invalid_token"`
					msg = "invalid bearer token"
				}
				w.Header().Set("WWW-Authenticate", challenge)
				httpError(w, http.StatusUnauthorized, msg)
				return
			}
			r = r.WithContext(withPrincipal(r.Context(), p))
		}
		if code, msg := s.checkSession(r); code != 0 {
			s.metrics.refusals.WithLabelValues("session").Inc()
			httpError(w, code, msg)
			return
		}
		if r.Body != nil && r.Method == http.MethodPost {
			max := s.limits.lim.MaxBodyBytes
			if r.ContentLength > max {
				s.metrics.refusals.WithLabelValues("body_size").Inc()
				httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is over the limit of %d", r.ContentLength, max))
				return
			}
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				s.metrics.refusals.WithLabelValues("body_size").Inc()
				httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is over the limit of %d bytes", max))
				return
			}
			if err != nil {
				// A body that stopped arriving (the read timeout) leaves
				// the connection unusable: close it.
				w.Header().Set("Connection", "close")
				httpError(w, http.StatusBadRequest, "read request body: "+err.Error())
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
}

// hostOnly refuses DNS-rebinding requests to endpoints that need no
// other check.
func (s *Server) hostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rebinding(r) {
			s.metrics.refusals.WithLabelValues("host").Inc()
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
	if s.auth.enabled() {
		fmt.Fprintln(w, "Every MCP request needs Authorization: Bearer <token>.")
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
