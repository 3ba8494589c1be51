package security

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestListenStreamsBounded (issue 19, third attack round, M3): protocol
// 2026-07-28's subscriptions/listen keeps a stream open per request,
// outside any session; each holds a descriptor and memory of the server.
// One principal holds at most 4 per session it may have
// (sessions_per_principal): past that bob is refused with 429, and alice
// is served.
func TestListenStreamsBounded(t *testing.T) {
	t.Parallel()
	const sessions = 4 // 16 open requests for bob
	s := start(t, fmt.Sprintf("CODECELL_LIMITS_SESSIONS_PER_PRINCIPAL=%d", sessions))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 100}}
	open, refused := 0, 0
	var firstRefusal string
	var bodies []interface{ Close() error }
	defer func() {
		for _, b := range bodies {
			b.Close()
		}
	}()
	for i := range 4*sessions + 8 {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "subscriptions/listen", "params": map[string]any{
			"notifications": map[string]any{"toolsListChanged": true},
			"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
				"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "x", "version": "1"},
				"io.modelcontextprotocol/clientCapabilities": map[string]any{}}}})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/mcp", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+bobToken)
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("listen %d: %v", i, err)
		}
		if resp.StatusCode != http.StatusOK {
			refused++
			if firstRefusal == "" {
				b := make([]byte, 300)
				n, _ := resp.Body.Read(b)
				firstRefusal = fmt.Sprintf("%d %s", resp.StatusCode, b[:n])
			}
			resp.Body.Close()
			continue
		}
		open++
		bodies = append(bodies, resp.Body)
	}
	t.Logf("bob holds %d listen streams; %d refused: %s", open, refused, firstRefusal)
	if refused == 0 || !strings.HasPrefix(firstRefusal, "429") {
		t.Errorf("one principal holds %d listen streams, none refused with 429 (%s)", open, firstRefusal)
	}
	if open < 4*sessions-2 {
		t.Errorf("only %d streams served before the bound of %d", open, 4*sessions)
	}
	alice := s.open(t, aliceToken)
	alice.normal()
}
