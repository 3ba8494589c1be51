package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
)

// crashingStore is a store whose PutResult and RecordExecution, when
// set, are putResult and recordExecution: bugs under a run's handler,
// after the program ran, and in the audit log's writer.
type crashingStore struct {
	*sqlite.Store
	putResult   func(ctx context.Context, in memory.PutResultInput) (memory.ResultInfo, error)
	recordAudit func(ctx context.Context, recs ...memory.AuditRecord) error
}

func (s crashingStore) PutResult(ctx context.Context, in memory.PutResultInput) (memory.ResultInfo, error) {
	if s.putResult == nil {
		return s.Store.PutResult(ctx, in)
	}
	return s.putResult(ctx, in)
}

func (s crashingStore) RecordAudit(ctx context.Context, recs ...memory.AuditRecord) error {
	if s.recordAudit == nil {
		return s.Store.RecordAudit(ctx, recs...)
	}
	return s.recordAudit(ctx, recs...)
}

// lockedBuffer is a log's destination that handlers write to from
// several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRunPanicEndsTask (issue 19): a panic under execute_code's handler
// — here in the store, when a cut result is kept — made mcp-go fail the
// task with the panic's text, while codecell's own record of the task
// stayed "running" until its TTL: with one task per principal, the
// principal could start no other. The task now fails with a message that
// says an internal error occurred and shows nothing of the panic, it
// frees its place, the log has the panic at error level without its
// value, and an ordinary call that panics the same way is a record of
// kind internal_error.
func TestRunPanicEndsTask(t *testing.T) {
	const secret = "hunter2-the-panic-value"
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	srv, err := mcpserver.New(forTests(t, mcpserver.Config{
		Auth:   []mcpserver.Token{{Principal: "alice", Token: aliceToken}},
		Tasks:  engine.TaskConfig{MaxPerPrincipal: 1},
		Store:  crashingStore{Store: st, putResult: func(context.Context, memory.PutResultInput) (memory.ResultInfo, error) { panic(secret) }},
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	}, executor.Config{}), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	alice := newTaskClient(t, ts.URL+mcpserver.PathStreamable, aliceToken)

	// A result over the budget is kept whole in the store: PutResult.
	big := map[string]any{"code": `"x".repeat(100000)`}
	task := alice.startTask(t, big)
	done, _ := alice.poll(t, task.TaskId, 20*time.Millisecond, time.Minute)
	if done.Status != mcp.TaskStatusFailed || !strings.Contains(done.StatusMessage, "internal error") || strings.Contains(done.StatusMessage, secret) {
		t.Errorf("the task whose run panicked: %s %q, want failed, saying an internal error occurred, without the panic's value", done.Status, done.StatusMessage)
	}
	// Its place is free: the next task runs.
	next := alice.startTask(t, map[string]any{"code": "1 + 1"})
	if done, _ := alice.poll(t, next.TaskId, 20*time.Millisecond, time.Minute); done.Status != mcp.TaskStatusCompleted {
		t.Fatalf("the next task: %s %q", done.Status, done.StatusMessage)
	}
	if _, rec := alice.result(t, next.TaskId); rec == nil || rec.Status != executor.StatusOK || string(rec.Result) != "2" {
		t.Errorf("the next task's record, with one task per principal and the crashed one gone: %+v", rec)
	}

	// An ordinary call: a record of kind internal_error.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "execute_code"
	req.Params.Arguments = big
	res, err := alice.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("an ordinary call whose run panicked: %v", err)
	}
	if text := textOf(res.Content); !res.IsError || !strings.Contains(text, string(executor.KindInternal)) || strings.Contains(text, secret) {
		t.Errorf("an ordinary call whose run panicked: isError %v, %s", res.IsError, text)
	}

	log := logs.String()
	if !strings.Contains(log, "level=ERROR") || !strings.Contains(log, "execute_code panicked") || !strings.Contains(log, "task="+task.TaskId) {
		t.Errorf("the log has no error naming the panic and its task:\n%s", log)
	}
	if strings.Contains(log, secret) {
		t.Errorf("the log shows the panic's value:\n%s", log)
	}
}

// TestAuditPanicLosesOneRecord: the audit log's writer is a goroutine of
// the engine's, where a panic (in the store) killed the server. It now
// loses that run's audit record only, logged at error level, and the
// server goes on serving.
func TestAuditPanicLosesOneRecord(t *testing.T) {
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	// The writer writes a batch of runs at once, and each run of a batch
	// that failed again on its own: each run's own write panics once.
	var alone atomic.Int32
	srv, err := mcpserver.New(forTests(t, mcpserver.Config{
		Store: crashingStore{Store: st, recordAudit: func(_ context.Context, recs ...memory.AuditRecord) error {
			if len(recs) == 1 {
				alone.Add(1)
			}
			panic("a bug in the store")
		}},
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	}, executor.Config{}), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c := start(t, transports[0].connect(t, srv))
	for range 2 {
		if res, rec := execute(t, c, map[string]any{"code": "1 + 1"}); res.IsError || rec == nil || string(rec.Result) != "2" {
			t.Fatalf("a run while the audit log's writer panics: %s", textOf(res.Content))
		}
	}
	// Both records' writes panicked, and the server is here.
	deadline := time.Now().Add(time.Minute)
	for alone.Load() < 2 || strings.Count(logs.String(), "audit record panicked") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d runs written alone; the log has no error for each lost audit record:\n%s", alone.Load(), logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if log := logs.String(); !strings.Contains(log, "level=ERROR") {
		t.Errorf("the lost audit records are not logged as errors:\n%s", log)
	}
}

// TestRunPanicUnder2026Task (issue 19, a fresh look at the third round's
// fixes): a run of a 2026-07-28 client that declares the tasks extension
// runs on a goroutine of its own; a panic under it ends that run with
// internal_error, as on any other path, and not the server.
func TestRunPanicUnder2026Task(t *testing.T) {
	const secret = "hunter2-the-panic-value"
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(forTests(t, mcpserver.Config{
		Auth:   []mcpserver.Token{{Principal: "alice", Token: aliceToken}},
		Store:  crashingStore{Store: st, putResult: func(context.Context, memory.PutResultInput) (memory.ResultInfo, error) { panic(secret) }},
		Logger: slog.New(slog.NewTextHandler(&lockedBuffer{}, nil)),
	}, executor.Config{}), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	call := func(code string) string {
		params := map[string]any{"name": "execute_code", "arguments": map[string]any{"code": code},
			"_meta": map[string]any{
				"io.modelcontextprotocol/protocolVersion":    mcp.ProtocolVersion20260728,
				"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "t", "version": "1"},
				"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
			}}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
		req, _ := http.NewRequest(http.MethodPost, ts.URL+mcpserver.PathStreamable, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
		req.Header.Set(mcp.HeaderMethod, "tools/call")
		req.Header.Set(mcp.HeaderName, "execute_code")
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	// A result over the budget is kept whole in the store: PutResult.
	if got := call(`"x".repeat(100000)`); !strings.Contains(got, "internal_error") || strings.Contains(got, secret) {
		t.Errorf("a run that panicked under a 2026 task's goroutine: %.600s", got)
	}
	if got := call(`1 + 1`); !strings.Contains(got, `\"result\":2`) && !strings.Contains(got, `"result":2`) {
		t.Errorf("the server after the panic: %.600s", got)
	}
}
