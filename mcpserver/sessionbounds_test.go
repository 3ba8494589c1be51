package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
)

// TestSessionsOfAPrincipalBounded: a principal's Streamable HTTP sessions
// are bounded by sessions_per_principal; its least recently used one ends
// when it opens one more, and another principal's are untouched — each
// session keeps what its initialize sent, and a principal could open any
// number of them (attack15 I6).
func TestSessionsOfAPrincipalBounded(t *testing.T) {
	t.Parallel()
	srv := newServer(t, mcpserver.Config{
		Auth:     []mcpserver.Token{{Principal: "alice", Token: aliceToken}, {Principal: "bob", Token: bobToken}},
		Sessions: engine.SessionLimits{PerPrincipal: 3},
	})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	url := ts.URL + "/mcp"
	status := func(token, session string) int {
		return post(t, url, map[string]string{"Authorization": "Bearer " + token, "Mcp-Session-Id": session}, callBody(2, "return 1")).StatusCode
	}
	bobs := initSession(t, url, bobToken)
	var alices []string
	for range 3 {
		alices = append(alices, initSession(t, url, aliceToken))
	}
	status(aliceToken, alices[0]) // the first is now the most recently used
	alices = append(alices, initSession(t, url, aliceToken))
	if got := status(aliceToken, alices[1]); got != 404 {
		t.Errorf("alice's least recently used session, past her 3: status %d, want 404", got)
	}
	for _, i := range []int{0, 2, 3} {
		if got := status(aliceToken, alices[i]); got != 200 {
			t.Errorf("alice's session %d: status %d, want 200", i, got)
		}
	}
	if got := status(bobToken, bobs); got != 200 {
		t.Errorf("bob's session: status %d, want 200", got)
	}
}

// TestSubscriptionsBounded: a resources/subscribe of a URI longer than a
// resource's name may be, or past a session's number of subscriptions,
// is refused saying so — each was kept for the session's life (attack15 I5).
func TestSubscriptionsBounded(t *testing.T) {
	t.Parallel()
	ts := securedServer(t, engine.Limits{})
	url := ts.URL + "/mcp"
	session := initSession(t, url, aliceToken)
	alice := map[string]string{"Authorization": "Bearer " + aliceToken, "Mcp-Session-Id": session}
	subscribe := func(id int, uri string) string {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": map[string]any{"uri": uri}})
		// The method spelled with an escape, as JSON allows.
		b := strings.Replace(string(body), `"resources/subscribe"`, `"resources\/subscribe"`, 1)
		resp := post(t, url, alice, b)
		out, _ := io.ReadAll(resp.Body)
		return string(out)
	}
	if got := subscribe(1, "codecell://tools/"+strings.Repeat("a", 5000)); !strings.Contains(got, "at most") {
		t.Errorf("a 5 KB URI: %s", got)
	}
	for i := range 256 {
		if got := subscribe(10+i, fmt.Sprintf("codecell://tools/%d", i)); strings.Contains(got, "error") {
			t.Fatalf("subscription %d: %s", i, got)
		}
	}
	if got := subscribe(300, "codecell://tools/one-more"); !strings.Contains(got, "unsubscribe") {
		t.Errorf("the 257th subscription: %s", got)
	}
	// Subscribing again to a URI the session holds is not one more.
	if got := subscribe(301, "codecell://tools/7"); strings.Contains(got, "error") {
		t.Errorf("a URI subscribed again: %s", got)
	}
}

// TestInitializeBounded: an initialize larger than a client's ever is,
// whose clientInfo the session would keep, is refused saying so
// (attack15 I6).
func TestInitializeBounded(t *testing.T) {
	t.Parallel()
	ts := securedServer(t, engine.Limits{})
	url := ts.URL + "/mcp"
	big := strings.Replace(initBody, `"version":"1"`, `"version":"`+strings.Repeat("9", 100<<10)+`"`, 1)
	resp := post(t, url, map[string]string{"Authorization": "Bearer " + aliceToken}, big)
	out, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(out), "an initialize request is at most") {
		t.Errorf("a 100 KB initialize: %d %.300s", resp.StatusCode, out)
	}
	// A field mcp-go ignores, of a type the bound's own decoding did not
	// expect, does not make the bound look away (attack17 K5).
	for _, extra := range []string{`"uri":1,`, `"uri":{"a":[1]},`, `"uri":null,`} {
		odd := strings.Replace(big, `"params":{`, `"params":{`+extra, 1)
		if odd == big {
			t.Fatal("the initialize has no params to add to")
		}
		resp := post(t, url, map[string]string{"Authorization": "Bearer " + aliceToken}, odd)
		out, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(out), "an initialize request is at most") {
			t.Errorf("a 100 KB initialize with %s: %d %.300s", extra, resp.StatusCode, out)
		}
	}
	deep := strings.Replace(initBody, `"capabilities":{}`, `"capabilities":{"experimental":`+nested(2000)+`}`, 1)
	if deep == initBody || len(deep) > 16<<10 {
		t.Fatalf("the initialize with nested capabilities is %d bytes", len(deep))
	}
	resp = post(t, url, map[string]string{"Authorization": "Bearer " + aliceToken}, deep)
	out, _ = io.ReadAll(resp.Body)
	if !strings.Contains(string(out), "an initialize request has at most 512 JSON values") {
		t.Errorf("an initialize of 2,000 nested capabilities: %d %.300s", resp.StatusCode, out)
	}
	// mcp-go matches an initialize's field names in any case (attack24 R3).
	upper := strings.NewReplacer(`"capabilities"`, `"CAPABILITIES"`, `"clientInfo"`, `"CLIENTINFO"`).Replace(deep)
	resp = post(t, url, map[string]string{"Authorization": "Bearer " + aliceToken}, upper)
	out, _ = io.ReadAll(resp.Body)
	if !strings.Contains(string(out), "an initialize request has at most 512 JSON values") {
		t.Errorf("an initialize of 2,000 nested CAPABILITIES: %d %.300s", resp.StatusCode, out)
	}
	initSession(t, url, aliceToken) // a client's own is served
}

// nested is n objects, each the value of the one around it.
func nested(n int) string {
	return strings.Repeat(`{"a":`, n) + "{}" + strings.Repeat("}", n)
}

// TestModernMetaBounded: from protocol 2026-07-28 on, any request may
// carry the client's identity and capabilities in _meta, and mcp-go
// keeps them on the session as it keeps an initialize's; they are
// bounded as an initialize is, whatever the method (attack22 P4).
func TestModernMetaBounded(t *testing.T) {
	t.Parallel()
	ts := securedServer(t, engine.Limits{})
	send := func(name string, info map[string]any, caps ...any) string {
		t.Helper()
		var capabilities any = map[string]any{}
		if len(caps) > 0 {
			capabilities = caps[0]
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": map[string]any{"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    mcp.ProtocolVersion20260728,
			"io.modelcontextprotocol/clientInfo":         info,
			"io.modelcontextprotocol/clientCapabilities": capabilities,
		}}})
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+mcpserver.PathStreamable, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20260728)
		req.Header.Set("Mcp-Method", "tools/list")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return string(out)
	}
	if out := send("a 100 KB clientInfo", map[string]any{"name": "big", "version": strings.Repeat("9", 100<<10)}); !strings.Contains(out, "clientInfo and clientCapabilities are at most") {
		t.Errorf("a tools/list with a 100 KB clientInfo: %.300s", out)
	}
	// 16 KiB of objects in objects decode to far more than 16 KiB, and
	// mcp-go keeps them decoded (attack23 M1).
	if out := send("nested capabilities", map[string]any{"name": "small", "version": "1"}, json.RawMessage(nested(2000))); !strings.Contains(out, "have at most 512 JSON values") {
		t.Errorf("a tools/list with 2,000 nested capabilities: %.300s", out)
	}
	if out := send("a client's own", map[string]any{"name": "small", "version": "1"}); !strings.Contains(out, "execute_code") {
		t.Errorf("a tools/list with a client's own clientInfo: %.300s", out)
	}
}
