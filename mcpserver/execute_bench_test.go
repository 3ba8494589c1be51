package mcpserver_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
)

// BenchmarkExecutePath measures what the server adds to a run of `1+1`:
// Execute (run, filter, record, audit) against the executor's Run alone.
func BenchmarkExecutePath(b *testing.B) {
	srv, _ := storeServerTB(b, filepath.Join(b.TempDir(), "db"), mcpserver.Config{})
	exec, err := executor.New(executor.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer exec.Close()
	ctx := context.Background()
	b.Run("executor_run", func(b *testing.B) {
		defer reportCPU(b, processCPU())
		for b.Loop() {
			if res := exec.Run(ctx, executor.Request{Code: "1+1"}); res.Error != nil {
				b.Fatal(res.Error)
			}
		}
	})
	b.Run("server_execute", func(b *testing.B) {
		defer reportCPU(b, processCPU())
		for b.Loop() {
			if rec, _ := srv.Execute(ctx, engine.Execution{Code: "1+1"}); rec.Error != nil {
				b.Fatal(rec.Error)
			}
		}
	})
}

// BenchmarkGateCalls measures what tool calls cost a run: runs of 1 and
// of 100 calls of util.echo , each
// call through the gate and the executor's bridge, rate limits off; µs/call is a run's
// time over its calls, and (100_calls − 1_call) / 99 what one more call
// adds.
func BenchmarkGateCalls(b *testing.B) {
	unlimited := engine.Limits{ToolCallsPerMinute: 1 << 30, ToolCallBurst: 1 << 30}
	srv, _ := storeServerTB(b, filepath.Join(b.TempDir(), "db"), mcpserver.Config{Limits: unlimited})
	ctx := context.Background()
	for _, n := range []int{1, 100} {
		code := `for (let i = 0; i < ` + strconv.Itoa(n) + `; i++) await util.echo({text: "x"}); 1`
		b.Run(strconv.Itoa(n)+"_calls", func(b *testing.B) {
			start, cpu := time.Now(), processCPU()
			for b.Loop() {
				if rec, _ := srv.Execute(ctx, engine.Execution{Code: code}); rec.Error != nil {
					b.Fatal(rec.Error)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N*n), "µs/call")
			if cpu > 0 {
				b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N*n), "cpu-µs/call")
			}
		})
	}
}
