package mcpserver

import (
	"context"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	mcptracing "github.com/mark3labs/mcp-go/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/codecell/codecell/mcpserver/engine"
)

// Traces. A request is a span (mcp-go's, through mcpTracer), a run is a
// span under it, and each tool call of the run a span under that; the
// queue wait, the filter and the store are spans of the run (the
// engine's, engine/tracing.go). Spans carry
// names, sizes, kinds, codes and durations, never what a program or a
// tool wrote: no arguments, results, console lines, error messages or
// code, and no principal (a name that may be personal data: the run's
// execution id links the span to the audit log, which has it).

// tracerName names the instrumentation scope of the spans.
const tracerName = "github.com/codecell/codecell/mcpserver"

// Span attribute keys of requests' spans (engine/tracing.go has the
// runs').
const (
	attrToolName    = attribute.Key("gen_ai.tool.name")
	attrSessionHash = attribute.Key("codecell.session.hash")
	attrMethod      = attribute.Key("mcp.method.name")
)

// newTracer returns the server's tracer: a no-op one when tp is nil.
func newTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(tracerName)
}

// traceRequests makes mcp-go open a span per request on the server's
// tracer, continuing the W3C trace context of the request's
// params._meta, or else of its HTTP traceparent header. Without a
// tracer provider it leaves mcp-go's no-op tracing alone.
func (s *Server) traceRequests() {
	if s.cfg.TracerProvider == nil {
		return
	}
	tc := propagation.TraceContext{}
	for _, o := range []server.ServerOption{
		server.WithTracer(mcpTracer{s.tracer}),
		server.WithMetaPropagator(metaPropagator{tc}),
		server.WithPropagator(headerPropagator{tc}),
	} {
		o(s.mcp)
	}
}

// mcpTracer is mcp-go's tracer over OpenTelemetry. mcp-go names spans
// and sets attributes from what the client sent; mcpTracer keeps only
// what is not the client's free text: known methods and protocol
// versions, the session as a hash, no error descriptions.
type mcpTracer struct{ t trace.Tracer }

func (m mcpTracer) Start(ctx context.Context, name string, kind mcptracing.SpanKind, attrs ...mcptracing.Attribute) (context.Context, mcptracing.Span) {
	ctx, span := m.t.Start(ctx, requestSpanName(name), trace.WithSpanKind(spanKind(kind)), trace.WithAttributes(requestAttributes(attrs)...))
	sp := mcpSpan{span}
	return mcptracing.ContextWithSpan(ctx, sp), sp
}

// requestSpanName keeps mcp-go's span names for known methods; tool
// spans ("tool." and the name) are only opened for registered tools.
func requestSpanName(name string) string {
	if m, ok := strings.CutPrefix(name, "mcp."); ok {
		return "mcp." + knownMethod(m)
	}
	return name
}

// knownMethods are the MCP methods a span may be named after; any other
// method a client sends is "(other)".
var knownMethods = map[mcp.MCPMethod]bool{
	mcp.MethodInitialize: true, mcp.MethodPing: true, mcp.MethodResourcesList: true, mcp.MethodResourcesTemplatesList: true,
	mcp.MethodResourcesRead: true, mcp.MethodResourcesSubscribe: true, mcp.MethodResourcesUnsubscribe: true,
	mcp.MethodPromptsList: true, mcp.MethodPromptsGet: true, mcp.MethodToolsList: true, mcp.MethodToolsCall: true,
	mcp.MethodSetLogLevel: true, mcp.MethodTasksGet: true, mcp.MethodTasksList: true, mcp.MethodTasksResult: true,
	mcp.MethodTasksCancel: true, mcp.MethodCompletionComplete: true, mcp.MethodServerDiscover: true,
	mcp.MethodSubscriptionsListen: true,
}

func knownMethod(m string) string {
	if knownMethods[mcp.MCPMethod(m)] {
		return m
	}
	return "(other)"
}

// requestAttributes translates mcp-go's attributes.
func requestAttributes(attrs []mcptracing.Attribute) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(attrs))
	for _, a := range attrs {
		switch a.Key {
		case "mcp.method":
			out = append(out, attrMethod.String(knownMethod(a.Value)))
		case "mcp.session.id":
			// A session id lets whoever holds it speak in the session.
			out = append(out, attrSessionHash.String(engine.SessionHash(a.Value)))
		case "mcp.protocol.version":
			v := a.Value
			if !mcp.IsValidProtocolVersion(v) {
				v = "(other)"
			}
			out = append(out, attribute.String("mcp.protocol.version", v))
		case "mcp.tool.name":
			// Set by mcp-go's tool middleware, for registered tools only.
			out = append(out, attrToolName.String(a.Value))
		}
	}
	return out
}

func spanKind(k mcptracing.SpanKind) trace.SpanKind {
	switch k {
	case mcptracing.SpanKindServer:
		return trace.SpanKindServer
	case mcptracing.SpanKindClient:
		return trace.SpanKindClient
	case mcptracing.SpanKindInternal:
		return trace.SpanKindInternal
	}
	return trace.SpanKindUnspecified
}

// mcpSpan is an OpenTelemetry span as mcp-go's. mcp-go describes errors
// with their messages, which may carry what the client sent: the status
// keeps the code and drops the description.
type mcpSpan struct{ s trace.Span }

func (m mcpSpan) SetAttributes(attrs ...mcptracing.Attribute) {
	if m.s.IsRecording() {
		m.s.SetAttributes(requestAttributes(attrs)...)
	}
}

func (m mcpSpan) RecordError(error) { m.s.SetStatus(codes.Error, "") }

func (m mcpSpan) SetStatus(code mcptracing.StatusCode, _ string) {
	switch code {
	case mcptracing.StatusError:
		m.s.SetStatus(codes.Error, "")
	case mcptracing.StatusOK:
		m.s.SetStatus(codes.Ok, "")
	}
}

func (m mcpSpan) End() { m.s.End() }

// metaPropagator reads and writes W3C trace context (traceparent,
// tracestate) in a request's params._meta.
type metaPropagator struct{ p propagation.TextMapPropagator }

func (m metaPropagator) ExtractMeta(ctx context.Context, meta *mcp.Meta) context.Context {
	if meta == nil || len(meta.AdditionalFields) == 0 {
		return ctx
	}
	carrier := propagation.MapCarrier{}
	for _, k := range m.p.Fields() {
		if v, ok := meta.AdditionalFields[k].(string); ok {
			carrier[k] = v
		}
	}
	if len(carrier) == 0 {
		return ctx
	}
	return m.p.Extract(ctx, carrier)
}

func (m metaPropagator) InjectMeta(ctx context.Context, meta *mcp.Meta) *mcp.Meta {
	carrier := propagation.MapCarrier{}
	m.p.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return meta
	}
	if meta == nil {
		meta = &mcp.Meta{}
	}
	if meta.AdditionalFields == nil {
		meta.AdditionalFields = map[string]any{}
	}
	for k, v := range carrier {
		meta.AdditionalFields[k] = v
	}
	return meta
}

// headerPropagator reads W3C trace context from HTTP headers, unless
// the request's _meta carried one: mcp-go reads _meta first, and the
// context a request names for itself wins over its transport's.
type headerPropagator struct{ p propagation.TextMapPropagator }

func (h headerPropagator) Extract(ctx context.Context, headers http.Header) context.Context {
	if trace.SpanContextFromContext(ctx).IsRemote() {
		return ctx
	}
	return h.p.Extract(ctx, propagation.HeaderCarrier(headers))
}

func (h headerPropagator) Inject(ctx context.Context, headers http.Header) {
	h.p.Inject(ctx, propagation.HeaderCarrier(headers))
}
