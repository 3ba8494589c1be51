package sqlite

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"

	"github.com/codecell/codecell/memory"
)

// BenchmarkAudit measures what the audit log costs a run on disk, by the
// way the server writes it: its execution and its calls in a transaction
// each (as the audit writer did), the run in one transaction
// (RecordAudit), and 16 runs in one (what the writer commits when runs
// queue while it writes). Runs make 1 or 100 tool calls; cpu-µs/run is
// the writing thread's CPU.
//
//	go test -tags sqlite_fts5 -run '^$' -bench Audit -benchtime 500x ./memory/sqlite/
func BenchmarkAudit(b *testing.B) {
	ctx := context.Background()
	for _, calls := range []int{1, 100} {
		for _, mode := range []string{"separate", "one_tx", "batch_16"} {
			b.Run(fmt.Sprintf("%d_calls/%s", calls, mode), func(b *testing.B) {
				s := openTest(b, Config{})
				batch := 1
				if mode == "batch_16" {
					batch = 16
				}
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu0, measured := threadCPU()
				n := 0
				recs := make([]memory.AuditRecord, 0, batch)
				for b.Loop() {
					recs = recs[:0]
					for range batch {
						n++
						recs = append(recs, auditRun("run-"+strconv.Itoa(n), calls))
					}
					if err := writeAudit(ctx, s, mode, recs); err != nil {
						b.Fatal(err)
					}
				}
				if cpu1, ok := threadCPU(); ok && measured {
					b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(n)/1000, "cpu-µs/run")
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n)/1000, "µs/run")
			})
		}
	}
}

func auditRun(id string, calls int) memory.AuditRecord {
	r := memory.AuditRecord{Execution: memory.Execution{ID: id, Principal: "local", Session: "s", Language: "javascript",
		Code: "for (let i = 0; i < 100; i++) await util.echo({text: 'x'}); 1", Status: "ok", ToolCalls: calls}}
	for range calls {
		r.ToolCalls = append(r.ToolCalls, memory.ToolCall{ExecutionID: id, Tool: "util.echo", ArgsHash: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Status: "ok"})
	}
	return r
}

func writeAudit(ctx context.Context, s *Store, mode string, recs []memory.AuditRecord) error {
	if mode != "separate" {
		return s.RecordAudit(ctx, recs...)
	}
	for _, r := range recs {
		if err := s.RecordExecution(ctx, r.Execution); err != nil {
			return err
		}
		if err := s.RecordToolCalls(ctx, r.ToolCalls...); err != nil {
			return err
		}
	}
	return nil
}
