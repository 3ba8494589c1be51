package security

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpsrv "github.com/mark3labs/mcp-go/server"
)

// TestUpstreamCrashShowsAnothersData (issue 19, third attack round, H7):
// a stdio upstream is shared by every principal. When alice's call makes
// it exit, many servers print the record they failed on; how it ended is
// the reason every principal reads (the manifest, the category's index,
// an error) while it starts again, and /readyz, which needs no token,
// shows it too. The stderr of a server that served calls is the
// operator's, in the log.
func TestUpstreamCrashShowsAnothersData(t *testing.T) {
	t.Parallel()
	mark := filepath.Join(t.TempDir(), "crashed")
	e := startEvil(t, "", map[string]string{"EVIL_MARK": mark, "EVIL_SLOW_START": "5s"})
	const private = "Nightingale layoffs Q3 (Carol Smith)"
	alice := e.open(t, aliceToken)
	e.ready(t, alice)
	alice.run(`try { await evil.crash({text: "` + private + `"}) } catch (e) {} return 1`)
	bob := e.open(t, bobToken)
	read := func(ss *session, path string) string {
		return string(ss.rpc("tools/call", map[string]any{"name": "read_tools", "arguments": map[string]any{"path": path}}))
	}
	// Wait until codecell has seen the exit (the server restarts for 5 s).
	var seen string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		seen = read(bob, "/manifest.json") + read(bob, "/evil/index.json")
		if strings.Contains(seen, "exited") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(seen, "exited") {
		t.Fatalf("the server's exit was never shown:\n%.2000s", seen)
	}
	_, _, ready := do(t, http.MethodGet, e.base+"/readyz", nil, "")
	seen += bob.run(`try { await evil.echo({text: "x"}) } catch (e) { return e.message }`).raw
	for _, got := range []struct{ where, text string }{{"what bob reads (manifest, index, an error)", seen}, {"the unauthenticated /readyz", ready}} {
		if i := strings.Index(got.text, "Nightingale"); i >= 0 {
			t.Errorf("%s shows alice's call's data: …%s…", got.where, got.text[max(0, i-200):min(len(got.text), i+100)])
		}
	}
	// The operator still has it.
	if !waitLog(e.stderr, "Nightingale") {
		t.Errorf("the server's stderr is not in codecell's log:\n%s", e.stderr.String())
	}
}

// waitLog waits a few seconds for the log to hold s.
func waitLog(log *syncBuffer, s string) bool {
	for range 50 {
		if strings.Contains(log.String(), s) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// TestUpstreamURLCredentialShown (issue 19, third attack round, H5): an
// HTTP upstream whose URL holds its credential (hosted MCP servers hand
// out such URLs) fails to connect, or answers an error that echoes the
// URL; an OpenAPI description is fetched from a URL with a key. Go's
// errors quote the whole URL: the reason every principal reads, /readyz
// and the log must not show the key.
func TestUpstreamURLCredentialShown(t *testing.T) {
	t.Parallel()
	const secret = "qs-Secret-7f3a9b2c1d0e"
	const letters = "QsSecretAbCdEfGhIjKl" // a key of letters only, in the path
	// An HTTP server that answers every request 502 with the URL it was
	// sent, as a broken gateway might.
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway for "+r.URL.String(), http.StatusBadGateway)
	}))
	t.Cleanup(broken.Close)
	tlsDoc := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(tlsDoc.Close)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte(`[upstream.dead]
url = "http://127.0.0.9:1/mcp?t=`+secret+`"
[upstream.broken]
url = "`+broken.URL+`/mcp?sig=`+secret+`"
[upstream.inpath]
url = "`+broken.URL+`/s/`+secret+`/mcp"
[upstream.userinfo]
url = "http://user:`+secret+`@127.0.0.9:1/mcp"
[openapi.docs]
spec = "`+broken.URL+`/openapi.json?k=`+secret+`"
[openapi.tlsdocs]
spec = "`+tlsDoc.URL+`/openapi.json?k=`+secret+`"
[openapi.pathdocs]
spec = "`+broken.URL+`/specs/`+secret+`/openapi.json"
[upstream.letters]
url = "`+broken.URL+`/mcp/`+letters+`"
[upstream.deadletters]
url = "http://127.0.0.9:1/mcp/`+letters+`"
[upstream.deadsse]
url = "http://127.0.0.9:1/sse/`+letters+`"
type = "sse"
[openapi.deaduser]
spec = "http://usr:UonlyPw@127.0.0.9:1/specs/`+letters+`/openapi.json"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, "--config", cfg, "--log-level", "debug")
	alice := s.open(t, aliceToken)
	read := func(path string) string {
		return string(alice.rpc("tools/call", map[string]any{"name": "read_tools", "arguments": map[string]any{"path": path}}))
	}
	// Wait until every source has failed for its own reason, not
	// "starting" or "loading".
	var manifest string
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		manifest = read("/manifest.json")
		if !strings.Contains(manifest, "starting") && !strings.Contains(manifest, "loading") && strings.Count(manifest, "unavailable") >= 11 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if strings.Count(manifest, "unavailable") < 11 {
		t.Fatalf("not every source failed:\n%s", manifest)
	}
	seen := map[string]string{"/readyz, which needs no token,": func() string { _, _, b := do(t, http.MethodGet, s.base+"/readyz", nil, ""); return b }()}
	for _, p := range []string{"/manifest.json", "/dead/index.json", "/broken/index.json", "/inpath/index.json", "/userinfo/index.json", "/docs/index.json", "/tlsdocs/index.json", "/pathdocs/index.json", "/letters/index.json", "/deadletters/index.json", "/deadsse/index.json", "/deaduser/index.json"} {
		seen[p+", which every principal's model reads,"] = read(p)
	}
	seen["the log"] = s.stderr.String()
	for where, got := range seen {
		for _, key := range []string{secret, letters, "UonlyPw"} {
			if i := strings.Index(got, key); i >= 0 {
				t.Errorf("%s shows an upstream's credential: …%s…", where, got[max(0, i-200):min(len(got), i+60)])
			}
		}
	}
	// Each still says why.
	if got := read("/broken/index.json"); !strings.Contains(got, "502") && !strings.Contains(strings.ToLower(got), "bad gateway") {
		t.Errorf("/broken/index.json does not say why: %.1000s", got)
	}
}

// TestHTTPUpstreamErrorBodyInLog (issue 19, third attack round, L12): an
// HTTP upstream's error body may quote the request, with the call's
// resolved arguments; how the call failed becomes the server's status,
// which other principals read, and a log line. Neither shows the body.
func TestHTTPUpstreamErrorBodyInLog(t *testing.T) {
	t.Parallel()
	up := mcpsrv.NewMCPServer("gw", "1", mcpsrv.WithToolCapabilities(false))
	up.AddTool(mcp.NewTool("process", mcp.WithDescription("Process a record."), mcp.WithString("name")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	h := mcpsrv.NewStreamableHTTPServer(up)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			if bytes.Contains(b, []byte(`"tools/call"`)) {
				http.Error(w, "upstream timeout while handling "+string(b), http.StatusBadGateway)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[upstream.gw]\nurl = %q\n", ts.URL+"/mcp")), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, "--config", cfg)
	alice := s.open(t, aliceToken)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if rec := alice.run(`return typeof gw === "object" && typeof gw.process === "function"`); string(rec.Result) == "true" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the upstream did not load")
		}
		time.Sleep(200 * time.Millisecond)
	}
	rec := alice.run(`try { await gw.process({name: "Nightingale layoffs Q3 (Carol Smith)"}) } catch (e) { return e.message } return 1`)
	if !strings.Contains(rec.raw, "502") {
		t.Errorf("alice is not told how the call failed: %.600s", rec.raw)
	}
	bob := s.open(t, bobToken)
	_, _, ready := do(t, http.MethodGet, s.base+"/readyz", nil, "")
	for _, got := range []struct{ where, text string }{
		{"bob's /gw/index.json", string(bob.rpc("tools/call", map[string]any{"name": "read_tools", "arguments": map[string]any{"path": "/gw/index.json"}}))},
		{"the unauthenticated /readyz", ready},
		{"the log", s.stderr.String()},
	} {
		if i := strings.Index(got.text, "Nightingale"); i >= 0 {
			t.Errorf("alice's call's data reaches %s: …%s…", got.where, got.text[max(0, i-200):min(len(got.text), i+60)])
		}
	}
}
