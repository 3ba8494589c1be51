package security

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

// peakMiB is the peak resident memory of pid in MiB (VmHWM).
func peakMiB(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb >> 10
		}
	}
	return 0
}

// utf16LE is s in UTF-16LE with its byte order mark.
func utf16LE(s string) string {
	b := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return string(b)
}

// TestOpenAPIDocumentCopies (issue 19, attack15 I1, I2): the document an
// [openapi] source is configured with took the server down by copies of
// what it says once. A YAML alias is a whole copy of its anchor's value
// in the JSON the document becomes: 1 MB of YAML of a 1 MiB string and
// a hundred aliases of it took the server's peak to 479 MiB. A parameter
// of components/parameters is copied into every operation that uses it,
// its description whole: one of 1 MiB used by a hundred operations took
// it to 727 MiB, kept. Now the aliases are refused, saying why, and the
// parameter's operations load holding a short copy of the description;
// either way the server stays within a few tens of MiB of the same
// document without the long string — in UTF-16 too (attack22 P1: 400
// aliases took the server to 1,531 MiB). A mapping that holds a key
// twice is refused, naming it, at the cost of a lookup a key, and a
// JSON description is not decoded as YAML (attack26 T1).
func TestOpenAPIDocumentCopies(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("A", 1<<20)
	aliases := func(s string, n int) string {
		var b strings.Builder
		b.WriteString("openapi: 3.0.3\ninfo: {title: evil, version: '1'}\npaths:\n  /op0:\n    get:\n      operationId: op0\n      responses: {'200': {description: ok}}\n")
		fmt.Fprintf(&b, "x-pad: &s %q\nx-bomb: [%s]\n", s, strings.TrimSuffix(strings.Repeat("*s, ", n), ", "))
		return b.String()
	}
	shared := func(desc string, n int) string {
		var b strings.Builder
		fmt.Fprintf(&b, `{"openapi":"3.0.3","info":{"title":"evil","version":"1"},"components":{"parameters":{"P":{"name":"q","in":"query","schema":{"type":"string"},"description":%q}}},"paths":{`, desc)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"/op%d":{"get":{"operationId":"op%d","parameters":[{"$ref":"#/components/parameters/P"}],"responses":{"200":{"description":"ok"}}}}`, i, i)
		}
		b.WriteString("}}")
		return b.String()
	}
	// attack26 T1: yaml.v3's decoder kept an error string for each pair
	// of equal keys in a mapping; 8,000 copies of one key (64 KB) took
	// the server to 2 GiB and more.
	keys := func(n int, same bool) string {
		var b strings.Builder
		b.WriteString("openapi: 3.0.3\ninfo: {title: evil, version: '1'}\npaths:\n  /op0:\n    get:\n      operationId: op0\n      responses: {'200': {description: ok}}\nx-pad:\n")
		for i := range n {
			if same {
				i = 0
			}
			fmt.Fprintf(&b, "  k%d: ''\n", i)
		}
		return b.String()
	}
	// The same through JSON: a description that does not decode as
	// OpenAPI was decoded again as YAML by kin-openapi's loader.
	jsonKeys := func(n int) string {
		return `{"openapi":"3.0.3","info":{"title":"evil","version":"1"},"paths":{"/op0":{"get":{"operationId":"op0","responses":{"200":{"description":"ok"}}}}},"servers":[5],"x-pad":{` +
			strings.TrimSuffix(strings.Repeat(`"k0":"",`, n), ",") + "}}"
	}
	for _, c := range []struct {
		name, file      string
		control, attack string
		want            string // what a call of op0 returns after the attack's load
	}{
		{"yaml aliases", "evil.yaml", aliases("short", 100), aliases(long, 100), "YAML aliases (100 of them)"},
		// attack22 P1: the alias count once ran only on text whose bytes
		// could hold an anchor, and in UTF-16 every '&' follows a NUL.
		{"yaml aliases in utf-16", "evil.yaml", utf16LE(aliases("short", 100)), utf16LE(aliases(long, 100)), "YAML aliases (100 of them)"},
		{"yaml duplicate keys", "evil.yaml", keys(5000, false), keys(5000, true), `mapping key \"k0\" is already defined at line 9`},
		{"json duplicate keys", "evil.json", jsonKeys(1), jsonKeys(5000), "cannot unmarshal number into value of type openapi3.Server"},
		{"shared parameter", "evil.json", shared("short", 100), shared(long, 100), "unreachable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var peaks [2]int
			for i, doc := range []string{c.control, c.attack} {
				dir := t.TempDir()
				spec := filepath.Join(dir, c.file)
				os.WriteFile(spec, []byte(doc), 0o600)
				cfg := filepath.Join(dir, "config.toml")
				os.WriteFile(cfg, []byte(fmt.Sprintf("[openapi.evil]\nspec = %q\nbase_url = \"http://127.0.0.1:9\"\n", spec)), 0o600)
				s := start(t, "--config", cfg)
				pid := s.cmd.Process.Pid
				alice := s.open(t, aliceToken)
				deadline := time.Now().Add(90 * time.Second)
				var got string
				for {
					rec := alice.run(`try { await evil.op0({}); return "called" } catch (e) { return e.code + ": " + String(e.message).slice(0, 400) }`, "timeout_ms", 20000)
					got = string(rec.Result)
					if rec.Status == "ok" && !strings.HasPrefix(got, `"loading`) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("the source never loaded: %.600s\n%s", rec.raw, s.stderr.String())
					}
					time.Sleep(300 * time.Millisecond)
				}
				peaks[i] = peakMiB(pid)
				t.Logf("%d-byte document: op0 %.300s; peak RSS %d MiB, RSS %d MiB", len(doc), got, peaks[i], rssMiB(pid))
				if i == 1 && !strings.Contains(got, c.want) {
					t.Errorf("op0 after loading the attack's document: %s, want %q", got, c.want)
				}
				alice.normal()
				s.cmd.Process.Kill()
			}
			if peaks[1] > peaks[0]+64 {
				t.Errorf("the attack's document took the server's peak to %d MiB, the control's %d MiB", peaks[1], peaks[0])
			}
		})
	}
}
