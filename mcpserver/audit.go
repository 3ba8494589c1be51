package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// auditor writes the audit log off the request path: records queue in a
// bounded channel that one goroutine drains into the store. When the queue
// is full the request writes its record itself, so nothing is dropped;
// close drains the queue.
type auditor struct {
	store   *memory.Store
	log     *slog.Logger
	latency func(op string, d time.Duration)
	queue   chan auditRecord
	done    chan struct{}
	once    sync.Once
}

type auditRecord struct {
	exec  memory.Execution
	calls []memory.ToolCall
}

func newAuditor(store *memory.Store, log *slog.Logger, latency func(string, time.Duration)) *auditor {
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

func (a *auditor) write(r auditRecord) {
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

// runDispatcher is the dispatcher of one run: it runs calls as the run's
// caller, under the caller's rate limit, and keeps a log of them for the
// audit record.
type runDispatcher struct {
	dispatcher
	execID  string
	origins *origins

	mu    sync.Mutex
	calls []memory.ToolCall
}

func (d *runDispatcher) Call(ctx context.Context, c executor.Call) (json.RawMessage, error) {
	name, args := c.Name, c.Args
	start := time.Now()
	out, err := d.dispatcher.call(ctx, name, args)
	if err == nil {
		d.origins.add(name, out)
	}
	call := memory.ToolCall{
		ExecutionID: d.execID,
		Tool:        name,
		ArgsHash:    hashHex(args),
		Status:      "ok",
		Duration:    time.Since(start),
		StartedAt:   start,
	}
	if err != nil {
		call.Status = "error"
		call.ErrorCode = errorCode(err)
	}
	d.mu.Lock()
	d.calls = append(d.calls, call)
	d.mu.Unlock()
	return out, err
}

func hashHex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func newExecutionID() string { return uuid.NewString() }

// auditStatus is the status word the audit log keeps for a run.
func auditStatus(res *executor.Result) (status, kind, msg string) {
	if res.Error == nil {
		return "ok", "", ""
	}
	return "error", string(res.Error.Kind), res.Error.Message
}

// executionRecord builds the audit record of a finished run. Runs are
// recorded once, when they end (each write is a transaction; two per run
// halved the throughput the store allows).
func executionRecord(id string, caller tools.Caller, x Execution, started time.Time, res *executor.Result) memory.Execution {
	lang := string(x.Language)
	if lang == "" {
		lang = string(executor.JavaScript)
	}
	e := memory.Execution{
		ID:        id,
		Principal: caller.Principal,
		Session:   caller.Session,
		Language:  lang,
		Code:      x.Code,
		StartedAt: started,
	}
	e.Status, e.ErrorKind, e.ErrorMessage = auditStatus(res)
	e.Duration = time.Duration(res.Telemetry.DurationMS * float64(time.Millisecond))
	e.ToolCalls = res.Telemetry.ToolCalls
	e.ResultBytes = int64(res.Telemetry.ResultBytes)
	return e
}
