package mcpserver_test

import (
	"context"
	"path/filepath"
	"testing"

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
		for b.Loop() {
			if res := exec.Run(ctx, executor.Request{Code: "1+1"}); res.Error != nil {
				b.Fatal(res.Error)
			}
		}
	})
	b.Run("server_execute", func(b *testing.B) {
		for b.Loop() {
			if rec, _ := srv.Execute(ctx, engine.Execution{Code: "1+1"}); rec.Error != nil {
				b.Fatal(rec.Error)
			}
		}
	})
}
