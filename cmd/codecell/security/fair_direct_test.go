package security

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// denseCallServer is an upstream MCP server (Streamable HTTP, JSON
// answers) whose one tool, get, answers structured content of about n
// bytes of empty objects.
func denseCallServer(t *testing.T, n int) string {
	t.Helper()
	dense := `{"v":` + emptyObjects(n/3) + `}`
	ts := httptest.NewServer(upstreamHandler(func(method string, _ json.RawMessage) string {
		switch method {
		case "initialize":
			return `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"dense","version":"1"}}`
		case "tools/list":
			return `{"tools":[{"name":"get","description":"Get.","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			return `{"content":[{"type":"text","text":"ok"}],"structuredContent":` + dense + `}`
		}
		return ""
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// TestDirectCallsFilterWithinTheHold (issue 19, attack10 "probed and
// held"): in direct mode (--expose both) a call's result was held in the
// results in flight only while the gate's call ran, then filtered with
// nothing held: bob's 12 direct calls at once of a tool answering 2.5 MB
// of empty objects (under the per-run bound) grew the server's peak RSS
// by 750 MiB. The bytes are now held through the filter, so the calls
// filter as few at a time as their holds allow; every call is answered,
// and alice's runs go on meanwhile.
//
// The hold itself is tested where it lives, by what is held rather than
// by the server's RSS: engine's TestDirectCallHeldUntilAnswered (held
// through the filter) and TestDirectCallHoldCoversItsPeak (the hold
// covers the call's live heap at its peak). The RSS this test logs was
// no bar: 75–146 MiB past calls one at a time after the fix, 155–441 MiB
// before it, on a loaded machine — too narrow a margin on one side.
func TestDirectCallsFilterWithinTheHold(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[upstream.dense]\nurl = %q\n", denseCallServer(t, 5<<19))), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, "--config", cfg, "--expose", "both")
	bob, alice := s.open(t, bobToken), s.open(t, aliceToken)
	call := func(ctx context.Context, id int) string {
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": "dense__get", "arguments": map[string]any{}}})
		code, out, err := post(ctx, bob.url, bob.header(), string(body))
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%d %s", code, lastMessage(out))
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		got := call(t.Context(), 1)
		if strings.Contains(got, `"isError":false`) || !strings.Contains(got, `"isError"`) && strings.Contains(got, `"content"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("one direct call: %.600s", got)
		}
	}
	pid := s.cmd.Process.Pid
	first := peakRSS(pid)
	// One call at a time first: what one call takes at its peak.
	for i := range 3 {
		if got := call(t.Context(), 2+i); !strings.Contains(got, `"content"`) {
			t.Fatalf("a direct call: %.600s", got)
		}
	}
	before := peakRSS(pid)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	answers := make([]string, 12)
	for i := range answers {
		wg.Go(func() { answers[i] = call(ctx, 10+i) })
	}
	// What alice sees meanwhile: a run of 1+1 at a time, until bob's
	// calls are answered.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var slowest time.Duration
	runs := 0
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		default:
			at := time.Now()
			if rec := alice.run(`1+1`); rec.Status != "ok" || string(rec.Result) != "2" {
				t.Errorf("alice's run while bob's direct calls were in flight: %.400s", rec.raw)
			}
			slowest = max(slowest, time.Since(at))
			runs++
			time.Sleep(100 * time.Millisecond) // within alice's rate limit
		}
	}
	after := peakRSS(pid)
	for _, got := range answers {
		if !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"content"`) {
			t.Errorf("one of 12 direct calls: %.600s", got)
			break
		}
	}
	t.Logf("3 direct calls of 2.5 MB one at a time: peak RSS %d → %d MiB; then 12 at once: → %d MiB; alice's %d runs of 1+1 meanwhile, the slowest %v (load %s)",
		first>>20, before>>20, after>>20, runs, slowest.Round(time.Millisecond), loadAverage())
	bob.normal()
}

// loadAverage is the machine's load average over the last minute, as
// /proc/loadavg says it, for a test's log.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}
