package security

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUpstreamSlotsAreSharedOut (issue 19, medium, the upstream half of
// pool fairness): one principal's four hanging calls held every slot of
// a shared upstream, and the other principals' calls waited until they
// timed out. One principal now holds at most its share of a server's
// slots (max_calls_per_principal; all but a quarter by default).
func TestUpstreamSlotsAreSharedOut(t *testing.T) {
	t.Parallel()
	e := startEvil(t, "max_concurrent_calls = 4", nil)
	alice := e.open(t, aliceToken)
	e.ready(t, alice)
	// Alice's program hangs on four calls at once, in a request of its
	// own that this test abandons.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answer := make(chan string, 1)
	go func() {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": map[string]any{
			"name": "execute_code", "arguments": map[string]any{"code": `await Promise.all([1, 2, 3, 4].map(() => evil.hang({})))`, "timeout_ms": 60000}}})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, alice.url, strings.NewReader(string(body)))
		for k, v := range alice.header() {
			req.Header.Set(k, v)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answer <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answer <- string(b)
	}()
	hangs := func() int {
		b, _ := os.ReadFile(filepath.Join(e.loot, "hangs"))
		return strings.Count(string(b), "hang")
	}
	deadline := time.Now().Add(30 * time.Second)
	for hangs() < 3 {
		if time.Now().After(deadline) {
			select {
			case a := <-answer:
				t.Fatalf("alice's calls did not reach the upstream (%d); her program's answer: %.800s", hangs(), a)
			default:
				t.Fatalf("alice's calls did not reach the upstream (%d) and her program has not answered", hangs())
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Bob's run keeps the default deadline, so that the pool's reserve for
	// runs within it (sandbox.reserved_slots) serves it beside alice's
	// long run: what is under test is the upstream's slots.
	bob := e.open(t, bobToken)
	if rec := bob.run(`await evil.echo({text: "bob's turn"})`); string(rec.Result) != `"bob's turn"` {
		t.Errorf("bob's call while alice's hang: %.600s", rec.raw)
	}
	if n := hangs(); n != 3 {
		t.Errorf("%d of alice's calls reached the upstream, want her share of 3", n)
	}
}
