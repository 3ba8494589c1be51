package security

import (
	"testing"
	"time"
)

// BenchmarkGatePaginate measures a 100-page pagination of 1 KB pages from
// a local API, through the binary: each page a call of the operation
// through the gate, handed to the program. CODECELL_SECURITY_BINARY
// measures another build the same way.
//
//	go test -tags sqlite_fts5 -run '^$' -bench GatePaginate -benchtime 20x -count 3 ./cmd/codecell/security/
func BenchmarkGatePaginate(b *testing.B) {
	api := newHostileAPI(b)
	s := start(b, "--config", gateConfig(b, api, nil, ""), "CODECELL_LIMITS_TOOL_CALLS_PER_MINUTE=10000000", "CODECELL_LIMITS_TOOL_CALL_BURST=1000000")
	alice := s.connect(b, aliceToken, &user{}, "api", "vault")
	const code = `(await tools.paginate(api.list_things, {kb: 1}, {max: 100})).length`
	if rec := alice.run(code); rec.Status != "ok" || string(rec.Result) != "100" {
		b.Fatalf("%.400s", rec.raw)
	}
	var ran time.Duration
	b.ResetTimer()
	for b.Loop() {
		rec := alice.run(code)
		if rec.Status != "ok" {
			b.Fatalf("%.400s", rec.raw)
		}
		ran += time.Duration(rec.Stats.DurationMS * float64(time.Millisecond))
	}
	b.ReportMetric(float64(ran.Microseconds())/float64(b.N)/100, "µs/page")
}
