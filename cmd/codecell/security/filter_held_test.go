package security

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// resetPeakRSS resets pid's peak RSS (VmHWM) to its RSS now, where Linux
// allows it.
func resetPeakRSS(pid int) {
	os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// What the server filters of what a program sends it is held before it
// is filtered, and what costs nothing to check comes first (issue 19,
// attack18 K1, K7). Each test measures the server's peak RSS and CPU
// around one principal's run.

// TestLLMArgumentsCheckedBeforeFiltered (K1): one run, 30 llm.call at
// once of 1.6 MB of distinct e-mail addresses each, then 30 of 0.85 MB,
// then 10 llm.classify of an item of 1.2 MB of addresses and 10 of an
// array of 200,000 numbers, from a client that cannot sample. Every prompt and item was filtered — a finding, a
// token, a vault entry for each address; a tree for each item — before
// anything was checked, held by nothing: the server grew by 2 GiB and
// spent 17 s of CPU, to answer capability_missing. A prompt or items of
// more than four response budgets are refused for their size; smaller
// ones are answered capability_missing before they are filtered.
func TestLLMArgumentsCheckedBeforeFiltered(t *testing.T) {
	t.Parallel()
	s := start(t)
	bob := s.open(t, bobToken)
	pid := s.cmd.Process.Pid
	if peakRSS(pid) < 0 {
		t.Skip("no /proc/<pid>/status here")
	}
	if rec := bob.run(`return 1`); rec.Status != "ok" {
		t.Fatalf("warm-up: %.300s", rec.raw)
	}
	before, cpu0 := peakRSS(pid), cpuSeconds(pid)
	rec := bob.run(`const addresses = n => Array.from({length: n}, (_, i) => "u" + i + "@example.com").join(" ");
const codes = async calls => {
	const seen = {};
	for (const r of await Promise.allSettled(calls)) {
		const a = r.status === "rejected" ? r.reason.code + ": " + r.reason.message.slice(0, 160) : "answered";
		seen[a] = (seen[a] || 0) + 1;
	}
	return seen;
};
const big = addresses(100000), under = addresses(50000);
return {
	call: await codes(Array.from({length: 30}, (_, k) => llm.call({prompt: k + big}))),
	callUnder: await codes(Array.from({length: 30}, (_, k) => llm.call({prompt: k + under}))),
	classify: await codes(Array.from({length: 10}, (_, k) => llm.classify({items: [k + big.slice(0, 1200000)], labels: ["a", "b"]}))),
	classifyUnder: await codes(Array.from({length: 10}, (_, k) => llm.classify({items: [new Array(200000).fill(k)], labels: ["a", "b"]}))),
}`, "timeout_ms", 60000)
	after, cpu := peakRSS(pid), cpuSeconds(pid)-cpu0
	t.Logf("80 llm calls of 0.4–1.6 MB: %s; peak RSS %d → %d MiB, %.1f s of the server's CPU", rec.Status, before>>20, after>>20, cpu)
	// Before: +2.0 GiB and 17 s of CPU for the first 30 calls alone;
	// after, 250 MiB (the arguments in flight) and 2 s.
	if after-before > 640<<20 {
		t.Errorf("80 llm calls refused before they were sent grew the server's peak RSS by %d MiB", (after-before)>>20)
	}
	if cpu > 8 {
		t.Errorf("80 llm calls refused before they were sent cost the server %.1f s of CPU", cpu)
	}
	if rec.Status != "ok" {
		t.Fatalf("run: %.600s", rec.raw)
	}
	var got map[string]map[string]int
	if err := json.Unmarshal(rec.Result, &got); err != nil {
		t.Fatalf("result: %v: %.600s", err, rec.raw)
	}
	want := map[string]string{
		"call":          "invalid_arguments: llm.call: the prompt (system prompt and messages) is 1.8 MiB, more than the 1.0 MiB a prompt may be (4 × filter.max_budget_bytes)",
		"callUnder":     "capability_missing: ",
		"classify":      "invalid_arguments: llm.classify: the items are 1.1 MiB, more than the 1.0 MiB a prompt may be (4 × filter.max_budget_bytes)",
		"classifyUnder": "capability_missing: ",
	}
	for k, w := range want {
		if len(got[k]) != 1 {
			t.Errorf("%s: %v, want every call %q", k, got[k], w)
		}
		for g := range got[k] {
			if !strings.HasPrefix(g, w) {
				t.Errorf("%s: %v, want every call %q", k, got[k], w)
			}
		}
	}
	bob.normal()
}

// TestOutputFindingsHeld (K7): one run returns 16 MB of distinct e-mail
// addresses as one string — one value, held as three copies of its bytes
// (48 MiB) — and the filter took a match, a token, a vault entry and a
// replacement for each: the server grew by 1 GiB. The findings are held
// as the filter meets them; the run fails with result_too_large naming
// them, and an output of a few thousand addresses passes as it did.
func TestOutputFindingsHeld(t *testing.T) {
	t.Parallel()
	s := start(t)
	bob := s.open(t, bobToken)
	pid := s.cmd.Process.Pid
	if peakRSS(pid) < 0 {
		t.Skip("no /proc/<pid>/status here")
	}
	if rec := bob.run(`return Array.from({length: 5000}, (_, i) => "u" + i + "@example.com").join(" ")`); rec.Status != "ok" || !strings.Contains(string(rec.Result), "⟦email:") {
		t.Fatalf("an output of 5,000 addresses: %.300s", rec.raw)
	}
	grow := func(unit string) (record, int64, float64) {
		resetPeakRSS(pid)
		before, cpu0 := peakRSS(pid), cpuSeconds(pid)
		rec := bob.run(`let s = ""; for (let k = 0; k < 10; k++) s += Array.from({length: 100000}, (_, i) => `+unit+`).join(" ") + " "; return s`, "timeout_ms", 60000)
		return rec, peakRSS(pid) - before, cpuSeconds(pid) - cpu0
	}
	// The same bytes without a finding: what the sandbox's heap and the
	// output's copies take.
	ctl, ctlGrowth, ctlCPU := grow(`"u" + (k * 100000 + i) + "xexamplexcom"`)
	rec, growth, cpu := grow(`"u" + (k * 100000 + i) + "@example.com"`)
	t.Logf("16 MB of distinct addresses: %s, peak RSS +%d MiB, %.1f s of the server's CPU; without a finding: %s, +%d MiB, %.1f s", rec.Status, growth>>20, cpu, ctl.Status, ctlGrowth>>20, ctlCPU)
	if ctl.Status != "ok" {
		t.Fatalf("16 MB without a finding: %.600s", ctl.raw)
	}
	if rec.Error == nil || rec.Error.Kind != "result_too_large" || !strings.Contains(rec.Error.Message, "findings") || strings.Contains(rec.raw, "@example.com") {
		t.Errorf("16 MB of distinct addresses: %.600s", rec.raw)
	}
	// Before: +1.0 GiB beside the control's +130 MiB.
	if growth-ctlGrowth > 384<<20 {
		t.Errorf("one run's output of 16 MB of addresses grew the server's peak RSS by %d MiB, %d MiB more than without a finding", growth>>20, (growth-ctlGrowth)>>20)
	}
	bob.normal()
}
