package security

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUpstreamResultBytesInFlight (issue 19, a5): each upstream result
// is bounded (max_response_bytes), but a run's concurrent calls each held
// one — twelve results of 15 MiB took codecell from 49 to 281 MiB — and
// so did every run's. A call now reserves its result's bytes before the
// tool is called, from its run's budget and from the server's (of which
// one principal holds three quarters), and gives them back as the result
// is handed on; a call that finds them taken waits.
func TestUpstreamResultBytesInFlight(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// evil's results are up to 1 MiB: a run holds two at once, a
	// principal three. wide's are up to 4 MiB, more than a run may hold.
	e := startEvil(t, fmt.Sprintf("max_response_bytes = %d\n\n[upstream.wide]\ncommand = %q\nenv = { EVIL_UPSTREAM = \"1\" }\nmax_response_bytes = %d\n", mib, self, 4*mib), nil,
		fmt.Sprintf("CODECELL_LIMITS_RESULT_BYTES_IN_FLIGHT=%d", 4*mib), fmt.Sprintf("CODECELL_LIMITS_RESULT_BYTES_IN_FLIGHT_PER_RUN=%d", 2*mib), "--pool", "4")
	alice := e.open(t, aliceToken)
	e.ready(t, alice)

	// Two programs of alice's hang on four calls each, in requests of
	// their own that this test abandons.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answers := make(chan string, 2)
	for id := range 2 {
		go func() {
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 90 + id, "method": "tools/call", "params": map[string]any{
				"name": "execute_code", "arguments": map[string]any{"code": `await Promise.all([1, 2, 3, 4].map(() => evil.hang({})))`, "timeout_ms": 60000}}})
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, alice.url, strings.NewReader(string(body)))
			for k, v := range alice.header() {
				req.Header.Set(k, v)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers <- string(b)
		}()
	}
	hangs := func() int {
		b, _ := os.ReadFile(filepath.Join(e.loot, "hangs"))
		return strings.Count(string(b), "hang")
	}
	deadline := time.Now().Add(30 * time.Second)
	for hangs() < 3 {
		if time.Now().After(deadline) {
			select {
			case a := <-answers:
				t.Fatalf("alice's calls did not reach the upstream (%d); a program's answer: %.800s", hangs(), a)
			default:
				t.Fatalf("alice's calls did not reach the upstream (%d) and her programs have not answered", hangs())
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Bob's call finds the quarter of the server's bytes alice may not
	// take.
	bob := e.open(t, bobToken)
	if rec := bob.run(`await evil.echo({text: "bob's turn"})`); string(rec.Result) != `"bob's turn"` {
		t.Errorf("bob's call while alice's hang: %.600s", rec.raw)
	}
	if n := hangs(); n != 3 {
		t.Errorf("%d of alice's calls (of results up to 1 MiB) reached the upstream, want 3: two per run (2 MiB), three in all (her 3 MiB of the server's 4)", n)
	}

	// A tool whose one result may be more than a run may hold fails at
	// once, saying which limit to change.
	var rec record
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		rec = bob.run(`try { await wide.echo({text: "x"}); return "called" } catch (e) { return e.code + ": " + e.message }`, "timeout_ms", 20000)
		if !strings.Contains(string(rec.Result), "loading") || time.Now().After(deadline) {
			break
		}
	}
	if got := string(rec.Result); !strings.Contains(got, "result_bytes_limit") || !strings.Contains(got, "limits.result_bytes_in_flight_per_run") || !strings.Contains(got, "max_response_bytes") {
		t.Errorf("a call of a tool whose results may be 4 MiB, over the run's 2 MiB: %.600s", rec.raw)
	}
	cancel()
}
