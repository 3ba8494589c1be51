package security

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkConcurrentLargeResults measures codecell's peak RSS while one
// program awaits 16 responses of 7 MiB at once from an API described to
// it as four OpenAPI sources (max_response_bytes 8 MiB; each serves four
// calls at once): the results in flight that limits.result_bytes_in_flight
// and _per_run bound (issue 19, a5). Each iteration is a fresh server, so
// that the peak is that of one such run. CODECELL_SECURITY_BINARY
// measures another build the same way; BENCH_PER_RUN_BYTES sets the
// per-run limit (by default 128 MiB: all 16 at once).
//
//	go test -tags sqlite_fts5 -run '^$' -bench ConcurrentLargeResults -benchtime 1x -count 3 ./cmd/codecell/security/
func BenchmarkConcurrentLargeResults(b *testing.B) {
	const mib = 1 << 20
	body := append(append([]byte(`{"data":"`), bytes.Repeat([]byte("a"), 7*mib)...), `"}`...)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	b.Cleanup(api.Close)
	dir := b.TempDir()
	doc := filepath.Join(dir, "big.json")
	if err := os.WriteFile(doc, []byte(`{"openapi": "3.0.3", "info": {"title": "big", "version": "1"},
		"paths": {"/big": {"get": {"operationId": "get_big", "responses": {"200": {"description": "A large object.",
		"content": {"application/json": {"schema": {"type": "object"}}}}}}}}}`), 0o600); err != nil {
		b.Fatal(err)
	}
	var cfg strings.Builder
	var calls []string
	for i := range 4 {
		fmt.Fprintf(&cfg, "[openapi.big%d]\nspec = %q\nbase_url = %q\nmax_response_bytes = %d\n\n", i, doc, api.URL, 8*mib)
		for range 4 {
			calls = append(calls, fmt.Sprintf("big%d.get_big({}).then(r => r.data.length, e => e.code)", i))
		}
	}
	config := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(config, []byte(cfg.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	extra := []string{"--config", config}
	if v := os.Getenv("BENCH_PER_RUN_BYTES"); v != "" {
		extra = append(extra, "CODECELL_LIMITS_RESULT_BYTES_IN_FLIGHT_PER_RUN="+v)
	}
	code := "return (await Promise.all([" + strings.Join(calls, ", ") + "])).filter(n => n === 7 * 1048576).length"
	var peak, base float64
	for b.Loop() {
		s := start(b, extra...)
		alice := s.connect(b, aliceToken, &user{}, "big0", "big1", "big2", "big3")
		base += float64(peakRSS(s.cmd.Process.Pid)) / mib
		if rec := alice.run(code, "timeout_ms", 60000); rec.Status != "ok" || string(rec.Result) != "16" {
			b.Fatalf("%.600s", rec.raw)
		}
		peak += float64(peakRSS(s.cmd.Process.Pid)) / mib
	}
	b.ReportMetric(peak/float64(b.N), "peak-MiB")
	b.ReportMetric(base/float64(b.N), "before-run-MiB")
}
