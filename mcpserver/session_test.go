package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
)

// initSession initializes a Streamable HTTP session as token's principal
// and returns its ID.
func initSession(t *testing.T, url, token string) string {
	t.Helper()
	resp := post(t, url, map[string]string{"Authorization": "Bearer " + token}, initBody)
	if resp.StatusCode != 200 {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatal("no session ID")
	}
	post(t, url, map[string]string{"Authorization": "Bearer " + token, "Mcp-Session-Id": id}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return id
}

func callBody(id int, code string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": "execute_code", "arguments": map[string]any{"code": code}}})
	return string(b)
}

// TestSessionsBelongToTheirPrincipal: a session ID is usable only by the
// principal that opened it; forged, ended and foreign IDs are all 404, and
// a GET stream needs a session.
func TestSessionsBelongToTheirPrincipal(t *testing.T) {
	t.Parallel()
	ts := securedServer(t, engine.Limits{})
	url := ts.URL + "/mcp"
	aliceSession := initSession(t, url, aliceToken)
	alice := map[string]string{"Authorization": "Bearer " + aliceToken, "Mcp-Session-Id": aliceSession}

	cases := []struct {
		name   string
		method string
		header map[string]string
		want   int
	}{
		{"bob presents alice's session", http.MethodPost, map[string]string{"Authorization": "Bearer " + bobToken, "Mcp-Session-Id": aliceSession}, 404},
		{"bob opens alice's stream", http.MethodGet, map[string]string{"Authorization": "Bearer " + bobToken, "Mcp-Session-Id": aliceSession}, 404},
		{"a forged session", http.MethodPost, map[string]string{"Authorization": "Bearer " + aliceToken, "Mcp-Session-Id": "mcp-session-" + strings.Repeat("0", 8) + "-0000-4000-8000-000000000000"}, 404},
		{"a stream without a session", http.MethodGet, map[string]string{"Authorization": "Bearer " + aliceToken}, 400},
		{"bob deletes alice's session", http.MethodDelete, map[string]string{"Authorization": "Bearer " + bobToken, "Mcp-Session-Id": aliceSession}, 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, url, strings.NewReader(callBody(7, "1")))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.want {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, b)
			}
		})
	}
	// Alice's session still works, and ends when she deletes it.
	if resp := post(t, url, alice, callBody(8, "'still mine'")); resp.StatusCode != 200 {
		t.Fatalf("alice's own call: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	for k, v := range alice {
		req.Header.Set(k, v)
	}
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("delete: %v %v", resp, err)
	}
	if resp := post(t, url, alice, callBody(9, "1")); resp.StatusCode != 404 {
		t.Fatalf("an ended session answered %d, want 404", resp.StatusCode)
	}
}

// TestStatelessVaultsArePerPrincipal: requests of protocol 2026-07-28 carry
// no session; a token alice got must not resolve for bob, and bob must not
// read alice's ledger.
func TestStatelessVaultsArePerPrincipal(t *testing.T) {
	t.Parallel()
	ts := securedServer(t, engine.Limits{})
	url := ts.URL + "/mcp"
	modern := func(token string, id int, method string, params map[string]any) string {
		params["_meta"] = map[string]any{
			mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
			mcp.MetaKeyClientInfo:         map[string]any{"name": "t", "version": "1"},
			mcp.MetaKeyClientCapabilities: map[string]any{},
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		name, _ := params["name"].(string)
		if uri, ok := params["uri"].(string); ok {
			name = uri
		}
		resp := post(t, url, map[string]string{"Authorization": "Bearer " + token, mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728,
			mcp.HeaderMethod: method, mcp.HeaderName: name}, string(body))
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
		}
		return string(b)
	}
	run := func(token string, id int, code string) string {
		return modern(token, id, "tools/call", map[string]any{"name": "execute_code", "arguments": map[string]any{"code": code}})
	}
	out := run(aliceToken, 1, `({who: "ada@example.com"})`)
	tok := regexp.MustCompile(`⟦email:[0-9a-f]+⟧`).FindString(out)
	if tok == "" {
		t.Fatalf("no token in alice's result: %s", out)
	}
	// Alice's own later request resolves it.
	if out := run(aliceToken, 2, fmt.Sprintf(`(await util.echo({text: %q})).text.length`, tok)); !strings.Contains(out, `\"result\":15`) {
		t.Fatalf("alice could not use her token: %s", out)
	}
	// Bob's does not.
	if out := run(bobToken, 3, fmt.Sprintf(`(await util.echo({text: %q})).text`, tok)); !strings.Contains(out, "unknown token") {
		t.Fatalf("bob resolved alice's token: %s", out)
	}
	ledger := modern(bobToken, 4, "resources/read", map[string]any{"uri": mcpserver.LedgerURI})
	if !strings.Contains(ledger, `\"runs\":1`) {
		t.Fatalf("bob's ledger is not his own: %s", ledger)
	}
}

// TestHostAndHome: every endpoint of a loopback server refuses a foreign
// Host header (DNS rebinding), and GET / says how to connect.
func TestHostAndHome(t *testing.T) {
	t.Parallel()
	ts := securedServer(t, engine.Limits{})
	for _, path := range []string{"/", mcpserver.PathHealth, mcpserver.PathMetrics, mcpserver.PathStreamable} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		req.Host = "attacker.example:80"
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s with a foreign Host: %d, want 403", path, resp.StatusCode)
		}
	}
	resp, err := http.Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), ts.URL+"/mcp") || !strings.Contains(string(b), "Bearer") {
		t.Errorf("GET /: %d %s", resp.StatusCode, b)
	}
}
