package engine

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/tools"
)

// BenchmarkStoreListHeld is an ordinary memory.task_list of 50 small
// tasks through the gate's results in flight, each row held as it is
// read (attack18 K8): the cost of the holds on the ordinary path.
//
//	go test -tags sqlite_fts5 -run '^$' -bench StoreListHeld -count 3 ./mcpserver/engine/
func BenchmarkStoreListHeld(b *testing.B) {
	st, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "codecell.db")}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	reg := tools.NewRegistry()
	if err := st.Register(reg); err != nil {
		b.Fatal(err)
	}
	g := newGate(reg)
	g.stages = []stage{binding{g: g}, newResultBytes(Limits{})}
	bob := tools.Caller{Principal: "bob"}
	for i := range 50 {
		if _, err := st.AddTask(tools.WithCaller(b.Context(), bob), memory.TaskInput{Content: fmt.Sprintf("renew certificate %d", i), Tags: []string{"ops"}, Metadata: json.RawMessage(`{"host":"api.example.com","notes":["a","b"]}`)}); err != nil {
			b.Fatal(err)
		}
	}
	args := json.RawMessage(`{"limit": 50}`)
	start := time.Now()
	b.ResetTimer()
	for range b.N {
		if _, err := g.call(b.Context(), &Call{Run: &Run{Caller: bob}, Name: "memory.task_list", Args: args}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/list")
}
