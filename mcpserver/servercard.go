package mcpserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The server card (the experimental MCP Server Card extension, SEP-2127):
// a static document that says what this server is and how to connect to
// it, for clients and registries that look before they connect. It names
// no tools, resources or prompts (those are listed at run time, per
// caller) and holds nothing secret, so it is served without
// authentication, to any origin, cacheable.

// Server card paths: the extension's reserved location, the Streamable
// HTTP endpoint's URL with /server-card appended, and the well-known URI
// of earlier drafts, which clients still probe.
const (
	PathServerCard          = PathStreamable + "/server-card"
	PathServerCardWellKnown = "/.well-known/mcp/server-card.json"
)

// ServerCardMediaType is the server card's media type.
const ServerCardMediaType = "application/mcp-server-card+json"

// serverCardSchema is the $schema every server card names.
const serverCardSchema = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"

// ServerCardName is codecell's name in the card: reverse DNS of its
// repository's host, then the server's name.
const ServerCardName = "io.github.codecell/codecell"

type serverCard struct {
	Schema      string             `json:"$schema"`
	Name        string             `json:"name"`
	Version     string             `json:"version"`
	Description string             `json:"description"`
	Title       string             `json:"title"`
	WebsiteURL  string             `json:"websiteUrl,omitempty"`
	Repository  *serverCardRepo    `json:"repository,omitempty"`
	Remotes     []serverCardRemote `json:"remotes"`
}

type serverCardRepo struct {
	URL    string `json:"url"`
	Source string `json:"source"`
}

type serverCardRemote struct {
	Type                      string             `json:"type"`
	URL                       string             `json:"url"`
	Headers                   []serverCardHeader `json:"headers,omitempty"`
	SupportedProtocolVersions []string           `json:"supportedProtocolVersions"`
}

type serverCardHeader struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	IsRequired  bool   `json:"isRequired"`
	IsSecret    bool   `json:"isSecret"`
	Value       string `json:"value,omitempty"`
}

// addServerCard serves the card at both paths.
func (s *Server) addServerCard(mux *http.ServeMux, h *httpTransports) {
	card := s.hostOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serveServerCard(w, r, h)
	}))
	for _, p := range []string{PathServerCard, PathServerCardWellKnown} {
		mux.Handle("GET "+p, card)
		mux.Handle("OPTIONS "+p, card)
	}
}

// serveServerCard answers with the card, or 304 when the client's copy
// (If-None-Match) is current.
func (s *Server) serveServerCard(w http.ResponseWriter, r *http.Request, h *httpTransports) {
	hd := w.Header()
	hd.Set("Access-Control-Allow-Origin", "*")
	hd.Set("Access-Control-Allow-Methods", "GET")
	hd.Set("Access-Control-Allow-Headers", "Content-Type, If-None-Match")
	hd.Set("Access-Control-Expose-Headers", "ETag")
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	body, err := json.MarshalIndent(s.serverCard(r, h), "", "  ")
	if err != nil {
		httpError(w, http.StatusInternalServerError, "encode server card: "+err.Error())
		return
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	hd.Set("ETag", etag)
	hd.Set("Cache-Control", "public, max-age=3600")
	hd.Set("Vary", "Host")
	for _, m := range strings.Split(r.Header.Get("If-None-Match"), ",") {
		if m = strings.TrimSpace(m); m == etag || m == "*" || m == "W/"+etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	hd.Set("Content-Type", ServerCardMediaType)
	w.Write(append(body, '\n'))
}

// serverCard describes this server as reached by r: at the OAuth
// resource's address when OAuth is on (the address clients are told),
// else at the address r was sent to.
func (s *Server) serverCard(r *http.Request, h *httpTransports) serverCard {
	base := "http://" + r.Host
	if r.TLS != nil {
		base = "https://" + r.Host
	}
	if s.oauth != nil {
		if u, err := url.Parse(s.oauth.Metadata().Resource); err == nil && u.Host != "" {
			base = u.Scheme + "://" + u.Host
		}
	}
	var headers []serverCardHeader
	if s.authRequired() {
		desc := "A bearer token the server's operator issued (auth.tokens)."
		if s.oauth != nil {
			desc = "An OAuth 2.1 access token; the protected-resource metadata at " + s.resourceMetadata + " names the authorization server."
		}
		headers = append(headers, serverCardHeader{Name: "Authorization", Description: desc, IsRequired: true, IsSecret: true, Value: "Bearer {token}"})
	}
	return serverCard{
		Schema:      serverCardSchema,
		Name:        ServerCardName,
		Version:     s.cfg.Version,
		Title:       Name,
		Description: "Code execution with progressive tool disclosure: discover tools, call them from one program.",
		Repository:  &serverCardRepo{URL: "https://github.com/codecell/codecell", Source: "github"},
		Remotes: []serverCardRemote{
			{Type: "streamable-http", URL: base + PathStreamable, Headers: headers, SupportedProtocolVersions: server.FilterSupportedVersions(h.streamable)},
			{Type: "sse", URL: base + PathSSE, Headers: headers, SupportedProtocolVersions: legacyVersions(server.FilterSupportedVersions(h.sse))},
		},
	}
}

// legacyVersions are the versions before 2026-07-28 of vs: the SSE
// transport is a session transport, which that protocol does not have.
func legacyVersions(vs []string) []string {
	var out []string
	for _, v := range vs {
		if !mcp.IsModernProtocol(v) {
			out = append(out, v)
		}
	}
	return out
}
