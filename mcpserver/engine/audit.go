package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/codecell/codecell/memory"
)

// auditor writes the audit log off the request path: records queue in a
// bounded channel that one goroutine drains into the store, the records
// that queue within auditGather of each other in one transaction (a run's
// execution, calls and HTTP requests together, and the runs that ended
// within the window or while the last batch was written). When the queue is full the request writes its record
// itself, so nothing is dropped; close drains the queue. A crash of the
// process loses the records still queued, as it did when each was written
// on its own: those of the runs that ended while the last batch was being
// written.
type auditor struct {
	store   auditLog
	log     *slog.Logger
	latency func(op string, d time.Duration)
	queue   chan auditRecord
	done    chan struct{}
	once    sync.Once
	codes   auditCodes
	calls   auditCalls
}

// auditCalls counts the tool-call rows each principal's runs kept today.
// Up to perDay of them a day, a principal's calls are kept a row each
// (with their arguments' hash and start); past it, a run's further calls
// are kept as one aggregate row per tool and outcome (memory.ToolCall's
// Calls). One principal's cheap calls at the tool-call rate limit wrote
// 2.3 GiB of rows a day before, kept for memory.audit_max_age (issue 19,
// attack9's D9). The count is the process's: a restart starts a new day.
type auditCalls struct {
	mu     sync.Mutex
	day    int64 // Unix days
	kept   map[string]int
	perDay int
	nowFor func() time.Time // tests
}

// DefaultAuditCallRowsPerDay is Limits.AuditCallRowsPerDay's default:
// about 2.8 MiB of rows a principal a day.
const DefaultAuditCallRowsPerDay = 10000

// bound returns a run's calls as the audit keeps them: a row each while
// the principal's allowance of today lasts, the rest aggregated.
func (c *auditCalls) bound(principal string, calls []memory.ToolCall) []memory.ToolCall {
	if len(calls) == 0 {
		return calls
	}
	now := time.Now
	if c.nowFor != nil {
		now = c.nowFor
	}
	day := now().Unix() / 86400
	c.mu.Lock()
	if day != c.day || c.kept == nil {
		c.day, c.kept = day, map[string]int{} // a new day: everyone starts again
	}
	whole := min(len(calls), max(c.perDay-c.kept[principal], 0))
	c.kept[principal] += whole
	c.mu.Unlock()
	if whole == len(calls) {
		return calls
	}
	return append(calls[:whole:whole], aggregateCalls(calls[whole:])...)
}

// aggregateCalls is calls as one row per tool and outcome, in the order
// of each one's first call.
func aggregateCalls(calls []memory.ToolCall) []memory.ToolCall {
	type key struct {
		tool, status, code string
		cached, planned    bool
	}
	at := map[key]int{}
	var out []memory.ToolCall
	for _, c := range calls {
		k := key{c.Tool, c.Status, c.ErrorCode, c.Cached, c.Planned}
		i, ok := at[k]
		if !ok {
			at[k] = len(out)
			out = append(out, memory.ToolCall{ExecutionID: c.ExecutionID, Tool: c.Tool, Status: c.Status, ErrorCode: c.ErrorCode,
				Cached: c.Cached, Planned: c.Planned, StartedAt: c.StartedAt})
			i = len(out) - 1
		}
		a := &out[i]
		a.Calls += max(c.Calls, 1)
		a.Duration += c.Duration
		if !c.StartedAt.IsZero() && (a.StartedAt.IsZero() || c.StartedAt.Before(a.StartedAt)) {
			a.StartedAt = c.StartedAt
		}
	}
	return out
}

// The audit keeps a run's code whole up to auditCodeBytesPerDay of each
// principal's programs longer than auditCodeHead a day; past it, the
// first auditCodeHead bytes of such a program, with its size, and its
// hash (code_hash) of the whole. Shorter programs are kept whole.
// One principal's cheap runs of 100 KB programs wrote about 70 MB a
// minute before, kept for memory.audit_max_age (issue 19, fourth round,
// A9). The count is the process's: a restart starts a new day.
const (
	auditCodeBytesPerDay = 8 << 20
	auditCodeHead        = 1 << 10
)

// auditCodes counts the code each principal's runs kept whole today.
type auditCodes struct {
	mu     sync.Mutex
	day    int64 // Unix days
	kept   map[string]int64
	nowFor func() time.Time // tests
}

// clip returns e with its code cut to auditCodeHead bytes when its
// principal kept auditCodeBytesPerDay of code whole today.
func (c *auditCodes) clip(e memory.Execution) memory.Execution {
	now := time.Now
	if c.nowFor != nil {
		now = c.nowFor
	}
	day := now().Unix() / 86400
	c.mu.Lock()
	if day != c.day || c.kept == nil {
		c.day, c.kept = day, map[string]int64{} // a new day: everyone starts again
	}
	n := int64(len(e.Code))
	if n <= auditCodeHead { // kept whole, as a clipped one would be kept
		c.mu.Unlock()
		return e
	}
	whole := c.kept[e.Principal]+n <= auditCodeBytesPerDay
	if whole {
		c.kept[e.Principal] += n
	}
	c.mu.Unlock()
	if whole {
		return e
	}
	if e.CodeHash == "" {
		e.CodeHash = memory.Hash([]byte(e.Code))
	}
	head := e.Code[:auditCodeHead]
	for !utf8.ValidString(head) && len(head) > 0 { // never half a character
		head = head[:len(head)-1]
	}
	e.Code = fmt.Sprintf("%s\n/* codecell: the audit keeps the first %d of this program's %d bytes (its principal's programs passed %d bytes today); code_hash is the whole program's SHA-256 */", head, len(head), n, auditCodeBytesPerDay)
	return e
}

type auditRecord struct {
	exec     memory.Execution
	calls    []memory.ToolCall
	requests []memory.HTTPRequest
}

// maxAuditBatch bounds the runs one transaction of the audit writer
// holds. auditGather is how long the writer waits, after a record
// arrives, for others to write with it: a transaction's cost is mostly
// its own (about 100 µs of CPU for a run written alone, 21-23 µs a run
// for 16 together), and under load runs end a fraction of a millisecond
// apart. The wait is off every request's path; it is also how much
// longer a record stays queued, which a crash loses.
const (
	maxAuditBatch = 256
	auditGather   = 5 * time.Millisecond
)

func newAuditor(store auditLog, log *slog.Logger, latency func(string, time.Duration), callRowsPerDay int) *auditor {
	a := &auditor{store: store, log: log, latency: latency, queue: make(chan auditRecord, 1024), done: make(chan struct{}),
		calls: auditCalls{perDay: callRowsPerDay}}
	go a.run()
	return a
}

func (a *auditor) run() {
	defer close(a.done)
	batch := make([]memory.AuditRecord, 0, maxAuditBatch)
	gather := time.NewTimer(auditGather)
	gather.Stop()
	for r := range a.queue {
		batch = a.gather(append(batch[:0], r.audit()), gather)
		a.write(batch)
		clear(batch) // let the written records go
	}
}

// gather adds to a batch the records that queue within auditGather of
// its first, up to maxAuditBatch, and returns it at once when the queue
// closes.
func (a *auditor) gather(batch []memory.AuditRecord, t *time.Timer) []memory.AuditRecord {
	t.Reset(auditGather)
	defer t.Stop()
	for len(batch) < maxAuditBatch {
		select {
		case r, ok := <-a.queue:
			if !ok {
				return batch
			}
			batch = append(batch, r.audit())
		case <-t.C:
			return batch
		}
	}
	return batch
}

// write writes a batch of runs' records in one transaction. A batch that
// fails is written again run by run, so that one bad record costs no
// other run its audit. A panic under it (in the store) is logged and
// loses that record only: the writer goes on with the next, and a
// request that writes its own record is not failed by it.
func (a *auditor) write(batch []memory.AuditRecord) {
	defer func() {
		if p := recover(); p != nil {
			if len(batch) > 1 {
				for _, r := range batch {
					a.write([]memory.AuditRecord{r})
				}
				return
			}
			a.log.Error("audit record panicked", "id", batch[0].Execution.ID, "panic_type", fmt.Sprintf("%T", p), "stack", string(debug.Stack()))
		}
	}()
	ctx := context.Background()
	start := time.Now()
	err := a.store.RecordAudit(ctx, batch...)
	a.latency("record_audit", time.Since(start))
	if err == nil {
		return
	}
	if len(batch) == 1 {
		r := batch[0]
		a.log.Error("audit", "id", r.Execution.ID, "calls", len(r.ToolCalls), "requests", len(r.HTTPRequests), "err", err)
		return
	}
	for _, r := range batch {
		a.write([]memory.AuditRecord{r})
	}
}

func (r auditRecord) audit() memory.AuditRecord {
	return memory.AuditRecord{Execution: r.exec, ToolCalls: r.calls, HTTPRequests: r.requests}
}

func (a *auditor) record(r auditRecord) {
	if a == nil {
		return
	}
	r.exec = a.codes.clip(r.exec)
	r.calls = a.calls.bound(r.exec.Principal, r.calls)
	select {
	case a.queue <- r:
	default:
		a.write([]memory.AuditRecord{r.audit()}) // back-pressure rather than loss
	}
}

// close writes what is queued and stops the writer.
func (a *auditor) close() {
	if a == nil {
		return
	}
	a.once.Do(func() {
		close(a.queue)
		<-a.done
	})
}

func hashHex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func newExecutionID() string { return uuid.NewString() }

// SessionHash is the form of an MCP session ID that logs and spans may
// carry, memory.SessionHash: the audit log keeps the same, so that the
// two join.
func SessionHash(id string) string { return memory.SessionHash(id) }
