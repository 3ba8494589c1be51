package mcpserver_test

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver/engine"
)

// TestStatelessCancelsAreThePrincipals: a notifications/cancelled without a
// session (protocol 2026-07-28) cancels the sender's own request of that
// id, never another principal's (attack9 D13: mcp-go keys cancellations by
// session and id, and stateless requests all have the session "").
func TestStatelessCancelsAreThePrincipals(t *testing.T) {
	t.Parallel()
	ts := securedServer(t, engine.Limits{})
	url := ts.URL + "/mcp"
	meta := map[string]any{
		mcp.MetaKeyProtocolVersion:    mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientInfo:         map[string]any{"name": "t", "version": "1"},
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}
	headers := func(token, method, name string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + token, mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728,
			mcp.HeaderMethod: method, mcp.HeaderName: name}
	}
	// cancelAs sends a cancellation whose method is spelled as given
	// (JSON may escape any character of it), with extra headers.
	cancelAs := func(token string, id any, method string, extra map[string]string) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "METHOD",
			"params": map[string]any{"requestId": id, "_meta": meta}})
		body := strings.Replace(string(b), `"METHOD"`, `"`+method+`"`, 1)
		h := headers(token, string(mcp.MethodNotificationCancelled), "")
		for k, v := range extra {
			h[k] = v
		}
		if resp := post(t, url, h, body); resp.StatusCode != 202 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("cancel: %d %s", resp.StatusCode, b)
		}
	}
	cancel := func(token string, id any) { cancelAs(token, id, string(mcp.MethodNotificationCancelled), nil) }
	done := make(chan string, 1)
	go func() {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{
			"name": "execute_code", "arguments": map[string]any{"code": "for (;;) {}", "timeout_ms": 30000}, "_meta": meta}})
		resp := post(t, url, headers(aliceToken, "tools/call", "execute_code"), string(body))
		b, _ := io.ReadAll(resp.Body)
		done <- string(b)
	}()
	// Bob's cancellations, of every id and spelling, end nothing of alice's.
	for _, id := range []any{7, 7.0, "7", 0, 1} {
		cancel(bobToken, id)
		// The same method in JSON's escapes, and with a session header
		// mcp-go ignores on a 2026-07-28 message (attack10 E2).
		cancelAs(bobToken, id, `notifications\/cancelled`, nil)
		cancelAs(bobToken, id, `notifications\u002fcancelled`, nil)
		cancelAs(bobToken, id, string(mcp.MethodNotificationCancelled), map[string]string{"Mcp-Session-Id": "bob-says-so"})
	}
	select {
	case out := <-done:
		t.Fatalf("alice's run ended on bob's cancellations: %.300s", out)
	case <-time.After(500 * time.Millisecond):
	}
	// Alice's own cancellation ends her run. The run may not have been
	// read yet: cancel until it answers.
	for {
		cancel(aliceToken, 7)
		select {
		case out := <-done:
			// A cancelled request is not answered (or answered as
			// cancelled), never as a run that reached its deadline.
			if out != "" && !strings.Contains(out, `canceled`) {
				t.Fatalf("alice's run after her cancellation: %.300s", out)
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}
