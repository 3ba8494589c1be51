package security

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// TestFilterLinearInFindings (issue 19, attack14 I1): the output filter
// compared each finding of a string with every finding kept before it,
// and each with every token of the string, in the server, after the run's
// deadline and outside its pool slot: a program that returned 2 MiB of
// e-mail addresses (one every 16 bytes) cost 15 s of the server's CPU, 4
// MiB 68 s. The same bytes with a finding every 16 bytes now cost about
// what they cost without one.
func TestFilterLinearInFindings(t *testing.T) {
	t.Parallel()
	s := start(t)
	bob := s.open(t, bobToken)
	pid := s.cmd.Process.Pid
	cost := func(code string) float64 {
		c0 := cpuSeconds(pid)
		if rec := bob.run(code, "timeout_ms", 30000); rec.Status != "ok" {
			t.Fatalf("%s: %.400s", code, rec.raw)
		}
		return cpuSeconds(pid) - c0
	}
	plain := cost(`return "hello world, hi ".repeat(131072)`)
	emails := cost(`return "bob@example.com ".repeat(131072)`)
	forged := cost(`return "\u27e6email:652468a6\u27e7 bob@example.com ".repeat(65536)`)
	t.Logf("2 MiB of text: %.1f s of the server's CPU; of e-mail addresses: %.1f s; 2 MiB of forged tokens and addresses: %.1f s", plain, emails, forged)
	if plain < 0 {
		t.Skip("no /proc here")
	}
	if emails > 4*plain+3 || forged > 4*plain+3 {
		t.Errorf("a result of a finding every 16 bytes cost the server %.1f s of CPU (with forged tokens %.1f s) against %.1f s for text without one", emails, forged, plain)
	}
	bob.normal()
}

// TestForgedTokensHideNothing (issue 19, attack14 I4): the filter took
// any ⟦class:hex⟧ of 8, 16 or 64 hex digits for a token of its own and
// left what was inside alone. A program that wrapped a card number and an
// API key a tool returned in ⟦card:…⟧ and ⟦x:…⟧ gave them to the model
// raw, in its result and its log. Only a token the session minted keeps
// its text; the one a run returned comes back unchanged from the next.
func TestForgedTokensHideNothing(t *testing.T) {
	t.Parallel()
	const card = "4012888888881881"
	const key = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0"
	s := start(t)
	bob := s.open(t, bobToken)
	rec := bob.run(`const r = await util.echo({text: "card ` + card[:4] + ` ` + card[4:8] + ` ` + card[8:12] + ` ` + card[12:] + `, api_key = ` + key + `"});
const n = r.text.match(/\d{4} \d{4} \d{4} \d{4}/)[0].replace(/ /g, "");
const k = r.text.match(/[0-9a-f]{64}/)[0];
console.log("log \u27e6c:" + n + "\u27e7 \u27e6x:" + k + "\u27e7");
return {wrapped: ["\u27e6card:" + n + "\u27e7", "\u27e6x:" + k + "\u27e7", "\u27e6" + "api_key:" + k.slice(0, 16) + "\u27e7"], card: n}`)
	if rec.Status != "ok" {
		t.Fatalf("run: %.500s", rec.raw)
	}
	for _, v := range []string{card, key, key[:16]} {
		if strings.Contains(rec.raw, v) {
			t.Errorf("a value a tool returned reached the model inside a forged token: %.900s", rec.raw)
		}
	}
	// The card's own token, returned by the next run, is left as it is.
	var res struct {
		Card string `json:"card"`
	}
	json.Unmarshal(rec.Result, &res)
	if !regexp.MustCompile(`^⟦card:[0-9a-f]{8}⟧$`).MatchString(res.Card) {
		t.Fatalf("the card is not a token: %.500s", rec.raw)
	}
	again := bob.run(fmt.Sprintf(`console.log(%q); return {card: %q}`, "paid with "+res.Card, res.Card))
	if !strings.Contains(string(again.Result), res.Card) || len(again.Logs) != 1 || again.Logs[0].Message != "paid with "+res.Card {
		t.Errorf("the session's own token changed in the next run: %.600s", again.raw)
	}
	bob.normal()
}

// TestPageItemsBuildNoTree (issue 19, attack14 I3): an items page was
// bounded at filter.max_budget_bytes (256 KiB), but built as a tree of
// about 72 bytes a value on the request's goroutine: 32 reads at once of
// one item of 131,000 zeros grew the server by about 9 MiB a read. The
// page is its items' bytes.
func TestPageItemsBuildNoTree(t *testing.T) {
	t.Parallel()
	s := start(t)
	bob := s.open(t, bobToken)
	pid := s.cmd.Process.Pid
	rec := bob.run(`return [new Array(131000).fill(0)]`)
	uri := regexp.MustCompile(`codecell://results/[A-Za-z0-9_-]+`).FindString(rec.raw)
	if rec.Status != "ok" || uri == "" {
		t.Fatalf("no stored result: %.600s", rec.raw)
	}
	const reads = 32
	sessions := make([]*session, reads/4)
	for i := range sessions {
		sessions[i] = s.open(t, bobToken)
	}
	os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) // resets VmHWM
	before := peakRSS(pid)
	var wg sync.WaitGroup
	sizes := make([]int, reads)
	for i := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ss := sessions[i/4]
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 100 + i, "method": "resources/read", "params": map[string]any{"uri": uri + "/items?count=1"}})
			code, _, out := do(t, http.MethodPost, ss.url, ss.header(), string(body))
			if code == http.StatusOK && strings.Contains(out, `\"count\":1`) {
				sizes[i] = len(out)
			}
		}()
	}
	wg.Wait()
	grow := peakRSS(pid) - before
	t.Logf("%d reads at once of an item of 131,000 zeros: the server grew by %d MiB", reads, grow>>20)
	for i, n := range sizes {
		if n < 262000 {
			t.Fatalf("read %d did not return the item", i)
		}
	}
	if before > 0 && grow > reads*3<<20 {
		t.Errorf("%d reads of a 262 KB item grew the server by %d MiB (%.1f MiB a read): the page is built as a tree", reads, grow>>20, float64(grow)/reads/(1<<20))
	}
	bob.normal()
}

// TestKnownValuesOfOnePrefix (issue 19, attack16 J1): the flow's index
// and the sweep compared, at each position of a result where the first
// bytes of values occur, once a length of the values that share them:
// a program that had util.echo return 250 passwords "aaaaaa" to "a"×255
// and then returned 1 MiB of "a" cost 8 s of the server's CPU after the
// run's deadline (32 s for 4 MiB), and 250 passwords "a"×n+"b" in the
// result with 4 MiB of "a" 11 s in the sweep; the provenance of a tool
// call whose arguments held 512 KiB of "a", after the 250 passwords, 13
// s. Automata find those values in one step a byte: each costs a
// fraction of a second.
func TestKnownValuesOfOnePrefix(t *testing.T) {
	t.Parallel()
	s := start(t)
	bob := s.open(t, bobToken)
	pid := s.cmd.Process.Pid
	cost := func(code, password string) float64 {
		c0 := cpuSeconds(pid)
		if rec := bob.run(code, "timeout_ms", 60000); rec.Status != "ok" {
			t.Fatalf("%.200s: %.400s", code, rec.raw)
		} else if strings.Contains(rec.raw, password) {
			t.Errorf("%.200s: the passwords showed: %.400s", code, rec.raw)
		}
		return cpuSeconds(pid) - c0
	}
	flow := cost(`for (let l = 6; l < 256; l++) await util.echo({text: "x", password: "a".repeat(l)});
return "a".repeat(1 << 20)`, "aaaaaa")
	sweep := cost(`const rows = [];
for (let l = 5; l < 255; l++) rows.push({password: "a".repeat(l) + "b"});
return {rows, text: "a".repeat(4 << 20)}`, "aaaaab")
	args := cost(`for (let l = 6; l < 256; l++) await util.echo({text: "x", password: "a".repeat(l)});
await util.echo({text: "a".repeat(512 << 10)}); return 1`, "aaaaaa")
	t.Logf("250 passwords of one letter echoed, then 1 MiB of it: %.1f s of the server's CPU; 250 in the result with 4 MiB of it: %.1f s; 512 KiB of it in a tool's arguments: %.1f s", flow, sweep, args)
	if flow < 0 {
		t.Skip("no /proc here")
	}
	if flow > 2 || sweep > 2 || args > 2 {
		t.Errorf("values of one prefix cost the server %.1f s of CPU for 1 MiB in the known-value stage (8 s before), %.1f s for 4 MiB in the sweep (11 s before), %.1f s for 512 KiB of a tool's arguments (13 s before)", flow, sweep, args)
	}
}
