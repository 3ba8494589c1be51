package engine

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
)

// auditFunc is an auditLog that calls a function.
type auditFunc func(ctx context.Context, recs ...memory.AuditRecord) error

func (f auditFunc) RecordAudit(ctx context.Context, recs ...memory.AuditRecord) error {
	return f(ctx, recs...)
}

// gatedAudit is an audit store whose first write waits until released,
// so that the records queued meanwhile make one batch; it keeps the ids
// of every batch that it wrote and fails any batch holding a run named
// "bad".
type gatedAudit struct {
	entered, release chan struct{}
	once             sync.Once

	mu      sync.Mutex
	batches [][]string
}

func newGatedAudit() *gatedAudit {
	return &gatedAudit{entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gatedAudit) RecordAudit(_ context.Context, recs ...memory.AuditRecord) error {
	g.once.Do(func() {
		close(g.entered)
		<-g.release
	})
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.Execution.ID
		if r.Execution.ID == "bad" {
			return errors.New("bad record")
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.batches = append(g.batches, ids)
	return nil
}

func auditOf(id string, calls int) auditRecord {
	r := auditRecord{exec: memory.Execution{ID: id}}
	for range calls {
		r.calls = append(r.calls, memory.ToolCall{ExecutionID: id, Tool: "util.echo"})
	}
	return r
}

// TestAuditorBatches: the runs that end while the writer writes are
// written together, in one transaction, each with its calls; one bad
// record costs the others of its batch nothing; close writes what is
// queued.
func TestAuditorBatches(t *testing.T) {
	for _, tc := range []struct {
		name  string
		queue []string
		want  [][]string
	}{
		{"queued runs make one batch", []string{"b", "c", "d"}, [][]string{{"a"}, {"b", "c", "d"}}},
		{"a bad record is written alone", []string{"b", "bad", "c"}, [][]string{{"a"}, {"b"}, {"c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newGatedAudit()
			a := newAuditor(store, slog.New(slog.DiscardHandler), func(string, time.Duration) {})
			a.record(auditOf("a", 1))
			<-store.entered // the writer holds "a"
			for _, id := range tc.queue {
				a.record(auditOf(id, 2))
			}
			close(store.release)
			a.close()
			if !slices.EqualFunc(store.batches, tc.want, slices.Equal) {
				t.Fatalf("batches = %v, want %v", store.batches, tc.want)
			}
		})
	}
}

// TestAuditorKeepsCalls: a run's calls and HTTP requests reach the store
// with its execution.
func TestAuditorKeepsCalls(t *testing.T) {
	var got []memory.AuditRecord
	a := newAuditor(auditFunc(func(_ context.Context, recs ...memory.AuditRecord) error {
		got = append(got, recs...)
		return nil
	}), slog.New(slog.DiscardHandler), func(string, time.Duration) {})
	r := auditOf("a", 3)
	r.requests = []memory.HTTPRequest{{ExecutionID: "a", Host: "example.com"}}
	a.record(r)
	a.close()
	if len(got) != 1 || got[0].Execution.ID != "a" || len(got[0].ToolCalls) != 3 || len(got[0].HTTPRequests) != 1 {
		t.Fatalf("records = %+v", got)
	}
}
