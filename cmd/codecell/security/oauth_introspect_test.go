package security

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestIntrospectionFlood (issue 19, fourth round, A2; unauthenticated):
// with auth.oauth.introspection_url (opaque tokens, RFC 7662), every
// request whose bearer token was not cached made codecell POST it to the
// authorization server, for anyone who could reach the port: requests
// with random tokens were one introspection call each, unbounded. The
// refusals were cached with the identities, and past 4,096 entries the
// cache dropped entries at random, valid principals' with them, so their
// next requests went to the authorization server again — which, rate
// limiting codecell's client after the flood, refused them: 503 for every
// user. Calls for uncached tokens are bounded per client and in all, and
// refusals never evict an identity.
func TestIntrospectionFlood(t *testing.T) {
	const good = "opaque-good-token-0123456789abcdef"
	var calls, goodCalls atomic.Int64
	var limited atomic.Bool // the authorization server's rate limit is reached
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/introspect" {
			http.NotFound(w, r)
			return
		}
		calls.Add(1)
		r.ParseForm()
		tok := r.PostForm.Get("token")
		if tok == good {
			goodCalls.Add(1)
		}
		if limited.Load() {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if tok == good {
			fmt.Fprintf(w, `{"active":true,"sub":"carol","scope":"mcp","exp":%d}`, time.Now().Add(time.Hour).Unix())
			return
		}
		fmt.Fprint(w, `{"active":false}`)
	}))
	t.Cleanup(as.Close)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[auth.oauth]\nissuer = %q\nresource = \"http://127.0.0.1/mcp\"\nintrospection_url = %q\nclient_id = \"codecell\"\nclient_secret_env = \"SECURITY_CLIENT_SECRET\"\n", as.URL, as.URL+"/introspect")), 0o600)
	s := start(t, "--config", cfg, "SECURITY_CLIENT_SECRET=s3cret-client-value")

	initBody := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"carol","version":"1"}}}`
	if code, _, body := do(t, http.MethodPost, s.base+"/mcp", map[string]string{"Authorization": "Bearer " + good}, initBody); code != 200 {
		t.Fatalf("the valid token is refused: %d %s", code, body)
	}
	before := goodCalls.Load()

	// The flood: random tokens, no account needed.
	const flood = 6000
	var wg sync.WaitGroup
	var next, tooMany atomic.Int64
	client := &http.Client{Timeout: 30 * time.Second}
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= flood {
				b := make([]byte, 16)
				rand.Read(b)
				req, _ := http.NewRequest(http.MethodPost, s.base+"/mcp", strings.NewReader(initBody))
				req.Header.Set("Authorization", "Bearer junk-"+hex.EncodeToString(b))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if res, err := client.Do(req); err == nil {
					if res.StatusCode == http.StatusTooManyRequests && res.Header.Get("Retry-After") != "" {
						tooMany.Add(1)
					}
					res.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	fromFlood := calls.Load() - before - 1
	// carol again, while the authorization server is rate-limiting
	// codecell's client (as after such a flood).
	limited.Store(true)
	code, _, body := do(t, http.MethodPost, s.base+"/mcp", map[string]string{"Authorization": "Bearer " + good}, initBody)
	t.Logf("%d unauthenticated requests with random tokens made %d introspection calls (%d refused 429); carol's token was introspected again: %v; her request then: HTTP %d %.200s",
		flood, fromFlood, tooMany.Load(), goodCalls.Load() > before, code, body)
	if fromFlood > flood/10 {
		t.Errorf("%d unauthenticated requests made %d introspection calls to the authorization server: nothing bounds them", flood, fromFlood)
	}
	if code != 200 {
		t.Errorf("a valid principal is refused (HTTP %d) after an unauthenticated flood", code)
	}
}
