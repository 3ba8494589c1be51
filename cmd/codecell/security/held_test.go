package security

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Whatever the server holds for one principal's run is held against the
// results in flight (limits.result_bytes_in_flight and
// result_bytes_in_flight_per_run), as bytes and values, before it is
// built (issue 19). These three held far more than those bounds count:
// the data flow's observations of results the sandbox already had, a
// run's own result, and text answers converted to JSON strings. Each
// test measures the server's peak RSS around one principal's run.

// growthBar is the most one of these runs may grow the server's peak
// RSS by: the per-run bound's 128 MiB of results in flight, the Go
// heap's slack of twice what it holds, and room.
const growthBar = 512 << 20

// TestObservedResultsHeld: two runs of 128 cache.get at once each, of a
// 1 MB array of 500,000 zeros. Each result was held (1 MB and 128 bytes a value)
// until the sandbox had it, but the run's data flow observed it after
// that, in the background, parsing it into a 35 MB tree — as many at
// once as there were results — and kept four such trees for the rest of
// the run, counted 4 MB each: the server grew by 1.0–1.3 GiB for one
// run, 1.7 GiB for two.
func TestObservedResultsHeld(t *testing.T) {
	t.Parallel()
	s := start(t)
	bob := s.open(t, bobToken)
	pid := s.cmd.Process.Pid
	if peakRSS(pid) < 0 {
		t.Skip("no /proc/<pid>/status here")
	}
	if rec := bob.run(`const a = []; for (let i = 0; i < 500000; i++) a.push(0); await cache.set("dense", a); return 1`, "timeout_ms", 60000); rec.Status != "ok" {
		t.Fatalf("cache.set of 500,000 zeros: %.600s", rec.raw)
	}
	before := peakRSS(pid)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			rec := bob.run(`const rs = await Promise.allSettled(Array.from({length: 128}, () => cache.get("dense"))); return rs.filter(r => r.status === "fulfilled").length`, "timeout_ms", 60000)
			t.Logf("128 cache.get at once: %s %s", rec.Status, rec.Result)
		})
	}
	wg.Wait()
	after := peakRSS(pid)
	t.Logf("two runs of 128 cache.get at once: peak RSS %d → %d MiB", before>>20, after>>20)
	if after-before > growthBar {
		t.Errorf("two runs' 128 reads each of a 1 MB array grew the server's peak RSS by %d MiB (bar %d MiB)", (after-before)>>20, growthBar>>20)
	}
	bob.normal()
}

// TestRunResultValuesHeld: a program returns a typed array of two million
// bytes — 2 MB of its heap, two million values in the server, whose
// filter built a tree of about 200 bytes a value (+414 MiB). The run
// fails with result_too_large, saying to return bytes as a string, and
// the server does not grow; a result of a few thousand values passes.
func TestRunResultValuesHeld(t *testing.T) {
	t.Parallel()
	s := start(t)
	bob := s.open(t, bobToken)
	pid := s.cmd.Process.Pid
	if peakRSS(pid) < 0 {
		t.Skip("no /proc/<pid>/status here")
	}
	if rec := bob.run(`return new Uint8Array(5000).length + Array.from(new Uint8Array(5000)).length`); rec.Status != "ok" || string(rec.Result) != "10000" {
		t.Fatalf("a small run: %.600s", rec.raw)
	}
	if rec := bob.run(`return new Uint8Array(5000)`); rec.Status != "ok" {
		t.Fatalf("a result of 5,000 values: %.600s", rec.raw)
	}
	before := peakRSS(pid)
	rec := bob.run(`return new Uint8Array(2000000)`, "timeout_ms", 60000)
	after := peakRSS(pid)
	t.Logf("a result of two million values: peak RSS %d → %d MiB", before>>20, after>>20)
	if rec.Error == nil || rec.Error.Kind != "result_too_large" || !strings.Contains(rec.Error.Message, "JSON values") || !strings.Contains(rec.Error.Message, "base64") {
		t.Errorf("a result of two million values: %.600s", rec.raw)
	}
	if after-before > 128<<20 {
		t.Errorf("one run's result of two million values grew the server's peak RSS by %d MiB", (after-before)>>20)
	}
	bob.normal()
}

// TestTextAnswersHeld: an API answers eight calls at once with 15 MiB of
// text/plain, made of the characters JSON escapes most (a quote, a
// control character, HTML's < > &): converting each to a JSON string
// took about ten times its bytes in the server, counted once.
func TestTextAnswersHeld(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("<a href=\"x\">&amp;</a>\x01\n", (15<<20)/24)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if r.URL.Path == "/few" {
			w.Write([]byte("a few <words> & \"quotes\""))
			return
		}
		w.Write([]byte(text))
	}))
	t.Cleanup(api.Close)
	dir := t.TempDir()
	spec := filepath.Join(dir, "texts.json")
	op := func(id string) string {
		return `{"get":{"operationId":"` + id + `","responses":{"200":{"description":"ok","content":{"text/plain":{"schema":{"type":"string"}}}}}}}`
	}
	os.WriteFile(spec, []byte(`{"openapi":"3.0.3","info":{"title":"texts","version":"1"},"paths":{"/text":`+op("get_text")+`,"/few":`+op("get_few")+`}}`), 0o600)
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[openapi.texts]\nspec = %q\nbase_url = %q\n", spec, api.URL)), 0o600)
	s := start(t, "--config", cfg)
	bob := s.open(t, bobToken)
	pid := s.cmd.Process.Pid
	if peakRSS(pid) < 0 {
		t.Skip("no /proc/<pid>/status here")
	}
	var rec record
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		rec = bob.run(`try { return await texts.get_few() } catch (e) { return e.code + ": " + e.message }`, "timeout_ms", 20000)
		if !strings.Contains(string(rec.Result), "loading") || time.Now().After(deadline) {
			break
		}
	}
	if string(rec.Result) != `"a few \u003cwords\u003e \u0026 \"quotes\""` && string(rec.Result) != `"a few <words> & \"quotes\""` {
		t.Fatalf("a short text: %.600s", rec.raw)
	}
	before := peakRSS(pid)
	rec = bob.run(`const rs = await Promise.allSettled(Array.from({length: 8}, async () => (await texts.get_text()).length));
		return rs.map(r => r.status == "rejected" ? r.reason.code : r.value)`, "timeout_ms", 60000)
	after := peakRSS(pid)
	t.Logf("eight texts of 15 MiB at once: %.300s; peak RSS %d → %d MiB", rec.Result, before>>20, after>>20)
	if !strings.Contains(string(rec.Result), fmt.Sprint(len(text))) {
		t.Errorf("no text of %d bytes reached the program: %.600s", len(text), rec.raw)
	}
	if after-before > growthBar {
		t.Errorf("one run's eight texts of 15 MiB grew the server's peak RSS by %d MiB (bar %d MiB)", (after-before)>>20, growthBar>>20)
	}
	bob.normal()
}
