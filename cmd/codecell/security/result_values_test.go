package security

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What a result decodes into is in proportion to its JSON values, not its
// bytes (issue 19, attack9 D5–D7): 15 MB of [{},{},…] took 32 times its
// bytes in the server while it was decoded and filtered, and a run's
// eight such calls took it to 3.9 GiB. Every result — an API's response,
// an upstream's, a built-in's — is held in the results in flight as its
// bytes plus 128 a value, counted before it is decoded; one that cannot
// be is refused, naming the bound.

// emptyObjects is a JSON array of n empty objects.
func emptyObjects(n int) string {
	return "[" + strings.Repeat("{},", n-1) + "{}]"
}

// TestAPIResponseValuesHeld: an API answers 15 MB of empty objects
// (five million values, under max_response_bytes); the call fails at once
// with result_bytes_limit, and a response of a few values still passes.
func TestAPIResponseValuesHeld(t *testing.T) {
	t.Parallel()
	dense := emptyObjects(5 << 20)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/few" {
			w.Write([]byte(emptyObjects(3)))
			return
		}
		w.Write([]byte(dense))
	}))
	t.Cleanup(api.Close)
	dir := t.TempDir()
	spec := filepath.Join(dir, "vals.json")
	op := func(id string) string {
		return `{"get":{"operationId":"` + id + `","responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"array","items":{"type":"object"}}}}}}}}`
	}
	os.WriteFile(spec, []byte(`{"openapi":"3.0.3","info":{"title":"vals","version":"1"},"paths":{"/things":`+op("get_things")+`,"/few":`+op("get_few")+`}}`), 0o600)
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[openapi.vals]\nspec = %q\nbase_url = %q\n", spec, api.URL)), 0o600)
	s := start(t, "--config", cfg)
	bob := s.open(t, bobToken)
	var rec record
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		rec = bob.run(`try { return (await vals.get_few()).length } catch (e) { return e.code + ": " + e.message }`, "timeout_ms", 20000)
		if !strings.Contains(string(rec.Result), "loading") || time.Now().After(deadline) {
			break
		}
	}
	if string(rec.Result) != "3" {
		t.Fatalf("a response of three objects: %.600s", rec.raw)
	}
	rec = bob.run(`const rs = await Promise.allSettled(Array.from({length: 8}, () => vals.get_things()));
		return rs.map(r => r.status == "rejected" ? r.reason.code + ": " + r.reason.message : "fulfilled")`, "timeout_ms", 60000)
	got := string(rec.Result)
	if strings.Count(got, "result_bytes_limit") != 8 || !strings.Contains(got, "JSON value") || !strings.Contains(got, "limits.result_bytes_in_flight_per_run") {
		t.Errorf("eight calls of an API answering 15 MB of empty objects: %.1200s", rec.raw)
	}
	bob.normal()
}

// TestUpstreamResultValuesHeld: the same as an upstream MCP server's
// structuredContent.
func TestUpstreamResultValuesHeld(t *testing.T) {
	t.Parallel()
	e := startEvil(t, "", nil)
	alice := e.open(t, aliceToken)
	e.ready(t, alice)
	rec := alice.run(`try { return (await evil.values({n: 3})).v.length } catch (e) { return e.code + ": " + e.message }`)
	if string(rec.Result) != "3" {
		t.Fatalf("a result of three objects: %.600s", rec.raw)
	}
	rec = alice.run(`const rs = await Promise.allSettled(Array.from({length: 8}, () => evil.values({n: 5000000})));
		return rs.map(r => r.status == "rejected" ? r.reason.code + ": " + r.reason.message : "fulfilled")`, "timeout_ms", 60000)
	if got := string(rec.Result); strings.Count(got, "result_bytes_limit") != 8 || !strings.Contains(got, "JSON value") {
		t.Errorf("eight calls of an upstream answering 15 MB of empty objects: %.1200s", rec.raw)
	}
	alice.normal()
}

// TestBuiltinResultsHeld: built-in tools' results are held too. With a
// run's results in flight bounded at 32 MiB, cache.get of a cached
// array of 500,000 numbers (1 MB, 64 MB once decoded) is refused, and of
// a small value is not. So is cache.set of that array: its arguments
// decode into as much to be checked (attack18 K10); the array is cached
// by a server with the default bound, on the same store.
func TestBuiltinResultsHeld(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const dense = `const a = []; for (let i = 0; i < 500000; i++) a.push(0)`
	first := start(t, "CODECELL_SERVER_DATA_DIR="+dir)
	rec := first.open(t, bobToken).run(dense+`; await cache.set("dense", a); await cache.set("small", [1, 2, 3]); return "set"`, "timeout_ms", 60000)
	if string(rec.Result) != `"set"` {
		t.Fatalf("cache.set of 500,000 numbers with the default bound: %.1200s", rec.raw)
	}
	first.cmd.Process.Kill()
	first.cmd.Wait()

	s := start(t, "CODECELL_SERVER_DATA_DIR="+dir, fmt.Sprintf("CODECELL_LIMITS_RESULT_BYTES_IN_FLIGHT_PER_RUN=%d", 32<<20))
	bob := s.open(t, bobToken)
	rec = bob.run(`const small = await cache.get("small")
		try { await cache.get("dense"); return ["fulfilled", small.value] } catch (e) { return [e.code + ": " + e.message, small.value] }`, "timeout_ms", 60000)
	got := string(rec.Result)
	if !strings.Contains(got, "result_bytes_limit") || !strings.Contains(got, "JSON value") || !strings.Contains(got, "[1,2,3]") {
		t.Errorf("cache.get of 500,000 numbers, and of three: %.1200s", rec.raw)
	}
	rec = bob.run(dense+`; try { await cache.set("again", a); return "fulfilled" } catch (e) { return e.code + ": " + e.message }`, "timeout_ms", 60000)
	if got := string(rec.Result); !strings.Contains(got, "result_bytes_limit") || !strings.Contains(got, "send fewer values") {
		t.Errorf("cache.set of 500,000 numbers within 32 MiB: %.1200s", rec.raw)
	}
	bob.normal()
}
