package security

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// TestSkillsListReadsAPage (issue 19, attack14 I2): every skills.list
// read every published skill of every owner, code included, and every
// skills.publish every snapshot again, on the caller's goroutine and
// outside the results in flight: a publisher's 400 skills of 99 KB were
// 40 MB read and decoded per call, and a run may make 32 calls at once
// (two such runs grew the server by 244 MiB and took 3.9 s of its CPU;
// now 18 MiB and 0.2 s, pages of 500 included). A list now reads a page
// of names and descriptions — at most 100 skills by default, next saying
// where the following page starts — and a publish the one snapshot it
// changed.
func TestSkillsListReadsAPage(t *testing.T) {
	t.Parallel()
	const n = 400
	s := start(t)
	pid := s.cmd.Process.Pid
	bob := s.open(t, bobToken)
	for from := 0; from < n; from += 100 {
		code := fmt.Sprintf(`const code = "return " + JSON.stringify("x".repeat(99000)) + ";";
for (let i = %d; i < %d; i++) { const name = "big_" + String(i).padStart(3, "0"); await skills.save({name, description: "Bob's " + name + ".", code}); await skills.publish({name}); }
return "ok"`, from, from+100)
		if rec := bob.run(code, "timeout_ms", 60000); rec.Status != "ok" {
			t.Fatalf("bob's skills: %.400s", rec.raw)
		}
	}
	alice := s.open(t, aliceToken)
	// One page, and the next after it.
	rec := alice.run(`const p = await skills.list(); const q = await skills.list({after: p.next}); return [p.skills.length, p.skills[0].name, p.skills[0].owner, p.next, q.skills[0].name]`)
	if string(rec.Result) != `[100,"big_000","bob","big_099","big_100"]` {
		t.Fatalf("alice's first pages: %.600s", rec.raw)
	}

	for _, c := range []struct{ name, code string }{
		{"list", `await Promise.all(Array.from({length: 32}, () => skills.list({limit: 500}).then(p => p.skills.length))); return 1`},
		{"publish", `await Promise.all(Array.from({length: 32}, () => skills.publish({name: "big_000"}).then(() => 1))); return 1`},
	} {
		// VmHWM from now on: the peak of these calls alone.
		os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
		before, cpu := peakRSS(pid), cpuSeconds(pid)
		var wg sync.WaitGroup
		for _, ss := range []*session{alice, bob} {
			if c.name == "publish" && ss == alice {
				continue // only bob may publish his skills
			}
			wg.Go(func() {
				if rec := ss.run(c.code, "timeout_ms", 60000); rec.Status != "ok" {
					t.Errorf("%s: %.400s", c.name, rec.raw)
				}
			})
		}
		wg.Wait()
		after := peakRSS(pid)
		t.Logf("%s: 32 calls at once in each run: peak RSS %d → %d MiB, server CPU +%.1f s", c.name, before>>20, after>>20, cpuSeconds(pid)-cpu)
		if before > 0 && after-before > 128<<20 {
			t.Errorf("%s: 32 calls at once grew the server by %d MiB: each read every published skill's code", c.name, (after-before)>>20)
		}
	}
	// A page of 500 holds what its descriptions' bytes allow: all 400.
	rec = alice.run(`const p = await skills.list({limit: 500}); return [p.skills.length, p.next ?? null]`)
	var got []any
	if json.Unmarshal(rec.Result, &got) != nil || fmt.Sprint(got) != "[400 <nil>]" {
		t.Errorf("a page of 500: %.400s", rec.raw)
	}
	if rec := alice.run(`await skills.list({limit: 5000})`); rec.Status != "error" || !strings.Contains(rec.raw, "limit") {
		t.Errorf("a limit past 500: %.400s", rec.raw)
	}
	alice.normal()
}
