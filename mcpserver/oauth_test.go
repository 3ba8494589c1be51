package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/mcpserver/oauth"
	"github.com/codecell/codecell/mcpserver/oauth/oauthtest"
	"github.com/codecell/codecell/tools"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// oauthServer is codecell serving HTTP with a static token and OAuth
// against a test authorization server, with a tool that answers who
// called it.
type oauthServer struct {
	as       *oauthtest.Server
	url      string // the server's base URL
	resource string // its resource identifier, the /mcp URL
	logs     *syncBuffer
}

func newOAuthServer(t *testing.T, edit func(*oauth.Config)) *oauthServer {
	t.Helper()
	as := oauthtest.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	o := &oauthServer{as: as, url: base, resource: base + mcpserver.PathStreamable, logs: &syncBuffer{}}
	oc := &oauth.Config{
		Issuers:          []string{as.URL},
		Resource:         o.resource,
		RequiredScopes:   []string{"mcp"},
		IntrospectionURL: as.URL + "/introspect",
		ClientID:         oauthtest.IntrospectionClientID,
		ClientSecret:     oauthtest.IntrospectionSecret,
	}
	if edit != nil {
		edit(oc)
	}
	srv := newServer(t, mcpserver.Config{
		Auth:   []mcpserver.Token{{Principal: "alice", Token: aliceToken}},
		OAuth:  oc,
		Logger: slog.New(slog.NewTextHandler(o.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	err = srv.Registry().Register(tools.Tool{Name: "test.whoami", Summary: "Say who called.", Handler: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		c := tools.CallerFrom(ctx)
		return json.Marshal(map[string]string{"principal": c.Principal, "scopes": c.Scopes})
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv.Handler())
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	return o
}

func getJSON(t *testing.T, u string, dst any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s %s", u, resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(dst); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

// challengeParam reads a parameter of a Bearer challenge.
func challengeParam(h, name string) string {
	m := regexp.MustCompile(name + `="([^"]*)"`).FindStringSubmatch(h)
	if m == nil {
		return ""
	}
	return m[1]
}

func TestProtectedResourceMetadata(t *testing.T) {
	t.Parallel()
	o := newOAuthServer(t, nil)
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		t.Run(path, func(t *testing.T) {
			var md map[string]any
			getJSON(t, o.url+path, &md)
			want := map[string]any{
				"resource":                 o.resource,
				"authorization_servers":    []any{o.as.URL},
				"scopes_supported":         []any{"mcp"},
				"bearer_methods_supported": []any{"header"},
				"resource_name":            "codecell",
			}
			got, _ := json.Marshal(md)
			exp, _ := json.Marshal(want)
			if !bytes.Equal(got, exp) {
				t.Fatalf("metadata\n got %s\nwant %s", got, exp)
			}
		})
	}
}

// TestOAuthDiscoveryChain follows what an MCP client does on its own: the
// 401 names the resource metadata, which names the authorization server,
// whose metadata names the token endpoint; the token it issues for this
// resource opens the server, and the tool sees the principal and scopes.
func TestOAuthDiscoveryChain(t *testing.T) {
	t.Parallel()
	o := newOAuthServer(t, nil)

	resp := post(t, o.resource, nil, initBody)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", resp.StatusCode)
	}
	challenge := resp.Header.Get("WWW-Authenticate")
	if !strings.HasPrefix(challenge, "Bearer ") || strings.Contains(challenge, "error=") {
		t.Fatalf("challenge %q: want Bearer without an error for a request without a token (RFC 6750 §3.1)", challenge)
	}
	prm := challengeParam(challenge, "resource_metadata")
	if prm != o.url+"/.well-known/oauth-protected-resource/mcp" {
		t.Fatalf("resource_metadata %q", prm)
	}
	if got := challengeParam(challenge, "scope"); got != "mcp" {
		t.Fatalf("scope %q, want mcp", got)
	}
	var md struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	getJSON(t, prm, &md)
	var asm struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	getJSON(t, oauth.DiscoveryURLs(md.AuthorizationServers[0])[0], &asm)

	// A client registered for the client credentials grant.
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {md.Resource}, "scope": {"mcp tools:read"}}
	req, _ := http.NewRequest(http.MethodPost, asm.TokenEndpoint, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(oauthtest.IntrospectionClientID, oauthtest.IntrospectionSecret)
	tr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(tr.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token response: %v", err)
	}

	c := authedClient(t, o.resource, tok.AccessToken)
	res, rec := execute(t, c, map[string]any{"code": "await test.whoami({})"})
	if rec == nil || rec.Status != executor.StatusOK {
		t.Fatalf("run: %s", text(res))
	}
	var who map[string]string
	if err := json.Unmarshal(rec.Result, &who); err != nil {
		t.Fatalf("result %s: %v", rec.Result, err)
	}
	// The principal is the token's sub in its issuer's namespace.
	if want := o.as.URL + "#" + oauthtest.IntrospectionClientID; who["principal"] != want || who["scopes"] != "mcp tools:read" {
		t.Fatalf("the tool saw %v, want principal %s with scopes \"mcp tools:read\"", who, want)
	}
	if strings.Contains(o.logs.String(), tok.AccessToken) {
		t.Fatal("the server logged the access token")
	}
}

// TestOAuthGuard sends one request per kind of token and checks what the
// guard answers, and that no token reaches the logs.
func TestOAuthGuard(t *testing.T) {
	t.Parallel()
	o := newOAuthServer(t, func(c *oauth.Config) { c.KeysMinInterval = time.Hour })
	as := o.as
	good := func(edit func(map[string]any)) map[string]any {
		c := as.Claims("dave", o.resource, "mcp", "tools:read")
		if edit != nil {
			edit(c)
		}
		return c
	}
	esKid := as.AddKey(t, jose.ES256) // published before the first fetch
	stranger := oauthtest.New(t)
	revoked := as.Opaque(good(nil))
	as.Revoke(revoked)

	var tokens []string
	for _, tc := range []struct {
		name    string
		token   string
		status  int
		errKind string // the challenge's error parameter
	}{
		{name: "static token", token: aliceToken, status: http.StatusOK},
		{name: "rs256", token: as.SignWith(t, "rs256-1", good(nil)), status: http.StatusOK},
		{name: "es256", token: as.SignWith(t, esKid, good(nil)), status: http.StatusOK},
		{name: "introspected", token: as.Opaque(good(nil)), status: http.StatusOK},
		{name: "no token", status: http.StatusUnauthorized},
		{name: "unknown static token", token: "not-a-token-of-anyone-at-all", status: http.StatusUnauthorized, errKind: "invalid_token"},
		{name: "wrong audience", token: as.Sign(t, good(func(c map[string]any) { c["aud"] = "http://elsewhere.example.test/mcp" })), status: http.StatusUnauthorized, errKind: "invalid_token"},
		{name: "expired", token: as.Sign(t, good(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })), status: http.StatusUnauthorized, errKind: "invalid_token"},
		{name: "unknown kid", token: oauthtest.SignJWT(t, jose.RS256, mustKey(t), "rs256-9", good(nil)), status: http.StatusUnauthorized, errKind: "invalid_token"},
		{name: "forged signature", token: stranger.SignWith(t, "rs256-1", good(nil)), status: http.StatusUnauthorized, errKind: "invalid_token"},
		{name: "alg none", token: oauthtest.Unsigned(t, good(nil)), status: http.StatusUnauthorized, errKind: "invalid_token"},
		{name: "revoked", token: revoked, status: http.StatusUnauthorized, errKind: "invalid_token"},
		{name: "missing scope", token: as.Sign(t, good(func(c map[string]any) { c["scope"] = "tools:read" })), status: http.StatusForbidden, errKind: "insufficient_scope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			header := map[string]string{}
			if tc.token != "" {
				header["Authorization"] = "Bearer " + tc.token
				tokens = append(tokens, tc.token)
			}
			resp := post(t, o.resource, header, initBody)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.status == http.StatusOK {
				return
			}
			ch := resp.Header.Get("WWW-Authenticate")
			if got := challengeParam(ch, "error"); got != tc.errKind {
				t.Fatalf("challenge %q: error %q, want %q", ch, got, tc.errKind)
			}
			if challengeParam(ch, "resource_metadata") != o.url+"/.well-known/oauth-protected-resource/mcp" {
				t.Fatalf("challenge %q names no resource metadata", ch)
			}
		})
	}
	logs := o.logs.String()
	for _, tok := range tokens {
		if strings.Contains(logs, tok) {
			t.Fatalf("the logs hold a token")
		}
	}
	if as.JWKSFetches() != 1 {
		t.Fatalf("%d key set fetches, want 1: the unknown kid waits for the interval", as.JWKSFetches())
	}
}

func mustKey(t *testing.T) any {
	t.Helper()
	return oauthtest.New(t).PrivateKey("rs256-1")
}

// TestStaticTokensWithoutOAuth: without OAuth there is no metadata
// document and the challenge names none.
func TestStaticTokensWithoutOAuth(t *testing.T) {
	t.Parallel()
	ts := securedServer(t, engine.Limits{})
	resp := post(t, ts.URL+"/mcp", nil, initBody)
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || strings.Contains(ch, "resource_metadata") {
		t.Fatalf("status %d, challenge %q", resp.StatusCode, ch)
	}
	r, err := http.Get(ts.URL + "/.well-known/oauth-protected-resource")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusNotFound {
		t.Fatalf("metadata without OAuth: status %d, want 404", r.StatusCode)
	}
}

// sdkNode returns the Node.js that `make node-deps` installed beside the
// official TypeScript SDK. Without it the test is skipped, unless
// CODECELL_REQUIRE_NODE is set, as `make test` does.
func sdkNode(t *testing.T) (bin, dir string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "sdk"))
	if err == nil {
		bin = filepath.Join(dir, "node_modules", ".bin", "node")
		if _, err = os.Stat(bin); err == nil {
			return bin, dir
		}
	}
	if os.Getenv("CODECELL_REQUIRE_NODE") != "" {
		t.Fatalf("the MCP TypeScript SDK is not installed (%v); run make node-deps", err)
	}
	t.Skip("run make node-deps to test with the official TypeScript SDK")
	return "", ""
}

// TestTypeScriptSDKOAuth runs the official TypeScript SDK client's OAuth
// flows (testdata/sdk/oauth.mjs) against the server and the test
// authorization server: discovery from the 401, dynamic registration, the
// authorization code with PKCE and the resource indicator, and the client
// credentials grant. The tool sees the principal and scopes of each.
func TestTypeScriptSDKOAuth(t *testing.T) {
	t.Parallel()
	bin, dir := sdkNode(t)
	o := newOAuthServer(t, nil)
	for _, tc := range []struct {
		flow string
		args []string
	}{
		{"code", nil},
		{"client_credentials", []string{oauthtest.IntrospectionClientID, oauthtest.IntrospectionSecret, o.as.URL}},
	} {
		t.Run(tc.flow, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append([]string{"oauth.mjs", tc.flow, o.resource}, tc.args...)...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("oauth.mjs %s: %v\n%s", tc.flow, err, out)
			}
			var res struct {
				OK    bool `json:"ok"`
				Steps struct {
					Registered bool   `json:"registered"`
					PKCE       string `json:"pkce"`
					Resource   string `json:"resource"`
					Scope      string `json:"scope"`
				} `json:"steps"`
				ClientID string            `json:"client_id"`
				Who      map[string]string `json:"who"`
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || !res.OK {
				t.Fatalf("oauth.mjs %s: %v\n%s", tc.flow, err, out)
			}
			want := map[string]string{"principal": o.as.URL + "#" + oauthtest.IntrospectionClientID, "scopes": "mcp tools:read"}
			if tc.flow == "code" {
				if !res.Steps.Registered || res.Steps.PKCE != "S256" || res.Steps.Resource != o.resource || res.Steps.Scope != "mcp" {
					t.Fatalf("authorization request: %+v", res.Steps)
				}
				want = map[string]string{"principal": o.as.URL + "#user-of-" + res.ClientID, "scopes": "mcp"}
			}
			if res.Who["principal"] != want["principal"] || res.Who["scopes"] != want["scopes"] {
				t.Fatalf("the tool saw %v, want %v", res.Who, want)
			}
		})
	}
}
