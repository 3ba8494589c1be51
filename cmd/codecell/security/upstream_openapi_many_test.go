package security

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenAPIManyOperations (issue 19, attack15 M1): a description of
// 170,000 trivial operations (14 MB, within every bound of a document)
// made a tool of each, ~6 KiB kept apiece: the server held 1.1 GiB once
// loaded and searched, and each principal's first search made the
// search index of its own view again, 5.8 s of CPU. A source registers
// at most max_operations (30,000 by default), saying so, and the search
// index is made once for the catalogue: a second principal's first
// search (bob, who has a skill of his own and so a view of his own)
// costs a small part of the first's.
func TestOpenAPIManyOperations(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"openapi":"3.0.3","info":{"title":"many","version":"1"},"paths":{`)
	const n = 170_000
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"/o%d":{"get":{"operationId":"o%d","responses":{"200":{"description":"ok"}}}}`, i, i)
	}
	b.WriteString("}}")
	dir := t.TempDir()
	spec := filepath.Join(dir, "many.json")
	os.WriteFile(spec, []byte(b.String()), 0o600)
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[openapi.many]\nspec = %q\nbase_url = \"http://127.0.0.1:9\"\n", spec)), 0o600)
	s := start(t, "--config", cfg)
	pid := s.cmd.Process.Pid
	alice, bob := s.open(t, aliceToken), s.open(t, bobToken)
	deadline := time.Now().Add(180 * time.Second)
	for {
		rec := alice.run(`try { await many.o0({}); return "called" } catch (e) { return e.code + ": " + String(e.message).slice(0, 300) }`, "timeout_ms", 20000)
		if rec.Status == "ok" && !strings.HasPrefix(string(rec.Result), `"loading`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the source never loaded: %.600s\n%s", rec.raw, s.stderr.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
	if rec := bob.run(`await skills.save({name: "flip", description: "Flip the board.", code: "return 1"}); return "saved"`, "timeout_ms", 60000); rec.Status != "ok" {
		t.Fatalf("bob's skill: %.400s", rec.raw)
	}
	loaded := peakMiB(pid)
	search := func(ss *session, q string) (float64, string) {
		c0 := cpuSeconds(pid)
		out := ss.search(q)
		return cpuSeconds(pid) - c0, out
	}
	aliceFirst, _ := search(alice, "get the thing")
	bobFirst, out := search(bob, "flip the board")
	aliceWarm, _ := search(alice, "get another thing")
	manifest := alice.readTool("/manifest.json")
	t.Logf("%d operations, %d bytes: peak RSS %d MiB once loaded, %d MiB after the searches, RSS %d MiB; CPU of alice's first search %.2f s, bob's first %.2f s, alice's next %.2f s",
		n, b.Len(), loaded, peakMiB(pid), rssMiB(pid), aliceFirst, bobFirst, aliceWarm)
	if !strings.Contains(out, "skills.flip") {
		t.Errorf("bob's search: %.300s", out)
	}
	if !strings.Contains(manifest, "140000 of its operations left out") || !strings.Contains(manifest, "max_operations") {
		t.Errorf("the manifest does not say operations were left out: %.600s", manifest)
	}
	if !strings.Contains(s.stderr.String(), "max_operations") {
		t.Errorf("no warning names max_operations")
	}
	// Parsing the document is transient (its JSON values bound it); what
	// the server keeps is its tools, each principal's tree and search.
	if r := rssMiB(pid); r > 600 {
		t.Errorf("a %d-byte description of %d operations left the server holding %d MiB", b.Len(), n, r)
	}
	if bobFirst > max(aliceFirst/4, 0.25) {
		t.Errorf("bob's first search cost %.2f s of CPU, alice's %.2f s: the index was made again for his view", bobFirst, aliceFirst)
	}
}
