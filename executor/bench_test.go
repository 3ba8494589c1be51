package executor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codecell/codecell/executor"
)

// The benchmarks run in both isolation modes, as sub-benchmarks named by
// the mode, so that the cost of the process boundary reads off side by
// side:
//
//	go test -tags sqlite_fts5 -run '^$' -bench . -count 6 ./executor | benchstat -col /mode -

// reportLatency records each iteration's duration and reports percentiles.
// It also reports the CPU time per iteration, which a loaded machine
// does not inflate as it does the latency: this process's (cpu-ms/op)
// and, on Linux, its children's, the sandbox workers in process mode
// (worker-cpu-ms/op).
func reportLatency(b *testing.B, each func()) {
	b.Helper()
	lat := make([]time.Duration, 0, b.N)
	cpu, workers := cpuTime(), childrenCPU()
	for b.Loop() {
		t := time.Now()
		each()
		lat = append(lat, time.Since(t))
	}
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N)/1000, "cpu-ms/op")
	if workers >= 0 {
		b.ReportMetric(float64((childrenCPU()-workers).Microseconds())/float64(b.N)/1000, "worker-cpu-ms/op")
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

// eachModeB runs f as a sub-benchmark per isolation mode, with an
// executor whose pool is ready.
func eachModeB(b *testing.B, cfg executor.Config, f func(b *testing.B, e *executor.Executor)) {
	for _, mode := range modes {
		b.Run("mode="+string(mode), func(b *testing.B) {
			e := newExecutor(b, mode, cfg)
			waitReady(b, e)
			f(b, e)
		})
	}
}

// waitReady waits until the pool has prepared its VMs or workers, and
// its warm transform processes.
func waitReady(tb testing.TB, e *executor.Executor) {
	deadline := time.Now().Add(30 * time.Second)
	transforms := 0
	if len(e.Config().TransformCommand) > 0 {
		transforms = e.Config().TransformProcesses
	}
	for s := e.Stats(); (s.Ready < s.Size || s.TransformsReady < transforms) && time.Now().Before(deadline); s = e.Stats() {
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkRunTrivial measures one `1+1` run at a time, the latency an
// agent sees.
func BenchmarkRunTrivial(b *testing.B) {
	eachModeB(b, executor.Config{}, func(b *testing.B, e *executor.Executor) {
		req := executor.Request{Code: "1+1", Functions: layout, Dispatcher: echo}
		reportLatency(b, func() { mustOK(b, e.Run(context.Background(), req)) })
	})
}

// BenchmarkRunTypeScript measures one TypeScript `return 1+1` run at a
// time: what stripping its types costs on top of BenchmarkRunTrivial
// (in a warm transform process).
// transform=server is esbuild in the server's process (no
// TransformCommand), the floor a warm transform process is measured
// against.
func BenchmarkRunTypeScript(b *testing.B) {
	req := executor.Request{Code: "const x: number = 1 + 1; return x", Language: executor.TypeScript, Functions: layout, Dispatcher: echo}
	eachModeB(b, executor.Config{}, func(b *testing.B, e *executor.Executor) {
		reportLatency(b, func() { mustOK(b, e.Run(context.Background(), req)) })
	})
	b.Run("mode=inprocess/transform=server", func(b *testing.B) {
		e := newExecutor(b, executor.IsolationInProcess, executor.Config{TransformCommand: []string{}})
		waitReady(b, e)
		reportLatency(b, func() { mustOK(b, e.Run(context.Background(), req)) })
	})
}

// tools are the dispatchers the call benchmarks run against: one that
// answers at once, which measures the bridge, and one that takes 500 µs
// as a fast real tool would, which shows what running calls together
// buys.
var tools = []struct {
	name string
	d    executor.Dispatcher
}{
	{"instant", echo},
	{"500µs", dispatcher(func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		time.Sleep(500 * time.Microsecond)
		return args, nil
	})},
}

// BenchmarkRun100ToolCalls measures a program making 100 sequential calls.
func BenchmarkRun100ToolCalls(b *testing.B) {
	eachModeB(b, executor.Config{}, func(b *testing.B, e *executor.Executor) {
		for _, tool := range tools {
			b.Run("tool="+tool.name, func(b *testing.B) {
				req := executor.Request{
					Code:       "let s = 0; for (let i = 0; i < 100; i++) s += (await util.echo({i})).i; s",
					Functions:  layout,
					Dispatcher: tool.d,
				}
				reportLatency(b, func() { mustOK(b, e.Run(context.Background(), req)) })
			})
		}
	})
}

// BenchmarkRun100ParallelCalls measures a program awaiting 100 calls
// together.
func BenchmarkRun100ParallelCalls(b *testing.B) {
	eachModeB(b, executor.Config{MaxConcurrentCalls: 100}, func(b *testing.B, e *executor.Executor) {
		for _, tool := range tools {
			b.Run("tool="+tool.name, func(b *testing.B) {
				req := executor.Request{
					Code:       "(await Promise.all(Array.from({length: 100}, (_, i) => util.echo({i})))).length",
					Functions:  layout,
					Dispatcher: tool.d,
				}
				reportLatency(b, func() { mustOK(b, e.Run(context.Background(), req)) })
			})
		}
	})
}

// BenchmarkBridgedCall measures one tool call from the program's await to
// its result, over 1000 sequential calls in one run.
func BenchmarkBridgedCall(b *testing.B) {
	eachModeB(b, executor.Config{MaxToolCalls: 1000}, func(b *testing.B, e *executor.Executor) {
		req := executor.Request{
			Code:       "let s = 0; for (let i = 0; i < 1000; i++) s += (await util.echo({i})).i; s",
			Functions:  layout,
			Dispatcher: echo,
		}
		start, cpu := time.Now(), cpuTime()
		for b.Loop() {
			mustOK(b, e.Run(context.Background(), req))
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/1000, "µs/call")
		// CPU time of this process per call: the cost of a call in-process
		// however busy the machine is (a worker's CPU is not counted).
		b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N)/1000, "cpu-µs/call")
	})
}

// cpuTime returns the CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childrenCPU returns the CPU time the children of this process have
// used: the live ones, from /proc, and those reaped (transform processes
// that served one parse, workers replaced), or -1 where there is no
// /proc. A child alive at one reading and reaped by the next is counted
// once in the difference.
func childrenCPU() time.Duration {
	self := strconv.Itoa(os.Getpid())
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	var total time.Duration
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		total = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for _, d := range procs {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		stat, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// After the command's closing parenthesis: state ppid ... utime
		// (field 14) stime (field 15), in clock ticks.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 13 || f[1] != self {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(ut+st) * (time.Second / clockTicks)
	}
	return total
}

// clockTicks is USER_HZ, what /proc counts CPU time in: 100 on Linux.
const clockTicks = 100

// BenchmarkRunSaturated keeps the pool busy from many goroutines and
// reports executions per second.
func BenchmarkRunSaturated(b *testing.B) {
	eachModeB(b, executor.Config{}, func(b *testing.B, e *executor.Executor) {
		req := executor.Request{Code: "1+1", Functions: layout, Dispatcher: echo}
		b.SetParallelism(4)
		start := time.Now()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				mustOK(b, e.Run(context.Background(), req))
			}
		})
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
	})
}

// bigResult is a tool result of about 1 MB: rows as a search or a list
// tool returns them.
func bigResult(b *testing.B) json.RawMessage {
	b.Helper()
	type row struct {
		ID       int      `json:"id"`
		Title    string   `json:"title"`
		State    string   `json:"state"`
		Comments int      `json:"comments"`
		Author   string   `json:"author"`
		Labels   []string `json:"labels"`
		Body     string   `json:"body"`
	}
	rows := make([]row, 3000)
	for i := range rows {
		state := "open"
		if i%3 == 0 {
			state = "closed"
		}
		rows[i] = row{ID: i, Title: fmt.Sprintf("Issue number %d about the parser", i), State: state, Comments: i % 17,
			Author: fmt.Sprintf("user%d", i%101), Labels: []string{"bug", "parser"},
			Body: "Steps to reproduce: run the parser on the attached file and watch it fail. Expected: no failure. Actual: a failure ✓."}
	}
	payload, err := json.Marshal(map[string]any{"total": len(rows), "items": rows})
	if err != nil {
		b.Fatal(err)
	}
	return payload
}

// BenchmarkToolCallResult measures moving a ~1 MB tool result into the
// VM: the program only asks for its size.
func BenchmarkToolCallResult(b *testing.B) {
	payload := bigResult(b)
	d := dispatcher(func(context.Context, string, json.RawMessage) (json.RawMessage, error) { return payload, nil })
	eachModeB(b, executor.Config{}, func(b *testing.B, e *executor.Executor) {
		req := executor.Request{Code: "(await util.echo({})).items.length", Functions: layout, Dispatcher: d}
		b.SetBytes(int64(len(payload)))
		reportLatency(b, func() { mustOK(b, e.Run(context.Background(), req)) })
	})
}

// BenchmarkFilterBigResult measures the data path an agent uses most: a
// program that receives a ~1 MB tool result and keeps a few fields of the
// rows it wants. MB/s is the result's size over the whole run.
func BenchmarkFilterBigResult(b *testing.B) {
	payload := bigResult(b)
	d := dispatcher(func(context.Context, string, json.RawMessage) (json.RawMessage, error) { return payload, nil })
	eachModeB(b, executor.Config{}, func(b *testing.B, e *executor.Executor) {
		req := executor.Request{
			Code:       "const r = await util.echo({}); return r.items.filter(i => i.comments > 12 && i.state === 'open').map(i => ({id: i.id, title: i.title}))",
			Functions:  layout,
			Dispatcher: d,
		}
		b.SetBytes(int64(len(payload)))
		reportLatency(b, func() { mustOK(b, e.Run(context.Background(), req)) })
	})
}
