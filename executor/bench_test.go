package executor_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/codecell/codecell/executor"
)

// reportLatency records each iteration's duration and reports percentiles.
func reportLatency(b *testing.B, each func()) {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	for b.Loop() {
		t := time.Now()
		each()
		lat = append(lat, time.Since(t))
	}
	slices.Sort(lat)
	p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(p(0.50), "p50-ms")
	b.ReportMetric(p(0.95), "p95-ms")
	b.ReportMetric(p(0.99), "p99-ms")
}

func mustOK(b *testing.B, res *executor.Result) {
	if res.Status != executor.StatusOK {
		b.Fatalf("run failed: %v", res.Error)
	}
}

// BenchmarkRunTrivial measures one `1+1` run at a time, the latency an
// agent sees in-process.
func BenchmarkRunTrivial(b *testing.B) {
	e := newExecutor(b, executor.IsolationInProcess, executor.Config{})
	ctx := context.Background()
	req := executor.Request{Code: "1+1", Functions: layout, Dispatcher: echo}
	reportLatency(b, func() { mustOK(b, e.Run(ctx, req)) })
}

// BenchmarkRun100ToolCalls measures a program making 100 sequential calls.
func BenchmarkRun100ToolCalls(b *testing.B) {
	e := newExecutor(b, executor.IsolationInProcess, executor.Config{})
	ctx := context.Background()
	req := executor.Request{
		Code:       "let s = 0; for (let i = 0; i < 100; i++) s += (await util.echo({i})).i; s",
		Functions:  layout,
		Dispatcher: echo,
	}
	reportLatency(b, func() { mustOK(b, e.Run(ctx, req)) })
}

// BenchmarkRunSaturated keeps the pool busy from many goroutines and
// reports executions per second.
func BenchmarkRunSaturated(b *testing.B) {
	e := newExecutor(b, executor.IsolationInProcess, executor.Config{})
	ctx := context.Background()
	req := executor.Request{Code: "1+1", Functions: layout, Dispatcher: echo}
	b.SetParallelism(4)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			mustOK(b, e.Run(ctx, req))
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
}

// BenchmarkToolCallResult measures moving a 100 KB tool result into the VM.
func BenchmarkToolCallResult(b *testing.B) {
	e := newExecutor(b, executor.IsolationInProcess, executor.Config{})
	big := make([]map[string]any, 1000)
	for i := range big {
		big[i] = map[string]any{"id": i, "name": "customer name", "email": "x@example.com", "tags": []string{"a", "b"}}
	}
	payload, _ := json.Marshal(big)
	d := dispatcher(func(context.Context, string, json.RawMessage) (json.RawMessage, error) { return payload, nil })
	req := executor.Request{Code: "(await util.echo({})).length", Functions: layout, Dispatcher: d}
	b.SetBytes(int64(len(payload)))
	reportLatency(b, func() { mustOK(b, e.Run(context.Background(), req)) })
}
