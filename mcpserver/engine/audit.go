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

	"github.com/google/uuid"

	"github.com/codecell/codecell/memory"
)

// auditor writes the audit log off the request path: records queue in a
// bounded channel that one goroutine drains into the store. When the queue
// is full the request writes its record itself, so nothing is dropped;
// close drains the queue.
type auditor struct {
	store   auditLog
	log     *slog.Logger
	latency func(op string, d time.Duration)
	queue   chan auditRecord
	done    chan struct{}
	once    sync.Once
}

type auditRecord struct {
	exec     memory.Execution
	calls    []memory.ToolCall
	requests []memory.HTTPRequest
}

func newAuditor(store auditLog, log *slog.Logger, latency func(string, time.Duration)) *auditor {
	a := &auditor{store: store, log: log, latency: latency, queue: make(chan auditRecord, 1024), done: make(chan struct{})}
	go a.run()
	return a
}

func (a *auditor) run() {
	defer close(a.done)
	for r := range a.queue {
		a.write(r)
	}
}

// write writes one run's audit record. A panic under it (in the store) is
// logged and loses that record only: the writer goes on with the next,
// and a request that writes its own record is not failed by it.
func (a *auditor) write(r auditRecord) {
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("audit record panicked", "id", r.exec.ID, "panic_type", fmt.Sprintf("%T", p), "stack", string(debug.Stack()))
		}
	}()
	ctx := context.Background()
	start := time.Now()
	if err := a.store.RecordExecution(ctx, r.exec); err != nil {
		a.log.Error("audit execution", "id", r.exec.ID, "err", err)
		return
	}
	a.latency("record_execution", time.Since(start))
	if len(r.calls) > 0 {
		start := time.Now()
		if err := a.store.RecordToolCalls(ctx, r.calls...); err != nil {
			a.log.Error("audit tool calls", "id", r.exec.ID, "calls", len(r.calls), "err", err)
		}
		a.latency("record_tool_calls", time.Since(start))
	}
	if len(r.requests) > 0 {
		start := time.Now()
		if err := a.store.RecordHTTPRequests(ctx, r.requests...); err != nil {
			a.log.Error("audit http requests", "id", r.exec.ID, "requests", len(r.requests), "err", err)
		}
		a.latency("record_http_requests", time.Since(start))
	}
}

func (a *auditor) record(r auditRecord) {
	if a == nil {
		return
	}
	select {
	case a.queue <- r:
	default:
		a.write(r) // back-pressure rather than loss
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
// carry: a session ID is a bearer credential for its session, and a
// short hash tells sessions apart.
func SessionHash(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:4])
}
