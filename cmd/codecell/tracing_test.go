package main

import (
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func TestTracingSwitch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		env     map[string]string
		on      bool
		problem string // in the error
	}{
		{"nothing set", nil, false, ""},
		{"only a service name", map[string]string{"OTEL_SERVICE_NAME": "x"}, false, ""},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true, ""},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true, ""},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false, ""},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false, ""},
		{"sdk not disabled", map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true, ""},
		{"json", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, true, ""},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "4318"},
		{"traces protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, true, ""},
		{"unknown protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "carrier-pigeon"}, false, "unknown protocol"},
		{"other exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, "OTLP only"},
		{"sdk disabled over a bad exporter", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "zipkin"}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			on, err := tracingOn(getenv)
			if on != tc.on {
				t.Errorf("on = %v, want %v", on, tc.on)
			}
			switch {
			case tc.problem == "" && err != nil:
				t.Errorf("error: %v", err)
			case tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
				t.Errorf("error %v, want one that says %q", err, tc.problem)
			}
			if !tc.on && err == nil {
				tp, stop, err := startTracing(t.Context(), getenv, slog.New(slog.DiscardHandler))
				if tp != nil || err != nil {
					t.Errorf("off, yet a provider %v (error %v)", tp, err)
				}
				if err := stop(t.Context()); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// collector is an OTLP/HTTP trace receiver.
type collector struct {
	mu   sync.Mutex
	reqs []*coltracepb.ExportTraceServiceRequest
}

func newCollector(t *testing.T) (*collector, string) {
	t.Helper()
	c := &collector{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not OTLP traces", http.StatusNotFound)
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.reqs = append(c.reqs, &req)
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Write(out)
	}))
	t.Cleanup(ts.Close)
	return c, ts.URL
}

// spans returns the spans received, with their resource's attributes.
func (c *collector) spans() (spans []*tracepb.Span, resource map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	resource = map[string]string{}
	for _, req := range c.reqs {
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				resource[kv.Key] = kv.GetValue().GetStringValue()
			}
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
	}
	return spans, resource
}

// TestTracingExports: with an endpoint set, spans reach an OTLP/HTTP
// collector when tracing stops, under the service's name and version.
func TestTracingExports(t *testing.T) {
	col, url := newCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
	t.Setenv("OTEL_SERVICE_NAME", "")
	tp, stop, err := startTracing(t.Context(), func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url}[k]
	}, slog.New(slog.DiscardHandler))
	if err != nil || tp == nil {
		t.Fatalf("start: %v %v", tp, err)
	}
	_, span := tp.Tracer("test").Start(t.Context(), "one")
	span.End()
	if got, _ := col.spans(); len(got) != 0 {
		t.Errorf("%d spans sent before the flush", len(got))
	}
	if err := stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	spans, res := col.spans()
	if len(spans) != 1 || spans[0].Name != "one" {
		t.Errorf("spans %v", spans)
	}
	if res["service.name"] != "codecell" || res["service.version"] != version {
		t.Errorf("resource %v, want service codecell %s", res, version)
	}
}

// TestServeTraces serves over stdio with traces on: a run's spans reach
// the collector in the trace that the client's _meta named, flushed when
// the server stops.
func TestServeTraces(t *testing.T) {
	t.Parallel()
	col, url := newCollector(t)
	env := append(dataDir(t), "OTEL_EXPORTER_OTLP_ENDPOINT="+url, "OTEL_SERVICE_NAME=codecell-test")
	c, err := client.NewStdioMCPClient(binary, env, "serve", "-log-level", "warn")
	if err != nil {
		t.Fatal(err)
	}
	initialize(t, c)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	req := mcp.CallToolRequest{}
	req.Params.Name = "execute_code"
	req.Params.Arguments = map[string]any{"code": `await util.echo({text: "a secret"}); return 1`}
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Fatalf("execute_code: %v %+v", err, res)
	}
	if err := c.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	var spans []*tracepb.Span
	var resource map[string]string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if spans, resource = col.spans(); len(spans) > 0 {
			break
		}
	}
	// The spans of the call, in the client's trace; other requests
	// (initialize, discovery) have traces of their own.
	names := map[string]bool{}
	for _, s := range spans {
		if string(s.TraceId) == string(mustHex(t, traceID)) {
			names[s.Name] = true
		}
	}
	for _, want := range []string{"mcp.tools/call", "tool.execute_code", "codecell.run", "execute_tool util.echo", "codecell.filter"} {
		if !names[want] {
			t.Errorf("no span %s among %v", want, names)
		}
	}
	if resource["service.name"] != "codecell-test" || resource["service.version"] != testVersion {
		t.Errorf("resource %v", resource)
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
