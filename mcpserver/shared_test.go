package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
)

// instance is one codecell instance over the store at path, served over
// HTTP with alice's and bob's tokens.
func instance(t *testing.T, path string, key filter.Key, shared bool) (*httptest.Server, *mcpserver.Server, *sqlite.Store) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	cfg := mcpserver.Config{
		Auth:      []mcpserver.Token{{Principal: "alice", Token: aliceToken}, {Principal: "bob", Token: bobToken}},
		Store:     st,
		FilterKey: key,
	}
	if shared {
		cfg.Shared = st
	}
	srv, err := mcpserver.New(forTests(t, cfg), reg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
		st.Close()
	})
	return ts, srv, st
}

// statelessRun runs code with a request of the stateless protocol, which
// any instance serves, and returns the response body.
func statelessRun(t *testing.T, url, token string, id int, code string) string {
	t.Helper()
	params := map[string]any{"name": "execute_code", "arguments": map[string]any{"code": code}, "_meta": map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientInfo:         map[string]any{"name": "t", "version": "1"},
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	resp := post(t, url+mcpserver.PathStreamable, map[string]string{"Authorization": "Bearer " + token, mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728,
		mcp.HeaderMethod: "tools/call", mcp.HeaderName: "execute_code"}, string(body))
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("tools/call: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

// TestTokensAcrossInstances: two instances on one store; a token minted
// on one resolves on the other when they share their vaults, for its own
// principal only, and not when they do not.
func TestTokensAcrossInstances(t *testing.T) {
	t.Parallel()
	key, err := filter.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		shared bool
		token  string // who uses the token on the second instance
		want   string
	}{
		{name: "shared", shared: true, token: aliceToken, want: `\"result\":15`},
		{name: "shared, another principal", shared: true, token: bobToken, want: "unknown token"},
		{name: "not shared", shared: false, token: aliceToken, want: "unknown token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "codecell.db")
			a, _, st := instance(t, path, key, tt.shared)
			b, _, _ := instance(t, path, key, tt.shared)
			out := statelessRun(t, a.URL, aliceToken, 1, `({who: "ada@example.com"})`)
			tok := regexp.MustCompile(`⟦email:[0-9a-f]+⟧`).FindString(out)
			if tok == "" {
				t.Fatalf("no token in the result: %s", out)
			}
			if out := statelessRun(t, b.URL, tt.token, 2, fmt.Sprintf(`(await util.echo({text: %q})).text.length`, tok)); !strings.Contains(out, tt.want) {
				t.Errorf("on the other instance: %s; want %s", out, tt.want)
			}
			// Sealed in the store: the token is there, the value is not.
			row, err := st.GetVaultToken(t.Context(), "alice", "", tok)
			if tt.shared != (err == nil) {
				t.Fatalf("stored token: %v (shared %v)", err, tt.shared)
			}
			if strings.Contains(string(row.Sealed), "ada@example.com") {
				t.Error("the store holds the value in clear")
			}
		})
	}
}

// TestSharedNeedsTheKey: sharing vaults under a key made for one process
// would mint tokens no other instance can open.
func TestSharedNeedsTheKey(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "codecell.db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := mcpserver.New(forTests(t, mcpserver.Config{Store: st, Shared: st}), tools.NewRegistry()); err == nil || !strings.Contains(err.Error(), "filter key") {
		t.Fatalf("New without a filter key: %v", err)
	}
}

// TestReadyAndDrain: /readyz is 200 once the pool and the store are
// ready; after Drain it is 503 with the reason, new sessions and
// stateless requests are refused with 503, and an open session is still
// served. The store's pool shows in /metrics.
func TestReadyAndDrain(t *testing.T) {
	t.Parallel()
	key, _ := filter.NewKey()
	ts, srv, _ := instance(t, filepath.Join(t.TempDir(), "codecell.db"), key, true)
	readyz := func() (int, string) {
		resp, err := http.Get(ts.URL + mcpserver.PathReady)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(30 * time.Second)
	for code, _ := readyz(); code != 200; code, _ = readyz() {
		if time.Now().After(deadline) {
			t.Fatal("not ready after 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}

	req, _ := http.NewRequest(http.MethodGet, ts.URL+mcpserver.PathMetrics, nil)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	mresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, name := range []string{"codecell_store_connections_open", "codecell_store_connections_in_use", "codecell_store_connection_waits_total"} {
		if !strings.Contains(string(metrics), name+" ") {
			t.Errorf("/metrics lacks %s", name)
		}
	}

	url := ts.URL + mcpserver.PathStreamable
	session := initSession(t, url, aliceToken)
	srv.Drain()
	if code, body := readyz(); code != 503 || !strings.Contains(body, "draining") {
		t.Errorf("readyz while draining: %d %s", code, body)
	}
	tests := []struct {
		name   string
		header map[string]string
		body   string
		want   int
	}{
		{"a new session", map[string]string{"Authorization": "Bearer " + aliceToken}, initBody, 503},
		{"a stateless request", map[string]string{"Authorization": "Bearer " + aliceToken, mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728}, callBody(2, "1+1"), 503},
		{"an open session's request", map[string]string{"Authorization": "Bearer " + aliceToken, "Mcp-Session-Id": session}, callBody(3, "1+1"), 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, url, tt.header, tt.body)
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
			if tt.want == 503 && resp.Header.Get("Retry-After") == "" {
				t.Error("no Retry-After")
			}
		})
	}
}

// TestReadyzStore: /readyz names the store when it cannot be used.
func TestReadyzStore(t *testing.T) {
	t.Parallel()
	key, _ := filter.NewKey()
	ts, _, st := instance(t, filepath.Join(t.TempDir(), "codecell.db"), key, false)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(ts.URL + mcpserver.PathReady)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready after 30 s: %s", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	st.Close()
	resp, err := http.Get(ts.URL + mcpserver.PathReady)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), "store") {
		t.Errorf("readyz with the store closed: %d %s", resp.StatusCode, b)
	}
}
