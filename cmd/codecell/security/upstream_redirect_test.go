package security

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestUpstreamRedirectSSRF (issue 19, third attack round, M4): a hostile
// HTTP upstream answers with a redirect to an internal service; codecell
// must not send its requests (with the upstream's headers) there, and
// what that service answers is shown nowhere.
func TestUpstreamRedirectSSRF(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path)
		mu.Unlock()
		http.Error(w, "INTERNAL-ONLY admin panel", http.StatusBadGateway)
	}))
	t.Cleanup(internal.Close)
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/admin", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(hostile.Close)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[upstream.thirdparty]\nurl = %q\nheaders = { \"X-Api-Key\" = \"upstream-key-5e6f7a8b9c\" }\n", hostile.URL+"/mcp")), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, "--config", cfg)
	alice := s.open(t, aliceToken)
	var index string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		index = string(alice.rpc("tools/call", map[string]any{"name": "read_tools", "arguments": map[string]any{"path": "/thirdparty/index.json"}}))
		if strings.Contains(index, "redirect") {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(index, "redirect") {
		t.Errorf("the source does not say it was redirected: %.1000s", index)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) > 0 {
		t.Errorf("a hostile upstream's redirect made codecell send %d requests to another host: %v", len(got), got)
	}
	if strings.Contains(index, "INTERNAL-ONLY") {
		t.Errorf("what the internal service answered is shown: %.1000s", index)
	}
}
