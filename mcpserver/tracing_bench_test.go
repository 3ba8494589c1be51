package mcpserver_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
)

// BenchmarkExecuteTracing measures what tracing adds to Execute: off (no
// provider), on with every run sampled into the SDK's in-memory exporter,
// and on with no run sampled; for a run without tool calls and one with
// three. The figure is the time per run; run the cases back to back and
// compare them, not with figures taken at another time. The run itself
// dominates and varies: BenchmarkTracingOverhead (engine) isolates the
// spans.
func BenchmarkExecuteTracing(b *testing.B) {
	programs := []struct{ name, code string }{
		{"no_calls", "1+1"},
		{"three_calls", `await util.echo({text: "a"}); await util.echo({text: "b"}); await util.echo({text: "c"}); return 1`},
	}
	for _, p := range programs {
		for _, tc := range []struct {
			name    string
			sampler sdktrace.Sampler // nil: no provider
		}{
			{"off", nil},
			{"on", sdktrace.AlwaysSample()},
			{"unsampled", sdktrace.NeverSample()},
		} {
			b.Run(p.name+"/"+tc.name, func(b *testing.B) {
				exp := tracetest.NewInMemoryExporter()
				var tp trace.TracerProvider
				if tc.sampler != nil {
					tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(tc.sampler))
				}
				// No rate limit between the runs.
				srv := newServer(b, mcpserver.Config{TracerProvider: tp, Limits: engine.Limits{ToolCallsPerMinute: 1 << 30, ToolCallBurst: 1 << 30}})
				ctx := context.Background()
				runs, spans := 0, 0
				for b.Loop() {
					if rec, _ := srv.Execute(ctx, engine.Execution{Code: p.code}); rec.Error != nil {
						b.Fatal(rec.Error)
					}
					runs++
					if n := len(exp.GetSpans()); n > 1000 {
						spans += n
						exp.Reset()
					}
				}
				spans += len(exp.GetSpans())
				b.ReportMetric(float64(spans)/float64(runs), "spans/run")
			})
		}
	}
}
