package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
)

// taskServer serves codecell over HTTP for alice and bob, with builtin
// tools, test.tick, which counts its calls, and test.wait, which returns
// once open is closed.
func taskServer(t testing.TB, tasks engine.TaskConfig, sandbox executor.Config) (url string, ticks *atomic.Int64, open chan struct{}) {
	t.Helper()
	ticks = &atomic.Int64{}
	open = make(chan struct{})
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	type tickIn struct {
		N int `json:"n"`
	}
	if err := reg.Register(tools.Tool{
		Name:        "test.tick",
		Summary:     "Count a call.",
		InputSchema: json.RawMessage(`{"type": "object", "properties": {"n": {"type": "integer"}}}`),
		Handler: tools.Handle(func(_ context.Context, in tickIn) (int, error) {
			ticks.Add(1)
			return in.N, nil
		}),
	}, tools.Tool{
		Name:        "test.wait",
		Summary:     "Wait until the test says.",
		InputSchema: json.RawMessage(`{"type": "object"}`),
		Handler: tools.Handle(func(ctx context.Context, _ struct{}) (bool, error) {
			select {
			case <-open:
				return true, nil
			case <-ctx.Done():
				return false, ctx.Err()
			}
		}),
	}); err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(forTests(t, mcpserver.Config{
		Auth:  []mcpserver.Token{{Principal: "alice", Token: aliceToken}, {Principal: "bob", Token: bobToken}},
		Tasks: tasks,
	}, sandbox), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL + mcpserver.PathStreamable, ticks, open
}

// taskClient is an mcp-go client of one principal, speaking protocol
// 2025-11-25 (the one with tasks/result and tasks/list), that sends the
// requests mcp-go's Client has no method for through its transport.
type taskClient struct {
	*client.Client
	ids atomic.Int64
}

func newTaskClient(t testing.TB, url, token string) *taskClient {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	tc := &taskClient{Client: startVersion(t, c, mcp.ProtocolVersion20251125)}
	tc.ids.Store(1 << 20)
	return tc
}

// call sends a raw request and returns its result, or its error.
func (c *taskClient) call(t testing.TB, method string, params any) (json.RawMessage, *mcp.JSONRPCErrorDetails) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(c.ids.Add(1)), Method: method, Params: params})
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return res.Result, res.Error
}

// startTask calls execute_code as a task and returns the task it gets.
func (c *taskClient) startTask(t testing.TB, args map[string]any) mcp.Task {
	t.Helper()
	res, rpcErr := c.call(t, "tools/call", map[string]any{"name": "execute_code", "arguments": args, "task": map[string]any{}})
	if rpcErr != nil {
		t.Fatalf("tools/call as a task: %+v", rpcErr)
	}
	var created mcp.CreateTaskResult
	if err := json.Unmarshal(res, &created); err != nil || created.Task.TaskId == "" {
		t.Fatalf("not a task handle: %v\n%s", err, res)
	}
	return created.Task
}

func (c *taskClient) getTask(t testing.TB, id string) (mcp.Task, *mcp.JSONRPCErrorDetails) {
	t.Helper()
	res, rpcErr := c.call(t, "tasks/get", map[string]any{"taskId": id})
	var task mcp.Task
	if rpcErr == nil {
		if err := json.Unmarshal(res, &task); err != nil {
			t.Fatal(err)
		}
	}
	return task, rpcErr
}

// poll polls the task until it is terminal and returns it with the
// number of polls.
func (c *taskClient) poll(t testing.TB, id string, every time.Duration, limit time.Duration) (mcp.Task, int) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for n := 1; ; n++ {
		task, rpcErr := c.getTask(t, id)
		if rpcErr != nil {
			t.Fatalf("tasks/get: %+v", rpcErr)
		}
		if task.Status.IsTerminal() {
			return task, n
		}
		if time.Now().After(deadline) {
			t.Fatalf("task still %s after %s", task.Status, limit)
		}
		time.Sleep(every)
	}
}

// result fetches a task's result: the execute_code result and its record.
func (c *taskClient) result(t testing.TB, id string) (mcp.TaskResultResult, *engine.Record) {
	t.Helper()
	res, rpcErr := c.call(t, "tasks/result", map[string]any{"taskId": id})
	if rpcErr != nil {
		t.Fatalf("tasks/result: %+v", rpcErr)
	}
	parsed, err := mcp.ParseTaskResultResult(&res)
	if err != nil {
		t.Fatal(err)
	}
	out := *parsed
	var raw struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	json.Unmarshal(res, &raw)
	if len(raw.StructuredContent) == 0 {
		return out, nil
	}
	var rec engine.Record
	if err := json.Unmarshal(raw.StructuredContent, &rec); err != nil {
		t.Fatalf("not a run record: %v\n%s", err, raw.StructuredContent)
	}
	return out, &rec
}

func (c *taskClient) list(t testing.TB) []string {
	t.Helper()
	res, rpcErr := c.call(t, "tasks/list", map[string]any{})
	if rpcErr != nil {
		t.Fatalf("tasks/list: %+v", rpcErr)
	}
	var out mcp.ListTasksResult
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, task := range out.Tasks {
		ids = append(ids, task.TaskId)
	}
	return ids
}

func recordKeys(t testing.TB, structured any) []string {
	t.Helper()
	b, _ := json.Marshal(structured)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	keys := []string{}
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestExecuteCodeAsTask drives execute_code as MCP tasks with mcp-go's
// client over Streamable HTTP.
func TestExecuteCodeAsTask(t *testing.T) {
	t.Parallel()
	url, ticks, open := taskServer(t,
		engine.TaskConfig{MaxDuration: 3 * time.Second},
		executor.Config{Timeout: 400 * time.Millisecond, MaxTimeout: 400 * time.Millisecond})
	alice := newTaskClient(t, url, aliceToken)
	bob := newTaskClient(t, url, bobToken)

	t.Run("advertised", func(t *testing.T) {
		list, err := alice.ListTools(t.Context(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range list.Tools {
			if tool.Name == "execute_code" {
				if tool.Execution == nil || tool.Execution.TaskSupport != mcp.TaskSupportOptional {
					t.Fatalf("execute_code execution %+v, want task support optional", tool.Execution)
				}
				return
			}
		}
		t.Fatal("no execute_code")
	})

	// A run longer than max_timeout: as a task it completes; its record
	// has the shape of a direct call's.
	code := `await util.sleep({ms: 700}); return {n: 42}`
	t.Run("polled to completion", func(t *testing.T) {
		task := alice.startTask(t, map[string]any{"code": `await test.wait({}); ` + code, "timeout_ms": 3000})
		if task.Status != mcp.TaskStatusWorking {
			t.Fatalf("task handle %+v", task)
		}
		if task.TTL == nil || *task.TTL != (3*time.Second+engine.DefaultTaskResultTTL).Milliseconds() {
			t.Fatalf("task ttl %v, want max duration + result ttl", task.TTL)
		}
		if got, _ := alice.getTask(t, task.TaskId); got.Status != mcp.TaskStatusWorking {
			t.Fatalf("task %+v while its program waits", got)
		}
		close(open)
		done, _ := alice.poll(t, task.TaskId, 50*time.Millisecond, 30*time.Second)
		if done.Status != mcp.TaskStatusCompleted {
			t.Fatalf("task %+v", done)
		}
		res, rec := alice.result(t, task.TaskId)
		if rec == nil || rec.Status != executor.StatusOK || string(rec.Result) != `{"n":42}` || res.IsError {
			t.Fatalf("task result %+v, record %+v", res, rec)
		}
		direct, _ := execute(t, alice.Client, map[string]any{"code": `await test.wait({}); await util.sleep({ms: 1}); return {n: 42}`})
		if got, want := recordKeys(t, res.StructuredContent), recordKeys(t, direct.StructuredContent); !slices.Equal(got, want) {
			t.Fatalf("task record keys %v, direct record keys %v", got, want)
		}
		if len(res.Content) != 1 {
			t.Fatalf("content %+v", res.Content)
		}
	})

	t.Run("an ordinary call keeps max_timeout", func(t *testing.T) {
		_, rec := execute(t, alice.Client, map[string]any{"code": code})
		if rec == nil || rec.Error == nil || rec.Error.Kind != executor.KindTimeout {
			t.Fatalf("record %+v, want a timeout", rec)
		}
	})

	t.Run("an ordinary call may not ask past max_timeout", func(t *testing.T) {
		_, rec := execute(t, alice.Client, map[string]any{"code": code, "timeout_ms": 3000})
		if rec == nil || rec.Error == nil || rec.Error.Kind != executor.KindInvalidRequest || !strings.Contains(rec.Error.Message, "as an MCP task (up to 3000)") {
			t.Fatalf("record %+v, want a refusal that points to tasks", rec)
		}
	})

	// A task that asks for no deadline has the default one, as any run:
	// it holds its sandbox no longer than an ordinary call would.
	t.Run("the default deadline without timeout_ms", func(t *testing.T) {
		task := alice.startTask(t, map[string]any{"code": `for (;;) await util.sleep({ms: 50})`})
		done, _ := alice.poll(t, task.TaskId, 50*time.Millisecond, 30*time.Second)
		if done.Status != mcp.TaskStatusCompleted {
			t.Fatalf("task %+v", done)
		}
		_, rec := alice.result(t, task.TaskId)
		if rec == nil || rec.Error == nil || rec.Error.Kind != executor.KindTimeout || !strings.Contains(rec.Error.Message, "400ms") {
			t.Fatalf("record %+v, want a timeout at the default 400ms deadline", rec)
		}
	})

	t.Run("past max_task_duration", func(t *testing.T) {
		over := alice.startTask(t, map[string]any{"code": "1", "timeout_ms": 3001})
		alice.poll(t, over.TaskId, 50*time.Millisecond, 30*time.Second)
		if _, rec := alice.result(t, over.TaskId); rec == nil || rec.Error == nil || rec.Error.Kind != executor.KindInvalidRequest {
			t.Fatalf("a task asking past max_task_duration: record %+v, want a refusal", rec)
		}
		task := alice.startTask(t, map[string]any{"code": `for (;;) await util.sleep({ms: 500})`, "timeout_ms": 3000})
		done, _ := alice.poll(t, task.TaskId, 100*time.Millisecond, 30*time.Second)
		if done.Status != mcp.TaskStatusCompleted {
			t.Fatalf("task %+v", done)
		}
		res, rec := alice.result(t, task.TaskId)
		if rec == nil || rec.Error == nil || rec.Error.Kind != executor.KindTimeout || !res.IsError {
			t.Fatalf("record %+v, want a timeout", rec)
		}
		if rec.Stats.DurationMS < 2900 {
			t.Fatalf("run lasted %.0f ms, want about the task's 3 s", rec.Stats.DurationMS)
		}
	})

	t.Run("cancelled mid-run", func(t *testing.T) {
		before := ticks.Load()
		task := alice.startTask(t, map[string]any{"code": `for (let i = 0; ; i++) { await test.tick({n: i}); await util.sleep({ms: 20}) }`, "timeout_ms": 3000})
		for ticks.Load()-before < 3 {
			time.Sleep(5 * time.Millisecond)
		}
		res, rpcErr := alice.call(t, "tasks/cancel", map[string]any{"taskId": task.TaskId})
		if rpcErr != nil {
			t.Fatalf("tasks/cancel: %+v", rpcErr)
		}
		var cancelled mcp.Task
		json.Unmarshal(res, &cancelled)
		if cancelled.Status != mcp.TaskStatusCancelled {
			t.Fatalf("cancelled task %+v", cancelled)
		}
		// The run stops: the program makes no more calls.
		deadline := time.Now().Add(10 * time.Second)
		for {
			n := ticks.Load()
			time.Sleep(300 * time.Millisecond)
			if ticks.Load() == n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the cancelled task's program still calls tools")
			}
		}
		if got, _ := alice.getTask(t, task.TaskId); got.Status != mcp.TaskStatusCancelled {
			t.Fatalf("task %+v", got)
		}
	})

	t.Run("another principal's", func(t *testing.T) {
		task := alice.startTask(t, map[string]any{"code": `await util.sleep({ms: 300}); return 1`, "timeout_ms": 3000})
		if _, rpcErr := bob.getTask(t, task.TaskId); rpcErr == nil {
			t.Fatal("bob got alice's task")
		}
		if _, rpcErr := bob.call(t, "tasks/result", map[string]any{"taskId": task.TaskId}); rpcErr == nil {
			t.Fatal("bob got alice's task result")
		}
		if _, rpcErr := bob.call(t, "tasks/cancel", map[string]any{"taskId": task.TaskId}); rpcErr == nil {
			t.Fatal("bob cancelled alice's task")
		}
		// The answer is the one for a task that does not exist.
		_, mine := bob.getTask(t, task.TaskId)
		_, none := bob.getTask(t, "00000000-0000-0000-0000-000000000000")
		if mine.Code != none.Code || mine.Message != none.Message {
			t.Fatalf("another's task answers %+v, no task %+v", mine, none)
		}
		if slices.Contains(bob.list(t), task.TaskId) {
			t.Fatal("bob lists alice's task")
		}
		if !slices.Contains(alice.list(t), task.TaskId) {
			t.Fatal("alice does not list her task")
		}
		done, _ := alice.poll(t, task.TaskId, 50*time.Millisecond, 30*time.Second)
		if done.Status != mcp.TaskStatusCompleted {
			t.Fatalf("task %+v", done)
		}
	})
}

// TestTaskTwoMinutes polls a task whose program waits on tools for two
// minutes to completion: the run outlives the request that started it by
// far, and costs no CPU while it waits. It is skipped with -short.
func TestTaskTwoMinutes(t *testing.T) {
	if testing.Short() {
		t.Skip("a two-minute task; run without -short")
	}
	t.Parallel()
	url, ticks, _ := taskServer(t, engine.TaskConfig{}, executor.Config{})
	alice := newTaskClient(t, url, aliceToken)
	started := time.Now()
	task := alice.startTask(t, map[string]any{"code": `
		let slept = 0;
		for (let i = 0; i < 12; i++) {
			slept += (await util.sleep({ms: 10000})).slept_ms;
			await test.tick({n: i});
			progress("slept " + slept + " ms", (i + 1) / 12);
		}
		return {slept};`, "timeout_ms": 180000})
	done, polls := alice.poll(t, task.TaskId, 2*time.Second, 4*time.Minute)
	took := time.Since(started)
	if done.Status != mcp.TaskStatusCompleted {
		t.Fatalf("task %+v", done)
	}
	_, rec := alice.result(t, task.TaskId)
	if rec == nil || rec.Status != executor.StatusOK || !strings.HasPrefix(string(rec.Result), `{"slept":`) {
		t.Fatalf("record %+v", rec)
	}
	var out struct{ Slept int64 }
	json.Unmarshal(rec.Result, &out)
	if out.Slept < 120000 || took < 2*time.Minute || ticks.Load() != 12 {
		t.Fatalf("slept %d ms in %s with %d ticks; want 120000 ms, 12 ticks", out.Slept, took, ticks.Load())
	}
	t.Logf("two-minute task: %d polls, %s wall time", polls, took.Round(time.Second))
}
