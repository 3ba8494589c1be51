package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
)

// BenchmarkResumedRun measures a program that makes 10 tool calls (each
// answering 1 KiB) and then one llm.call, answered at once by the client,
// over Streamable HTTP: on protocol 2025-11-25 by a sampling request
// (one tools/call), and on 2026-07-28 by input_required and a retry that
// replays the 10 calls from the journal — kept in the requestState
// ("journal in state", no store) or in the store ("journal in store",
// SQLite). Reported: µs/op (one whole exchange), calls/op (the tool's
// calls: 10 means none was repeated) and state_bytes (the requestState
// the client carries).
//
//	go test -tags sqlite_fts5 -run '^$' -bench ResumedRun -benchtime 100x -count 3 ./mcpserver/
func BenchmarkResumedRun(b *testing.B) {
	h := host{sample: func(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return answer("ok"), nil
	}}
	code := `let n = 0;
		for (let i = 0; i < 10; i++) n += (await crm.page({i})).items.length;
		const a = await llm.call("count " + n);
		return a.text;`
	for _, bc := range []struct {
		name       string
		legacy, st bool
	}{
		{"2025-11-25 sampling", true, false},
		{"2026-07-28 journal in state", false, false},
		{"2026-07-28 journal in store", false, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			reg := tools.NewRegistry()
			if err := builtin.Register(reg); err != nil {
				b.Fatal(err)
			}
			var calls atomic.Int64
			item := strings.Repeat("x", 1000)
			if err := reg.Register(tools.Tool{Name: "crm.page", Summary: "A page.", InputSchema: json.RawMessage(`{"type":"object"}`),
				Annotations: tools.Annotations{ReadOnly: true},
				Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
					calls.Add(1)
					return json.Marshal(map[string]any{"items": []string{item}})
				}}); err != nil {
				b.Fatal(err)
			}
			cfg := mcpserver.Config{
				Limits: engine.Limits{ExecutionsPerMinute: 1 << 30, ExecutionBurst: 1 << 30, ToolCallsPerMinute: 1 << 30, ToolCallBurst: 1 << 30},
				LLM:    engine.LLMConfig{CallsPerMinute: 1 << 30, TokensPerDay: 1 << 50},
			}
			if bc.st {
				st, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "db")}, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { st.Close() })
				cfg.Store = st
			}
			srv, err := mcpserver.New(forTests(b, cfg), reg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { srv.Close() })
			var c *client.Client
			rw := &stateRewriter{}
			if bc.legacy {
				c = startLegacy(b, runtimeTransports[0].connect(b, srv, client.WithSamplingHandler(h)))
			} else {
				ts := httptest.NewServer(srv.Handler())
				b.Cleanup(ts.Close)
				tr, err := transport.NewStreamableHTTP(ts.URL+mcpserver.PathStreamable, transport.WithHTTPBasicClient(&http.Client{Transport: rw}))
				if err != nil {
					b.Fatal(err)
				}
				c = start(b, client.NewClient(tr, client.WithSamplingHandler(h)))
			}
			req := toolCall("execute_code", map[string]any{"code": code})
			calls.Store(0)
			for b.Loop() {
				res, err := c.CallTool(b.Context(), req)
				if err != nil || res.IsError {
					b.Fatalf("%v %s", err, text(res))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/op")
			b.ReportMetric(float64(calls.Load())/float64(b.N), "calls/op")
			b.ReportMetric(float64(len(rw.last())), "state_bytes")
		})
	}
}

// BenchmarkTaskRun measures the same program (10 tool calls of 1 KiB,
// then one llm.call) run as a task of the 2026 tasks extension over
// Streamable HTTP: tools/call (answered with the task once it asks),
// tasks/get until its question shows, tasks/update, tasks/get until it
// completes — the client polling as fast as it can rather than every
// pollIntervalMs. Nothing is replayed: calls/op stays 10. Reported:
// µs/op (one whole exchange), calls/op, requests/op (HTTP requests of
// the exchange).
//
//	go test -tags sqlite_fts5 -run '^$' -bench TaskRun -benchtime 100x -count 3 ./mcpserver/
func BenchmarkTaskRun(b *testing.B) {
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		b.Fatal(err)
	}
	var calls atomic.Int64
	item := strings.Repeat("x", 1000)
	if err := reg.Register(tools.Tool{Name: "crm.page", Summary: "A page.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: tools.Annotations{ReadOnly: true},
		Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			calls.Add(1)
			return json.Marshal(map[string]any{"items": []string{item}})
		}}); err != nil {
		b.Fatal(err)
	}
	srv, err := mcpserver.New(forTests(b, mcpserver.Config{
		Limits: engine.Limits{ExecutionsPerMinute: 1 << 30, ExecutionBurst: 1 << 30, ToolCallsPerMinute: 1 << 30, ToolCallBurst: 1 << 30},
		LLM:    engine.LLMConfig{CallsPerMinute: 1 << 30, TokensPerDay: 1 << 50},
	}), reg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler())
	b.Cleanup(ts.Close)
	c := &client26{url: ts.URL + mcpserver.PathStreamable, caps: map[string]any{"sampling": map[string]any{}, "extensions": tasksExt}}
	code := `let n = 0;
		for (let i = 0; i < 10; i++) n += (await crm.page({i})).items.length;
		const a = await llm.call("count " + n);
		return a.text;`
	poll := func(id string, done func(task26View) bool) int {
		for n := 1; ; n++ {
			v, r := c.get(b, id)
			if r.Error != nil {
				b.Fatalf("tasks/get: %+v", r.Error)
			}
			if done(v) {
				return n
			}
		}
	}
	requests := 0
	calls.Store(0)
	for b.Loop() {
		r := c.execute(b, map[string]any{"code": code})
		var task task26View
		if err := json.Unmarshal(r.Result, &task); err != nil || task.ResultType != "task" {
			b.Fatalf("want a task: %s %+v", r.Result, r.Error)
		}
		requests += 2 + poll(task.TaskID, func(v task26View) bool { return v.InputRequests["sample.1"] != nil })
		c.send(b, "tasks/update", task.TaskID, map[string]any{"taskId": task.TaskID, "inputResponses": map[string]any{
			"sample.1": map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": "ok"}, "model": "m", "stopReason": "endTurn"}}})
		requests += poll(task.TaskID, func(v task26View) bool { return v.Status == "completed" })
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/op")
	b.ReportMetric(float64(calls.Load())/float64(b.N), "calls/op")
	b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
}
