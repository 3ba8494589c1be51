package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

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
			a := newAuditor(store, slog.New(slog.DiscardHandler), func(string, time.Duration) {}, DefaultAuditCallRowsPerDay)
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
	}), slog.New(slog.DiscardHandler), func(string, time.Duration) {}, DefaultAuditCallRowsPerDay)
	r := auditOf("a", 3)
	r.requests = []memory.HTTPRequest{{ExecutionID: "a", Host: "example.com"}}
	a.record(r)
	a.close()
	if len(got) != 1 || got[0].Execution.ID != "a" || len(got[0].ToolCalls) != 3 || len(got[0].HTTPRequests) != 1 {
		t.Fatalf("records = %+v", got)
	}
}

// TestAuditClipsCodePastTheDay (issue 19, fourth round, A9): a
// principal's programs are kept whole up to auditCodeBytesPerDay a day;
// past it the audit keeps the first KiB of a longer one, its size and the
// whole one's hash. Short programs, other principals and the next day
// are kept whole.
func TestAuditClipsCodePastTheDay(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	c := auditCodes{nowFor: func() time.Time { return now }}
	big := strings.Repeat("é", 50<<10) // 100 KiB, two bytes a character
	for kept := 0; kept+len(big) <= auditCodeBytesPerDay; kept += len(big) {
		if e := c.clip(memory.Execution{Principal: "bob", Code: big}); e.Code != big {
			t.Fatalf("bob's program after %d bytes today was clipped", kept)
		}
	}
	e := c.clip(memory.Execution{Principal: "bob", Code: big})
	if len(e.Code) > auditCodeHead+300 || !strings.HasPrefix(e.Code, big[:auditCodeHead]) || !utf8.ValidString(e.Code) {
		t.Fatalf("past the day's bytes, bob's program is kept as %d bytes: %.200q", len(e.Code), e.Code)
	}
	if e.CodeHash != memory.Hash([]byte(big)) || !strings.Contains(e.Code, fmt.Sprint(len(big))) {
		t.Errorf("a clipped program does not keep the whole one's hash and size: %q %.300q", e.CodeHash, e.Code)
	}
	if e := c.clip(memory.Execution{Principal: "bob", Code: "1 + 1"}); e.Code != "1 + 1" {
		t.Errorf("a short program was clipped: %q", e.Code)
	}
	if e := c.clip(memory.Execution{Principal: "alice", Code: big}); e.Code != big {
		t.Error("alice's program was clipped for bob's bytes")
	}
	now = now.Add(24 * time.Hour)
	if e := c.clip(memory.Execution{Principal: "bob", Code: big}); e.Code != big {
		t.Error("bob's program was clipped the next day")
	}
}

// TestAuditAggregatesCallsPastTheDay (issue 19, attack9's D9): a
// principal's calls are kept a row each up to its allowance of the day;
// past it, a run's further calls are kept as one row per tool and
// outcome, with their count, total duration and first start. Other
// principals and the next day start with their whole allowance.
func TestAuditAggregatesCallsPastTheDay(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	c := auditCalls{perDay: 10, nowFor: func() time.Time { return now }}
	run := func(n int) []memory.ToolCall {
		var calls []memory.ToolCall
		for i := range n {
			st, code := "ok", ""
			if i%3 == 2 {
				st, code = "error", "not_found"
			}
			tool := "cache.get"
			if i%2 == 1 {
				tool = "crm.update"
			}
			calls = append(calls, memory.ToolCall{ExecutionID: "r", Tool: tool, Status: st, ErrorCode: code, ArgsHash: fmt.Sprint(i),
				Duration: time.Millisecond, StartedAt: now.Add(time.Duration(i) * time.Second)})
		}
		return calls
	}
	if got := c.bound("bob", run(8)); len(got) != 8 || slices.ContainsFunc(got, func(c memory.ToolCall) bool { return c.Calls != 0 }) {
		t.Fatalf("within the allowance, calls were aggregated: %+v", got)
	}
	calls := run(100)
	got := c.bound("bob", calls)
	if len(got) != 2+4 || got[0].ArgsHash != "0" || got[1].ArgsHash != "1" || got[1].Calls != 0 {
		t.Fatalf("the run that passes the allowance: %d rows, want its first 2 calls whole and 4 aggregates: %+v", len(got), got)
	}
	total := 0
	for _, a := range got[2:] {
		if a.Calls == 0 || a.ArgsHash != "" {
			t.Errorf("an aggregate row has calls %d and args hash %q", a.Calls, a.ArgsHash)
		}
		total += a.Calls
		if a.Duration != time.Duration(a.Calls)*time.Millisecond {
			t.Errorf("%s %s: duration %v for %d calls", a.Tool, a.Status, a.Duration, a.Calls)
		}
	}
	if total != 98 || got[2].Tool != "cache.get" || got[2].Status != "error" || !got[2].StartedAt.Equal(now.Add(2*time.Second)) {
		t.Errorf("aggregates stand for %d calls (want 98), first %+v", total, got[2])
	}
	if got := c.bound("bob", run(5)); len(got) != 3 {
		t.Errorf("past the allowance, a run of 5 calls of 3 tools and outcomes kept %d rows: %+v", len(got), got)
	}
	if got := c.bound("alice", run(5)); len(got) != 5 {
		t.Errorf("alice's calls were aggregated for bob's: %+v", got)
	}
	now = now.Add(24 * time.Hour)
	if got := c.bound("bob", run(5)); len(got) != 5 {
		t.Errorf("bob's calls were aggregated the next day: %+v", got)
	}
}
