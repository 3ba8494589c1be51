package security

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWorkspaceReadsHeld (issue 19, attack14 I6): a workspace file read
// as a resource holds, of its principal's share of the results in
// flight, what the read takes, as a stored result's read does. Read,
// filtered and encoded with nothing held, 64 reads at once of an 8 MB
// file grew the server by 398–686 MiB.
func TestWorkspaceReadsHeld(t *testing.T) {
	t.Parallel()
	s := start(t)
	bob := s.open(t, bobToken)
	if rec := bob.run(`await workspace.write({path: "big.txt", data: "hello world, hi ".repeat(500000)}); return 1`); rec.Status != "ok" {
		t.Fatalf("write: %.400s", rec.raw)
	}
	pid := s.cmd.Process.Pid
	before := peakRSS(pid)
	if before < 0 {
		t.Skip("no VmHWM in /proc/<pid>/status to measure memory")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": map[string]any{"uri": "codecell://workspace/big.txt"}})
	var wg sync.WaitGroup
	answers := make([]string, 64)
	for i := range answers {
		wg.Go(func() {
			code, out, err := post(ctx, bob.url, bob.header(), string(body))
			if err != nil {
				answers[i] = err.Error()
				return
			}
			answers[i] = fmt.Sprintf("%d %.200s", code, lastMessage(out))
		})
	}
	wg.Wait()
	after := peakRSS(pid)
	read := 0
	for _, a := range answers {
		if strings.Contains(a, `"contents"`) {
			read++
		}
	}
	t.Logf("64 reads at once of an 8 MB workspace file: %d answered, peak RSS %d → %d MiB (load %s)", read, before>>20, after>>20, loadAverage())
	if read == 0 {
		t.Errorf("no read answered: %.400s", answers[0])
	}
	if grow := after - before; grow > 256<<20 {
		t.Errorf("64 reads of an 8 MB workspace file grew the server by %d MiB", grow>>20)
	}
	bob.normal()
}
