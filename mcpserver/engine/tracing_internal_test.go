package engine

import (
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/tools"
)

// BenchmarkTracingOverhead measures the spans of one run with three tool
// calls, without the run: what tracing adds to a request, off, sampled
// into the in-memory exporter, and not sampled. The figure is ns/op, one
// op being one request's spans: the request's and its tool's, as
// mcpserver opens them for mcp-go, and the run's.
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
			tracer := noop.NewTracerProvider().Tracer("")
			if tp != nil {
				tracer = tp.Tracer("github.com/codecell/codecell/mcpserver")
			}
			caller := tools.Caller{Principal: "local"}
			ops, spans := 0, 0
			for b.Loop() {
				ctx, req := tracer.Start(context.Background(), "mcp.tools/call", trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attribute.String("mcp.method.name", "tools/call")))
				ctx, tool := tracer.Start(ctx, "tool.execute_code", trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrToolName.String("execute_code")))
				ctx, run := startRun(ctx, tracer, "x1", "", "1+1")
				run.running()
				for range 3 {
					_, span := startToolCall(ctx, tracer, reg, caller, "util.echo", args)
					endToolCall(span, args, nil)
				}
				run.ran(res)
				f := startFilter(ctx, tracer, res)
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
