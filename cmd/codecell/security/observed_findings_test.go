package security

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// addressesServer is an upstream MCP server (Streamable HTTP, JSON
// answers) with one read-only tool, get, whose text answer is n distinct
// e-mail addresses, one a line: its argument n, or 400,000 (8 MB); with
// the argument clean, the same bytes without a finding.
func addressesServer(t *testing.T) string {
	t.Helper()
	ts := httptest.NewServer(upstreamHandler(func(method string, params json.RawMessage) string {
		switch method {
		case "initialize":
			return `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"people","version":"1"}}`
		case "tools/list":
			return `{"tools":[{"name":"get","description":"Lists the people.","inputSchema":{"type":"object","properties":{"n":{"type":"integer"}}},"annotations":{"readOnlyHint":true}}]}`
		case "tools/call":
			var call struct {
				Arguments struct {
					N     int  `json:"n"`
					Clean bool `json:"clean"`
				} `json:"arguments"`
			}
			json.Unmarshal(params, &call)
			n := call.Arguments.N
			if n <= 0 {
				n = 400_000
			}
			line := "u%07d@example.com\n"
			if call.Arguments.Clean {
				line = "u%07dxexamplexcom\n" // the same bytes, no finding
			}
			var text strings.Builder
			for i := range n {
				fmt.Fprintf(&text, line, i)
			}
			content, _ := json.Marshal(text.String())
			return `{"content":[{"type":"text","text":` + string(content) + `}]}`
		}
		return ""
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// TestObservedFindingsHeld (issue 19, attack20 N2): a run's data flow
// observes every tool result, and observing one full of findings — each
// detected, collected and indexed — was held by nothing: one run's 8
// calls at once of an upstream tool answering 8 MB of distinct addresses
// took the server from 86 to 840 MiB, and the run succeeded. What an
// observation costs by its findings is now held as they are met, on the
// call's hold of its result's bytes, and what the flow keeps on the
// run's until it ends: each call is refused naming the limit, before the
// program has its result, and the server grows by about what the run may
// hold (limits.result_bytes_in_flight_per_run, 128 MiB), not by what the
// calls' findings cost. A result of a few addresses passes as before.
func TestObservedFindingsHeld(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[upstream.people]\nurl = %q\n", addressesServer(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	const calls = 8
	// grow runs the calls in a server of its own, and returns what the
	// calls answered and how much they grew its peak RSS.
	grow := func(clean bool) (map[string]int, int64) {
		s := start(t, "--config", cfg)
		defer s.cmd.Process.Kill() // and waited for by start's cleanup
		bob := s.open(t, bobToken)
		pid := s.cmd.Process.Pid
		if peakRSS(pid) < 0 {
			t.Skip("no /proc/<pid>/status here")
		}
		var rec record
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			rec = bob.run(`return await people.get({n: 3})`)
			if rec.Status == "ok" || time.Now().After(deadline) {
				break
			}
		}
		if rec.Status != "ok" || !strings.Contains(string(rec.Result), "⟦email:") || strings.Contains(string(rec.Result), "@example.com") {
			t.Fatalf("a result of 3 addresses: %.600s", rec.raw)
		}
		resetPeakRSS(pid)
		before := peakRSS(pid)
		rec = bob.run(fmt.Sprintf(`const seen = {};
const calls = Array.from({length: %d}, () => people.get({clean: %v}).then(v => "answered", e => e.code + ": " + e.message));
for (const a of await Promise.all(calls)) seen[a] = (seen[a] || 0) + 1;
return seen`, calls, clean), "timeout_ms", 60000)
		growth := peakRSS(pid) - before
		if rec.Status != "ok" {
			t.Fatalf("run: %.600s", rec.raw)
		}
		var seen map[string]int
		if err := json.Unmarshal(rec.Result, &seen); err != nil {
			t.Fatalf("result: %v: %.600s", err, rec.raw)
		}
		load, _ := os.ReadFile("/proc/loadavg")
		t.Logf("%d calls of 8 MB (clean %v) in one run: %d answers, peak RSS +%d MiB (load %.5s)", calls, clean, len(seen), growth>>20, load)
		bob.normal()
		return seen, growth
	}
	ctl, ctlGrowth := grow(true)
	if ctl["answered"] != calls {
		t.Fatalf("%d calls of 8 MB without a finding: %v", calls, ctl)
	}
	var growth []int64
	for range 2 {
		seen, g := grow(false)
		growth = append(growth, g)
		for a, n := range seen {
			if !strings.HasPrefix(a, "result_bytes_limit: ") || !strings.Contains(a, "findings") || !strings.Contains(a, "limits.result_bytes_in_flight") {
				t.Errorf("%d of %d calls of 8 MB of addresses: %.400s", n, calls, a)
			}
		}
	}
	// The least of two peaks, beside the same calls without a finding:
	// the Go heap's slack comes and goes. Before: +570 MiB more than
	// without a finding, every call answered. Now what the findings cost
	// is the run's to hold — at most its 128 MiB of results in flight
	// while the matches are found, and the garbage of the refused
	// observations until the next collection (GOGC 100: as much again as
	// what is live) — measured +240 MiB; 3 × 128 MiB is the bar.
	if extra := min(growth[0], growth[1]) - ctlGrowth; extra > 384<<20 {
		t.Errorf("one run's %d calls of 8 MB of distinct addresses grew the server's peak RSS by %d MiB more than the same bytes without a finding: more than three times the 128 MiB a run may hold of results in flight", calls, extra>>20)
	}
}
