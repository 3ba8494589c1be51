package security

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSessionsAreBoundToTheirPrincipal (issue 10, item 4): bob, with his
// own token and alice's session ID, is refused as if the session did not
// exist, over Streamable HTTP and SSE; so are forged and ended IDs, and a
// GET stream without a session.
func TestSessionsAreBoundToTheirPrincipal(t *testing.T) {
	t.Parallel()
	s := start(t)
	alice := s.open(t, aliceToken)
	alice.run(`({mine: "ada@example.com"})`)

	bob := map[string]string{"Authorization": "Bearer " + bobToken, "Mcp-Session-Id": alice.id}
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		code, _, body := do(t, method, s.base+"/mcp", bob, `{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"codecell://session/ledger"}}`)
		if code != http.StatusNotFound {
			t.Errorf("bob's %s with alice's session: %d %s", method, code, body)
		}
	}
	forged := map[string]string{"Authorization": "Bearer " + aliceToken, "Mcp-Session-Id": "mcp-session-00000000-0000-4000-8000-000000000000"}
	if code, _, _ := do(t, http.MethodPost, s.base+"/mcp", forged, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); code != http.StatusNotFound {
		t.Errorf("a forged session: %d", code)
	}
	if code, _, _ := do(t, http.MethodGet, s.base+"/mcp", map[string]string{"Authorization": "Bearer " + aliceToken}, ""); code != http.StatusBadRequest {
		t.Errorf("a GET stream without a session: %d", code)
	}
	// Alice's session is intact; once she ends it, it is gone for her too.
	alice.normal()
	if code, _, _ := do(t, http.MethodDelete, alice.url, alice.header(), ""); code != 200 {
		t.Fatalf("alice ends her session: %d", code)
	}
	if code, _, _ := do(t, http.MethodPost, alice.url, alice.header(), `{"jsonrpc":"2.0","id":1,"method":"ping"}`); code != http.StatusNotFound {
		t.Errorf("an ended session: %d", code)
	}
	s.open(t, bobToken).normal()
}

// TestSSESessionsAreBoundToTheirPrincipal: bob posting to alice's SSE
// session is refused, and nothing of his reaches her stream.
func TestSSESessionsAreBoundToTheirPrincipal(t *testing.T) {
	t.Parallel()
	s := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/sse", nil)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			events <- sc.Text()
		}
		close(events)
	}()
	var endpoint string
	for endpoint == "" {
		select {
		case l := <-events:
			if d, ok := strings.CutPrefix(l, "data:"); ok {
				endpoint = strings.TrimSpace(d)
			}
		case <-ctx.Done():
			t.Fatal("no endpoint event")
		}
	}
	id := regexp.MustCompile(`sessionId=([^&]+)`).FindStringSubmatch(endpoint)[1]
	msg := s.base + "/message?sessionId=" + id
	code, _, body := do(t, http.MethodPost, msg, map[string]string{"Authorization": "Bearer " + bobToken},
		`{"jsonrpc":"2.0","id":77,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bob","version":"1"}}}`)
	if code != http.StatusNotFound {
		t.Errorf("bob posts to alice's SSE session: %d %s", code, body)
	}
	// Alice's own messages are answered on her stream.
	code, _, _ = do(t, http.MethodPost, msg, map[string]string{"Authorization": "Bearer " + aliceToken},
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"alice","version":"1"}}}`)
	if code/100 != 2 {
		t.Fatalf("alice's initialize: %d", code)
	}
	for {
		select {
		case l := <-events:
			if strings.Contains(l, `"id":77`) {
				t.Fatalf("bob's request was answered on alice's stream: %s", l)
			}
			if strings.Contains(l, `"id":1,`) {
				return
			}
		case <-ctx.Done():
			t.Fatal("alice's initialize was not answered on her stream")
		}
	}
}

// TestStatelessProtocolKeepsPrincipalsApart (issue 10, item 2): requests of
// protocol 2026-07-28 carry no session; bob must neither resolve a token
// alice received nor read her ledger.
func TestStatelessProtocolKeepsPrincipalsApart(t *testing.T) {
	t.Parallel()
	s := start(t)
	call := func(token, method string, id int, params map[string]any) string {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "stateless", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
		name, _ := params["name"].(string)
		if uri, ok := params["uri"].(string); ok {
			name = uri
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		code, _, out := do(t, http.MethodPost, s.base+"/mcp", map[string]string{"Authorization": "Bearer " + token,
			"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name}, string(body))
		if code != 200 {
			t.Fatalf("%s: %d %s", method, code, out)
		}
		return lastMessage(out)
	}
	exec := func(token string, id int, code string) string {
		return call(token, "tools/call", id, map[string]any{"name": "execute_code", "arguments": map[string]any{"code": code}})
	}
	tok := regexp.MustCompile(`⟦email:[0-9a-f]+⟧`).FindString(exec(aliceToken, 1, `({who: "ada@example.com"})`))
	if tok == "" {
		t.Fatal("alice got no token")
	}
	if out := exec(bobToken, 2, fmt.Sprintf(`(await util.echo({text: %q})).text`, tok)); strings.Contains(out, "ada@example.com") || !strings.Contains(out, "token") {
		t.Fatalf("bob resolved alice's token: %s", out)
	}
	if out := call(bobToken, "resources/read", 3, map[string]any{"uri": "codecell://session/ledger"}); !strings.Contains(out, `\"runs\":1,`) {
		t.Fatalf("bob's ledger holds alice's runs: %s", out)
	}
	if out := exec(aliceToken, 4, fmt.Sprintf(`(await util.echo({text: %q})).text`, tok)); !strings.Contains(out, "ada@example.com") {
		// The model sees the value filtered again, as a token; what
		// matters is that the tool received the real value.
		if !strings.Contains(out, tok) {
			t.Fatalf("alice could not use her own token: %s", out)
		}
	}
	s.open(t, bobToken).normal()
}

// TestEveryEndpointChecksHost: a loopback server refuses a foreign Host
// header (DNS rebinding) on every endpoint, /metrics and /healthz too.
func TestEveryEndpointChecksHost(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, path := range []string{"/", "/healthz", "/metrics", "/mcp", "/sse"} {
		req, _ := http.NewRequest(http.MethodGet, s.base+path, nil)
		req.Host = "rebound.example"
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s with Host rebound.example: %d, want 403", path, resp.StatusCode)
		}
	}
	s.open(t, aliceToken).normal()
}
