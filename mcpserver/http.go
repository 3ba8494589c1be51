package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Token authenticates an HTTP client as a principal.
type Token struct {
	Principal string
	Token     string
}

type principalKey struct{}

// withPrincipal returns ctx carrying the authenticated principal.
func withPrincipal(ctx context.Context, p string) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// principalFrom returns the principal withPrincipal stored.
func principalFrom(ctx context.Context) (string, bool) {
	p, ok := ctx.Value(principalKey{}).(string)
	return p, ok
}

// copyPrincipal carries the principal from the HTTP request into the
// context mcp-go hands to handlers.
func copyPrincipal(ctx context.Context, r *http.Request) context.Context {
	if p, ok := principalFrom(r.Context()); ok {
		return withPrincipal(ctx, p)
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

// guard wraps the MCP endpoints: it refuses foreign origins (403), bodies
// over the limit (413) and requests without a valid token (401), and puts
// the authenticated principal into the request's context.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
				httpError(w, http.StatusBadRequest, "read request body: "+err.Error())
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
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
