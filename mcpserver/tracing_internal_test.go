package mcpserver

import (
	"context"
	"encoding/json"
	"testing"

	mcptracing "github.com/mark3labs/mcp-go/tracing"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/tools"
)

// BenchmarkTracingOverhead measures the spans of one run with three tool
// calls, without the run: what tracing adds to a request, off, sampled
// into the in-memory exporter, and not sampled. The figure is ns/op, one
// op being one request's spans.
func BenchmarkTracingOverhead(b *testing.B) {
	reg := tools.NewRegistry()
	if err := reg.Register(tools.Tool{Name: "util.echo", Summary: "Echo.", Handler: func(_ context.Context, a json.RawMessage) (json.RawMessage, error) {
		return a, nil
	}}); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"text":"a"}`)
	res := &executor.Result{Status: executor.StatusOK, Value: json.RawMessage(`1`), Telemetry: executor.Telemetry{ToolCalls: 3}}
	for _, tc := range []struct {
		name    string
		sampler sdktrace.Sampler // nil: no provider
	}{
		{"off", nil},
		{"on", sdktrace.AlwaysSample()},
		{"unsampled", sdktrace.NeverSample()},
	} {
		b.Run(tc.name, func(b *testing.B) {
			exp := tracetest.NewInMemoryExporter()
			var tp trace.TracerProvider
			if tc.sampler != nil {
				tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(tc.sampler))
			}
			s := &Server{cfg: Config{TracerProvider: tp}, reg: reg, tracer: newTracer(tp)}
			var mt mcptracing.Tracer = mcptracing.NoopTracer()
			if tp != nil {
				mt = mcpTracer{s.tracer}
			}
			caller := tools.Caller{Principal: "local"}
			ops, spans := 0, 0
			for b.Loop() {
				ctx, req := mt.Start(context.Background(), "mcp.tools/call", mcptracing.SpanKindServer, mcptracing.String("mcp.method", "tools/call"))
				ctx, tool := mt.Start(ctx, "tool.execute_code", mcptracing.SpanKindInternal, mcptracing.String("mcp.tool.name", "execute_code"))
				ctx, run := s.startRun(ctx, "x1", Execution{Code: "1+1"})
				run.running()
				for range 3 {
					_, span := startToolCall(ctx, s.tracer, s.reg, caller, "util.echo", args)
					endToolCall(span, args, nil)
				}
				run.ran(res)
				f := s.startFilter(ctx, res)
				endFilter(f, nil, nil)
				run.end(args)
				tool.End()
				req.End()
				ops++
				if ops%100 == 0 { // the exporter copies its spans to count them
					spans += len(exp.GetSpans())
					exp.Reset()
				}
			}
			spans += len(exp.GetSpans())
			b.ReportMetric(float64(spans)/float64(ops), "spans/op")
		})
	}
}
