package security

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReadyzNamesNoSource (issue 19, third attack round, L7): /readyz,
// which needs no token, named every tool source that was loading or
// unavailable, and its state, a category hidden from every principal but
// one included. Without a token it now says only whether the instance is
// ready and how many sources are not; with a principal's token it lists
// those that principal sees.
func TestReadyzNamesNoSource(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte(`[upstream.mergerplans]
url = "http://127.0.0.9:1/mcp"
[access.principal.bob]
deny = ["mergerplans.*"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, "--config", cfg)
	readyz := func(token string) (int, string) {
		h := map[string]string{}
		if token != "" {
			h["Authorization"] = "Bearer " + token
		}
		code, _, body := do(t, http.MethodGet, s.base+"/readyz", h, "")
		return code, body
	}
	// Wait until the instance is ready and the source has failed (it is
	// "starting" before).
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, body := readyz(aliceToken)
		if code == http.StatusOK && strings.Contains(body, `"state":"unavailable"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the source never became unavailable: %s", body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range []struct {
		who, token string
		names      bool
	}{
		{"no token", "", false},
		{"a wrong token", "not-a-token-0123456789abcdef", false},
		{"bob, from whom the source is hidden", bobToken, false},
		{"alice", aliceToken, true},
	} {
		code, body := readyz(c.token)
		if code != http.StatusOK {
			t.Errorf("%s: %d %s", c.who, code, body)
		}
		if got := strings.Contains(body, "mergerplans"); got != c.names {
			t.Errorf("%s: /readyz names the source: %v, want %v: %s", c.who, got, c.names, body)
		}
		var ready struct {
			Status      string `json:"status"`
			Unavailable int    `json:"sources_unavailable"`
		}
		if err := json.Unmarshal([]byte(body), &ready); err != nil || ready.Status != "ready" {
			t.Errorf("%s: %s (%v)", c.who, body, err)
		}
		if c.token == "" && ready.Unavailable != 1 {
			t.Errorf("no token: %d sources counted unavailable, want 1: %s", ready.Unavailable, body)
		}
	}
}
