package security

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDirectCallsNeverWaitOnEachOther (issue 19, sec19): a call held
// its result's bound (the source's max_response_bytes, 8 MiB here) of
// its principal's share of the results in flight while it waited for one
// of the upstream's slots (max_calls_per_principal, 12), and the calls
// that had the slots waited, to hold what their 2.5 MB results decode
// into (~120 MB), for the bytes the others held: bob's 24 direct calls at
// once all ran into their 60 s deadline. A call now gives back what it
// holds while it waits for a slot (tools.SlotWait) and takes it back
// once it has one: every call is answered.
func TestDirectCallsNeverWaitOnEachOther(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[upstream.dense]\nurl = %q\nmax_response_bytes = 8388608\n", denseCallServer(t, 5<<19))), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, "--config", cfg, "--expose", "both")
	bob := s.open(t, bobToken)
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
		if strings.Contains(got, `"content"`) && !strings.Contains(got, `"isError":true`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("one direct call: %.600s", got)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	answers := make([]string, 24)
	for i := range answers {
		wg.Go(func() { answers[i] = call(ctx, 10+i) })
	}
	wg.Wait()
	for i, got := range answers {
		if !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"content"`) || strings.Contains(got, `"isError":true`) {
			t.Errorf("direct call %d of 24 at once: %.600s", i, got)
		}
	}
}
