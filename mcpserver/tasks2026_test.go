package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
)

// client26 speaks protocol 2026-07-28 over Streamable HTTP as a client of
// the tasks extension would, request by request: _meta with the version,
// the client and its capabilities, and the standard headers.
type client26 struct {
	url, token string
	caps       map[string]any
	ids        atomic.Int64
}

// rpcReply is a JSON-RPC answer: its result or its error, and the HTTP
// status it came with.
type rpcReply struct {
	Result json.RawMessage            `json:"result"`
	Error  *mcp.JSONRPCErrorDetails   `json:"error"`
	Status int                        `json:"-"`
	Raw    map[string]json.RawMessage `json:"-"`
}

func (c *client26) send(t testing.TB, method, name string, params map[string]any) rpcReply {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    mcp.ProtocolVersion20260728,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "tasks-test", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": c.caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.ids.Add(1), "method": method, "params": params})
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	req.Header.Set(mcp.HeaderMethod, method)
	if name != "" {
		req.Header.Set(mcp.HeaderName, name)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer res.Body.Close()
	var data []byte
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 8<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"id"`) {
				data = []byte(d)
			}
		}
	} else {
		var b bytes.Buffer
		b.ReadFrom(res.Body)
		data = b.Bytes()
	}
	var r rpcReply
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: HTTP %d, answer %q: %v", method, res.StatusCode, data, err)
	}
	json.Unmarshal(r.Result, &r.Raw)
	r.Status = res.StatusCode
	return r
}

// task26View is a task as tasks/get and CreateTaskResult show it.
type task26View struct {
	ResultType     string                     `json:"resultType"`
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	StatusMessage  string                     `json:"statusMessage"`
	TTLMs          *int64                     `json:"ttlMs"`
	PollIntervalMs int64                      `json:"pollIntervalMs"`
	CreatedAt      string                     `json:"createdAt"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests"`
	Result         *mcp.CallToolResult        `json:"result"`
}

func (c *client26) execute(t testing.TB, args map[string]any) rpcReply {
	t.Helper()
	return c.send(t, "tools/call", "execute_code", map[string]any{"name": "execute_code", "arguments": args})
}

func (c *client26) get(t testing.TB, id string) (task26View, rpcReply) {
	t.Helper()
	r := c.send(t, "tasks/get", id, map[string]any{"taskId": id})
	var v task26View
	if r.Error == nil {
		if err := json.Unmarshal(r.Result, &v); err != nil {
			t.Fatal(err)
		}
	}
	return v, r
}

// until polls task id until its status is want.
func (c *client26) until(t testing.TB, id, want string) task26View {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v, r := c.get(t, id)
		if r.Error != nil {
			t.Fatalf("tasks/get %s: %+v", id, r.Error)
		}
		if v.Status == want {
			return v
		}
		if v.Status == "completed" || v.Status == "cancelled" || time.Now().After(deadline) {
			t.Fatalf("task %s is %s (%s), want %s", id, v.Status, v.StatusMessage, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func createdTask(t testing.TB, r rpcReply) task26View {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("tools/call: %+v", r.Error)
	}
	var v task26View
	if err := json.Unmarshal(r.Result, &v); err != nil {
		t.Fatal(err)
	}
	if v.ResultType != "task" || v.TaskID == "" || v.TTLMs == nil || v.CreatedAt == "" {
		t.Fatalf("want a CreateTaskResult, got %s", r.Result)
	}
	if _, ok := r.Raw["content"]; ok {
		t.Errorf("a CreateTaskResult has no content: %s", r.Result)
	}
	return v
}

func taskRecord(t testing.TB, v task26View) *engine.Record {
	t.Helper()
	if v.Result == nil {
		t.Fatalf("task %s completed without a result", v.TaskID)
	}
	var rec engine.Record
	b, _ := json.Marshal(v.Result.StructuredContent)
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	return &rec
}

var tasksExt = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}

// task26Server serves codecell over HTTP for alice and bob with builtin
// tools and test.tick, which counts its calls. A call waits a minute for
// its run before it becomes a task, so that a quick run is answered at
// once however loaded the machine: only a question makes a task sooner.
func task26Server(t testing.TB, tasks engine.TaskConfig) (url string, ticks *atomic.Int64) {
	t.Helper()
	ticks = &atomic.Int64{}
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
	}); err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(forTests(t, mcpserver.Config{
		Auth:       []mcpserver.Token{{Principal: "alice", Token: aliceToken}, {Principal: "bob", Token: bobToken}},
		Tasks:      tasks,
		TaskInline: time.Minute,
	}, executor.Config{}), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL + mcpserver.PathStreamable, ticks
}

// TestTasks2026: on protocol 2026-07-28 with the tasks extension declared,
// a program that asks the client becomes a task: tasks/get shows its
// questions, tasks/update answers them and the program — never replayed —
// goes on; tasks/cancel stops one; another principal's task is not
// found; a quick program is answered at once; the methods the extension
// removed are not found, and a request that does not declare it is
// refused.
func TestTasks2026(t *testing.T) {
	t.Parallel()
	url, ticks := task26Server(t, engine.TaskConfig{})
	caps := map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}, "extensions": tasksExt}
	alice := &client26{url: url, token: aliceToken, caps: caps}
	bob := &client26{url: url, token: bobToken, caps: caps}

	t.Run("discover", func(t *testing.T) {
		r := alice.send(t, "server/discover", "", nil)
		var d struct {
			Capabilities map[string]json.RawMessage `json:"capabilities"`
		}
		json.Unmarshal(r.Result, &d)
		if !strings.Contains(string(d.Capabilities["extensions"]), `"io.modelcontextprotocol/tasks":{}`) {
			t.Errorf("server/discover's extensions: %s", d.Capabilities["extensions"])
		}
		if _, ok := d.Capabilities["tasks"]; ok {
			t.Errorf("server/discover still advertises the 2025-11-25 tasks capability: %s", r.Result)
		}
	})

	t.Run("ask, answer, go on", func(t *testing.T) {
		before := ticks.Load()
		created := createdTask(t, alice.execute(t, map[string]any{"code": `
			await test.tick({n: 1});
			const a = await llm.call("Name a colour");
			const ok = await approval.request("Paint it " + a.text + "?", {schema: {type: "object", properties: {sure: {type: "boolean"}}}});
			await test.tick({n: 2});
			return {colour: a.text, ok};`}))
		v := alice.until(t, created.TaskID, "input_required")
		q, ok := v.InputRequests["sample.1"]
		if !ok || !strings.Contains(string(q), `"sampling/createMessage"`) || !strings.Contains(string(q), "Name a colour") {
			t.Fatalf("inputRequests %v, want sample.1, the sampling request", v.InputRequests)
		}
		// An answer to no outstanding question is ignored.
		alice.send(t, "tasks/update", created.TaskID, map[string]any{"taskId": created.TaskID, "inputResponses": map[string]any{"nope": map[string]any{}}})
		r := alice.send(t, "tasks/update", created.TaskID, map[string]any{"taskId": created.TaskID, "inputResponses": map[string]any{
			"sample.1": map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "teal"}, "model": "host-model", "stopReason": "endTurn"}}})
		if r.Error != nil || string(r.Raw["resultType"]) != `"complete"` {
			t.Fatalf("tasks/update: %s %+v", r.Result, r.Error)
		}
		var v2 task26View
		deadline := time.Now().Add(60 * time.Second)
		for {
			v2 = alice.until(t, created.TaskID, "input_required")
			if _, ok := v2.InputRequests["elicit.2"]; ok || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if q := v2.InputRequests["elicit.2"]; !strings.Contains(string(q), "Paint it teal?") {
			t.Fatalf("inputRequests %v, want elicit.2 asking to paint it teal", v2.InputRequests)
		}
		alice.send(t, "tasks/update", created.TaskID, map[string]any{"taskId": created.TaskID, "inputResponses": map[string]any{
			"elicit.2": map[string]any{"action": "accept", "content": map[string]any{"sure": true}}}})
		done := alice.until(t, created.TaskID, "completed")
		rec := taskRecord(t, done)
		if rec.Status != "ok" || string(rec.Result) != `{"colour":"teal","ok":{"action":"accept","content":{"sure":true}}}` {
			t.Fatalf("record %s %+v", rec.Result, rec.Error)
		}
		if n := ticks.Load() - before; n != 2 {
			t.Errorf("test.tick was called %d times, want 2: a task's program is not replayed", n)
		}
		// Another principal's task is no task.
		if _, r := bob.get(t, created.TaskID); r.Error == nil || r.Error.Code != mcp.INVALID_PARAMS {
			t.Errorf("bob's tasks/get of alice's task: %s %+v, want -32602", r.Result, r.Error)
		}
		if r := bob.send(t, "tasks/cancel", created.TaskID, map[string]any{"taskId": created.TaskID}); r.Error == nil || r.Error.Code != mcp.INVALID_PARAMS {
			t.Errorf("bob's tasks/cancel of alice's task: %s %+v, want -32602", r.Result, r.Error)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		before := ticks.Load()
		created := createdTask(t, alice.execute(t, map[string]any{"code": `await approval.request("Wait for me"); await test.tick({n: 3}); return 1;`}))
		alice.until(t, created.TaskID, "input_required")
		if r := alice.send(t, "tasks/cancel", created.TaskID, map[string]any{"taskId": created.TaskID}); r.Error != nil || string(r.Raw["resultType"]) != `"complete"` {
			t.Fatalf("tasks/cancel: %s %+v", r.Result, r.Error)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			v, _ := alice.get(t, created.TaskID)
			if v.Status == "cancelled" {
				if v.Result != nil {
					t.Errorf("a cancelled task has no result: %+v", v.Result)
				}
				break
			}
			if v.Status == "completed" || time.Now().After(deadline) {
				t.Fatalf("task is %s, want cancelled", v.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if ticks.Load() != before {
			t.Errorf("the cancelled program went on")
		}
	})

	t.Run("quick runs answer at once", func(t *testing.T) {
		r := alice.execute(t, map[string]any{"code": `return 6 * 7;`})
		if r.Error != nil || string(r.Raw["resultType"]) != `"complete"` || !strings.Contains(string(r.Raw["structuredContent"]), `"result":42`) {
			t.Fatalf("a quick run: %s %+v", r.Result, r.Error)
		}
	})

	t.Run("without the extension", func(t *testing.T) {
		plain := &client26{url: url, token: aliceToken, caps: map[string]any{"elicitation": map[string]any{}}}
		r := plain.execute(t, map[string]any{"code": `return await approval.request("ok?");`})
		if string(r.Raw["resultType"]) != `"input_required"` {
			t.Errorf("a request without the extension should ask through input_required: %s", r.Result)
		}
		if r := plain.send(t, "tasks/get", "x", map[string]any{"taskId": "x"}); r.Error == nil || r.Error.Code != mcp.MISSING_REQUIRED_CLIENT_CAPABILITY {
			t.Errorf("tasks/get without the extension: %+v, want -32021", r.Error)
		}
	})

	t.Run("removed methods and headers", func(t *testing.T) {
		for _, m := range []string{"tasks/result", "tasks/list"} {
			if r := alice.send(t, m, "x", map[string]any{"taskId": "x"}); r.Error == nil || r.Error.Code != mcp.METHOD_NOT_FOUND {
				t.Errorf("%s: %+v, want -32601", m, r.Error)
			}
		}
		if r := alice.send(t, "tasks/get", "another", map[string]any{"taskId": "x"}); r.Status != http.StatusBadRequest || r.Error == nil || r.Error.Code != mcp.HEADER_MISMATCH {
			t.Errorf("Mcp-Name unlike taskId: HTTP %d %+v, want 400 -32020", r.Status, r.Error)
		}
		if _, r := alice.get(t, "0123456789abcdef0123456789abcdef"); r.Error == nil || r.Error.Code != mcp.INVALID_PARAMS {
			t.Errorf("unknown task: %+v, want -32602", r.Error)
		}
	})
}

// TestTasks2026Bounds: runs that end before they become tasks count
// against no bound, so they never push out a task kept for its result;
// a task that would need to drop a running one is refused at once.
func TestTasks2026Bounds(t *testing.T) {
	t.Parallel()
	url, _ := task26Server(t, engine.TaskConfig{MaxPerPrincipal: 1})
	alice := &client26{url: url, token: aliceToken, caps: map[string]any{"elicitation": map[string]any{}, "extensions": tasksExt}}
	first := createdTask(t, alice.execute(t, map[string]any{"code": `return await approval.request("keep me")`}))
	alice.until(t, first.TaskID, "input_required")
	for range 3 {
		if r := alice.execute(t, map[string]any{"code": `return 1`}); string(r.Raw["resultType"]) != `"complete"` {
			t.Fatalf("a quick run: %s", r.Result)
		}
	}
	if _, r := alice.get(t, first.TaskID); r.Error != nil {
		t.Fatalf("the task was pushed out by quick runs: %+v", r.Error)
	}
	r := alice.execute(t, map[string]any{"code": `return await approval.request("no room")`})
	if string(r.Raw["resultType"]) != `"complete"` || !strings.Contains(string(r.Raw["structuredContent"]), `"busy"`) || !strings.Contains(string(r.Raw["structuredContent"]), "tasks.max_per_principal") {
		t.Fatalf("a task with no room: %s, want busy naming tasks.max_per_principal", r.Result)
	}
}

// TestTasks2026Stdio: the extension over stdio, protocol 2026-07-28
// without a session: a program that asks becomes a task, whose question
// tasks/get shows and tasks/update answers.
func TestTasks2026Stdio(t *testing.T) {
	t.Parallel()
	holdStdio(t)
	srv := newServer(t, mcpserver.Config{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		srv.ServeStdio(context.Background(), inR, outW)
		outW.Close()
		close(done)
	}()
	t.Cleanup(func() { inW.Close(); outR.Close(); <-done })
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	id := 0
	send := func(method string, params map[string]any) map[string]json.RawMessage {
		t.Helper()
		id++
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    mcp.ProtocolVersion20260728,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "pipe", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}, "extensions": tasksExt},
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		if _, err := inW.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
		for sc.Scan() {
			var msg struct {
				ID     int                        `json:"id"`
				Result map[string]json.RawMessage `json:"result"`
				Error  json.RawMessage            `json:"error"`
			}
			if json.Unmarshal(sc.Bytes(), &msg) == nil && msg.ID == id {
				if msg.Error != nil {
					t.Fatalf("%s: %s", method, msg.Error)
				}
				return msg.Result
			}
		}
		t.Fatalf("%s: no answer", method)
		return nil
	}
	res := send("tools/call", map[string]any{"name": "execute_code", "arguments": map[string]any{"code": `return await approval.request("over stdio?")`}})
	var taskID string
	json.Unmarshal(res["taskId"], &taskID)
	if string(res["resultType"]) != `"task"` || taskID == "" || res["content"] != nil {
		t.Fatalf("want a CreateTaskResult: %v", res)
	}
	for {
		res = send("tasks/get", map[string]any{"taskId": taskID})
		if strings.Contains(string(res["inputRequests"]), "over stdio?") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	send("tasks/update", map[string]any{"taskId": taskID, "inputResponses": map[string]any{"elicit.1": map[string]any{"action": "accept", "content": map[string]any{}}}})
	for {
		res = send("tasks/get", map[string]any{"taskId": taskID})
		if string(res["status"]) == `"completed"` {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(string(res["result"]), `\"action\":\"accept\"`) {
		t.Errorf("completed task: %s", res["result"])
	}
}
