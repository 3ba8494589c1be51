package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/tools"
)

// secret is planted in a traced run's code, arguments, results, console
// and error messages; no span may carry it.
const secret = "PLANTED-7f3a9c1e5b"

// tracedServer serves three vault tools — read returns the secret, write
// sends an HTTP request, fail fails with the secret in its message —
// with a store, traced into an in-memory exporter.
func tracedServer(t testing.TB, tp trace.TracerProvider) *mcpserver.Server {
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	err = reg.Register(
		tools.Tool{Name: "vault.read", Summary: "Read a value.", InputSchema: anyObject, Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.Marshal(map[string]string{"value": secret})
		}},
		tools.Tool{Name: "vault.write", Summary: "Write a value.", InputSchema: anyObject, Handler: func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
			tools.ReportRequest(ctx, tools.Request{Tool: "vault.write", Method: "PUT", Host: "vault.example", Status: 204, Attempt: 1,
				Duration: time.Millisecond, Started: time.Now()})
			return json.RawMessage(`{"ok":true}`), nil
		}},
		tools.Tool{Name: "vault.fail", Summary: "Fail.", InputSchema: anyObject, Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, &tools.Error{Code: "http_500", Message: "the vault said " + secret}
		}},
	)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(forTests(t, mcpserver.Config{Store: st, TracerProvider: tp}), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		st.Close()
	})
	return srv
}

// tracedProgram makes three tool calls, the last failing, and returns
// more than the budget lets through, so that the result is stored.
const tracedProgram = `
const key = "` + secret + `";
console.log("read", key);
const a = await vault.read({key});
await vault.write({value: a.value + key});
try { await vault.fail({why: key}); } catch (e) { console.log(String(e)); }
return Array.from({length: 300}, (_, i) => a.value + i);
`

var anyObject = json.RawMessage(`{"type":"object","additionalProperties":true}`)

func newRecorder() (*tracetest.InMemoryExporter, *sdktrace.TracerProvider) {
	exp := tracetest.NewInMemoryExporter()
	return exp, sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
}

// spansByName indexes spans by name; names seen twice fail the test.
func spansByName(t *testing.T, spans tracetest.SpanStubs) map[string]tracetest.SpanStub {
	t.Helper()
	m := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		if _, dup := m[s.Name]; dup {
			t.Errorf("two spans named %q", s.Name)
		}
		m[s.Name] = s
	}
	return m
}

func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// dump is everything a span exports that text could hide in.
func dump(s tracetest.SpanStub) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%s|", s.Name, s.Status.Description, s.SpanContext.TraceState())
	for _, kv := range s.Attributes {
		fmt.Fprintf(&b, "%s=%s;", kv.Key, kv.Value.String())
	}
	for _, e := range s.Events {
		fmt.Fprintf(&b, "event %s:", e.Name)
		for _, kv := range e.Attributes {
			fmt.Fprintf(&b, "%s=%s;", kv.Key, kv.Value.String())
		}
	}
	for _, l := range s.Links {
		for _, kv := range l.Attributes {
			fmt.Fprintf(&b, "link %s=%s;", kv.Key, kv.Value.String())
		}
	}
	return b.String()
}

func TestTraceOfARun(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			exp, tp := newRecorder()
			srv := tracedServer(t, tp)
			c := start(t, tr.connect(t, srv))
			exp.Reset() // initialize's spans
			res, rec := execute(t, c, map[string]any{"code": tracedProgram, "budget_bytes": 1024})
			if res.IsError || rec == nil || rec.ResultURI == "" {
				t.Fatalf("run: error %v, record %+v", res.IsError, rec)
			}
			spans := exp.GetSpans()
			byName := spansByName(t, spans)
			for _, s := range spans {
				if !s.EndTime.After(s.StartTime) && !s.EndTime.Equal(s.StartTime) {
					t.Errorf("span %s ends before it starts", s.Name)
				}
				if d := dump(s); strings.Contains(d, secret) {
					t.Errorf("span %s carries the secret: %s", s.Name, d)
				}
			}
			tree := []struct{ name, parent string }{
				{"tool.execute_code", "mcp.tools/call"},
				{"codecell.run", "tool.execute_code"},
				{"codecell.queue_wait", "codecell.run"},
				{"execute_tool vault.read", "codecell.run"},
				{"execute_tool vault.write", "codecell.run"},
				{"execute_tool vault.fail", "codecell.run"},
				{"codecell.filter", "codecell.run"},
				{"codecell.store", "codecell.run"},
			}
			root, ok := byName["mcp.tools/call"]
			if !ok {
				t.Fatalf("no request span; spans: %v", names(spans))
			}
			if root.SpanKind != trace.SpanKindServer || root.Parent.IsValid() {
				t.Errorf("request span: kind %v, parent %v; want a server span at the root", root.SpanKind, root.Parent)
			}
			for _, e := range tree {
				s, ok := byName[e.name]
				if !ok {
					t.Errorf("no span %s; spans: %v", e.name, names(spans))
					continue
				}
				p := byName[e.parent]
				if s.Parent.SpanID() != p.SpanContext.SpanID() || s.SpanContext.TraceID() != root.SpanContext.TraceID() {
					t.Errorf("span %s: parent %s, want %s", e.name, s.Parent.SpanID(), e.parent)
				}
			}
			if len(spans) != len(tree)+1 {
				t.Errorf("%d spans, want %d: %v", len(spans), len(tree)+1, names(spans))
			}

			run := byName["codecell.run"]
			for key, want := range map[string]string{
				"codecell.run.status":     "ok",
				"codecell.run.tool_calls": "3",
				"codecell.language":       "javascript",
				"codecell.code.bytes":     fmt.Sprint(len(tracedProgram)),
			} {
				if v, _ := attr(run, key); v.String() != want {
					t.Errorf("run span %s = %q, want %q", key, v.String(), want)
				}
			}
			if v, _ := attr(run, "codecell.execution.id"); v.AsString() == "" {
				t.Error("the run span has no execution id")
			}
			if run.Status.Code == codes.Error {
				t.Errorf("run span status %v, want unset", run.Status)
			}
			fail := byName["execute_tool vault.fail"]
			if fail.Status.Code != codes.Error || fail.Status.Description != "http_500" {
				t.Errorf("failing call's status %+v, want error http_500", fail.Status)
			}
			if v, _ := attr(fail, "codecell.error.code"); v.AsString() != "http_500" {
				t.Errorf("failing call's error code %q", v.String())
			}
			for _, name := range []string{"execute_tool vault.read", "execute_tool vault.write"} {
				s := byName[name]
				if s.Status.Code == codes.Error {
					t.Errorf("%s: status %+v", name, s.Status)
				}
				if v, _ := attr(s, "gen_ai.tool.name"); v.AsString() != strings.TrimPrefix(name, "execute_tool ") {
					t.Errorf("%s: tool name %q", name, v.String())
				}
			}
			if v, _ := attr(byName["execute_tool vault.read"], "codecell.tool.result_bytes"); v.AsInt64() != int64(len(`{"value":"`+secret+`"}`)) {
				t.Errorf("read's result bytes %d", v.AsInt64())
			}
			write := byName["execute_tool vault.write"]
			if len(write.Events) != 1 || write.Events[0].Name != "http.request" {
				t.Errorf("write's events %+v, want its HTTP request", write.Events)
			} else if got := dump(tracetest.SpanStub{Attributes: write.Events[0].Attributes}); !strings.Contains(got, "http.request.method=PUT") ||
				!strings.Contains(got, "server.address=vault.example") || !strings.Contains(got, "http.response.status_code=204") {
				t.Errorf("write's HTTP request event: %s", got)
			}
			if _, ok := attr(byName["codecell.queue_wait"], "codecell.queue_wait_ms"); !ok {
				t.Error("the queue wait span does not say how long the run waited")
			}
			if v, _ := attr(byName["codecell.store"], "codecell.store.bytes"); v.AsInt64() <= 1024 {
				t.Errorf("the store span stored %d bytes, want the whole result", v.AsInt64())
			}
			if v, _ := attr(byName["codecell.filter"], "codecell.filter.cut"); !v.AsBool() {
				t.Error("the filter span does not say it cut the result")
			}
			if v, _ := attr(byName["tool.execute_code"], "gen_ai.tool.name"); v.AsString() != "execute_code" {
				t.Errorf("tool span's tool %q", v.String())
			}
		})
	}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// TestTraceKeepsPayloadsOut plants the secret in every place a program
// or a client controls text — code, console, arguments, results, tool
// and run error messages, a made-up tool name, the method of a request
// — and finds it in no span.
func TestTraceKeepsPayloadsOut(t *testing.T) {
	exp, tp := newRecorder()
	srv := tracedServer(t, tp)
	c := start(t, transports[1].connect(t, srv))
	for name, code := range map[string]string{
		"tool calls":    tracedProgram,
		"unknown tool":  `await tools.call("vault.` + secret + `", {k: "` + secret + `"})`,
		"thrown error":  `throw new Error("` + secret + `")`,
		"syntax error":  `let ` + secret + ` = ;`,
		"error value":   `const e = new Error("x"); e.code = "` + secret + `"; throw e`,
		"console error": `console.error("` + secret + `"); return 1`,
	} {
		if res, _ := execute(t, c, map[string]any{"code": code}); res == nil {
			t.Fatalf("%s: no result", name)
		}
	}
	// A client's own text in a tool's name and a request's method.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "vault." + secret
	if _, err := c.CallTool(ctx, req); err == nil {
		t.Error("a made-up MCP tool was called")
	}
	srv.MCP().HandleMessage(ctx, json.RawMessage(`{"jsonrpc":"2.0","id":99,"method":"`+secret+`/x","params":{}}`))
	spans := exp.GetSpans()
	if len(spans) == 0 {
		t.Fatal("no spans")
	}
	unknown := false
	for _, s := range spans {
		if d := dump(s); strings.Contains(d, secret) {
			t.Errorf("span %s carries the secret: %s", s.Name, d)
		}
		unknown = unknown || s.Name == "execute_tool (unknown)"
	}
	if !unknown {
		t.Errorf("no span of the unknown tool's call: %v", names(spans))
	}
}

// TestTraceContinuesClientContext: a traceparent in the request's _meta,
// or else in its HTTP header, makes the request's spans part of the
// client's trace; _meta wins over the header.
func TestTraceContinuesClientContext(t *testing.T) {
	const (
		metaTrace   = "4bf92f3577b34da6a3ce929d0e0e4736"
		metaSpan    = "00f067aa0ba902b7"
		headerTrace = "0af7651916cd43dd8448eb211c80319c"
		headerSpan  = "b7ad6b7169203331"
	)
	tp := func(traceID, spanID string) string { return "00-" + traceID + "-" + spanID + "-01" }
	for _, tc := range []struct {
		name         string
		meta, header string
		trace, span  string
	}{
		{"meta", tp(metaTrace, metaSpan), "", metaTrace, metaSpan},
		{"header", "", tp(headerTrace, headerSpan), headerTrace, headerSpan},
		{"meta over header", tp(metaTrace, metaSpan), tp(headerTrace, headerSpan), metaTrace, metaSpan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp, provider := newRecorder()
			srv := tracedServer(t, provider)
			ts := httptest.NewServer(srv.Handler())
			t.Cleanup(ts.Close)
			var opts []transport.StreamableHTTPCOption
			if tc.header != "" {
				opts = append(opts, transport.WithHTTPHeaders(map[string]string{"traceparent": tc.header}))
			}
			c, err := client.NewStreamableHttpClient(ts.URL+mcpserver.PathStreamable, opts...)
			if err != nil {
				t.Fatal(err)
			}
			start(t, c)
			exp.Reset()
			req := mcp.CallToolRequest{}
			req.Params.Name = "execute_code"
			req.Params.Arguments = map[string]any{"code": "await vault.write({}); return 1"}
			if tc.meta != "" {
				req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": tc.meta, "tracestate": "client=1"}}
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			if res, err := c.CallTool(ctx, req); err != nil || res.IsError {
				t.Fatalf("call: %v %v", err, res)
			}
			spans := exp.GetSpans()
			byName := spansByName(t, spans)
			root := byName["mcp.tools/call"]
			if got := root.Parent.SpanID().String(); got != tc.span || !root.Parent.IsRemote() {
				t.Errorf("request span's parent %s (remote %v), want the client's %s", got, root.Parent.IsRemote(), tc.span)
			}
			for _, name := range []string{"mcp.tools/call", "codecell.run", "execute_tool vault.write"} {
				if got := byName[name].SpanContext.TraceID().String(); got != tc.trace {
					t.Errorf("%s in trace %s, want the client's %s", name, got, tc.trace)
				}
			}
		})
	}
}

// TestTraceOff: a server without a tracer provider makes no span, even
// under a caller's recording span.
func TestTraceOff(t *testing.T) {
	exp, tp := newRecorder()
	srv := tracedServer(t, nil)
	ctx, parent := tp.Tracer("test").Start(t.Context(), "caller")
	rec, _ := srv.Execute(ctx, engine.Execution{Code: tracedProgram})
	parent.End()
	if rec.Status != "ok" {
		t.Fatalf("run: %+v", rec.Error)
	}
	if got := names(exp.GetSpans()); len(got) != 1 {
		t.Errorf("spans %v, want only the caller's", got)
	}
}
