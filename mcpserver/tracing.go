package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	mcptracing "github.com/mark3labs/mcp-go/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/tools"
)

// Traces. A request is a span (mcp-go's, through mcpTracer), a run is a
// span under it, and each tool call of the run a span under that; the
// queue wait, the filter and the store are spans of the run. Spans carry
// names, sizes, kinds, codes and durations, never what a program or a
// tool wrote: no arguments, results, console lines, error messages or
// code, and no principal (a name that may be personal data: the run's
// execution id links the span to the audit log, which has it).

// tracerName names the instrumentation scope of the spans.
const tracerName = "github.com/codecell/codecell/mcpserver"

// Span attribute keys. Tool calls follow OpenTelemetry's GenAI
// conventions (execute_tool); the rest is codecell's own.
const (
	attrExecutionID    = attribute.Key("codecell.execution.id")
	attrLanguage       = attribute.Key("codecell.language")
	attrCodeBytes      = attribute.Key("codecell.code.bytes")
	attrStatus         = attribute.Key("codecell.run.status")
	attrErrorKind      = attribute.Key("error.type")
	attrDurationMS     = attribute.Key("codecell.run.duration_ms")
	attrQueueWaitMS    = attribute.Key("codecell.queue_wait_ms")
	attrToolCalls      = attribute.Key("codecell.run.tool_calls")
	attrFromToolsBytes = attribute.Key("codecell.run.from_tools_bytes")
	attrResultBytes    = attribute.Key("codecell.run.result_bytes")
	attrReturnedBytes  = attribute.Key("codecell.run.returned_bytes")
	attrOperation      = attribute.Key("gen_ai.operation.name")
	attrToolName       = attribute.Key("gen_ai.tool.name")
	attrArgsBytes      = attribute.Key("codecell.tool.args_bytes")
	attrOutBytes       = attribute.Key("codecell.tool.result_bytes")
	attrErrorCode      = attribute.Key("codecell.error.code")
	attrFindings       = attribute.Key("codecell.filter.findings")
	attrTokenized      = attribute.Key("codecell.filter.tokenized")
	attrCut            = attribute.Key("codecell.filter.cut")
	attrInBytes        = attribute.Key("codecell.filter.in_bytes")
	attrBytes          = attribute.Key("codecell.store.bytes")
	attrSessionHash    = attribute.Key("codecell.session.hash")
	attrMethod         = attribute.Key("mcp.method.name")
	attrHTTPMethod     = attribute.Key("http.request.method")
	attrHTTPHost       = attribute.Key("server.address")
	attrHTTPStatus     = attribute.Key("http.response.status_code")
	attrHTTPAttempt    = attribute.Key("codecell.http.attempt")
	attrHTTPError      = attribute.Key("codecell.http.error")
	attrHTTPDurationMS = attribute.Key("codecell.http.duration_ms")
)

// unknownTool stands for a tool name the caller's catalogue does not
// have: the program made it up, and it may be any text.
const unknownTool = "(unknown)"

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

// runSpan is the span of one run.
type runSpan struct {
	trace.Span
	tracer trace.Tracer
	ctx    context.Context
	queued time.Time
}

// startRun opens the span of a run.
func (s *Server) startRun(ctx context.Context, execID string, x Execution) (context.Context, *runSpan) {
	ctx, span := s.tracer.Start(ctx, "codecell.run", trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		lang := x.Language
		if lang == "" {
			lang = executor.JavaScript
		}
		span.SetAttributes(attrExecutionID.String(execID), attrLanguage.String(string(lang)), attrCodeBytes.Int(len(x.Code)))
	}
	return ctx, &runSpan{Span: span, tracer: s.tracer, ctx: ctx}
}

// running marks the moment the run asks the executor for a VM.
func (r *runSpan) running() { r.queued = time.Now() }

// ran records what the executor reports of the run: its queue wait as a
// span of its own, its status, error kind and sizes.
func (r *runSpan) ran(res *executor.Result) {
	if !r.IsRecording() {
		return
	}
	t := res.Telemetry
	if !r.queued.IsZero() {
		wait := time.Duration(t.QueueWaitMS * float64(time.Millisecond))
		_, q := r.tracer.Start(r.ctx, "codecell.queue_wait", trace.WithTimestamp(r.queued))
		q.SetAttributes(attrQueueWaitMS.Float64(t.QueueWaitMS))
		if res.Error != nil && res.Error.Kind == executor.KindBusy {
			q.SetStatus(codes.Error, string(executor.KindBusy))
		}
		q.End(trace.WithTimestamp(r.queued.Add(wait)))
	}
	r.SetAttributes(attrStatus.String(string(res.Status)), attrDurationMS.Float64(t.DurationMS), attrQueueWaitMS.Float64(t.QueueWaitMS),
		attrToolCalls.Int(t.ToolCalls), attrFromToolsBytes.Int(t.BytesFromTools), attrResultBytes.Int(t.ResultBytes))
	if res.Error != nil {
		// The kind is one of the executor's; the message is the
		// program's, and stays out.
		r.SetAttributes(attrErrorKind.String(string(res.Error.Kind)))
		r.SetStatus(codes.Error, string(res.Error.Kind))
	}
}

// end closes the span with the size of what the model reads.
func (r *runSpan) end(body []byte) {
	if r.IsRecording() {
		r.SetAttributes(attrReturnedBytes.Int(len(body)))
	}
	r.End()
}

// startFilter opens the span of the filter over a run's output.
func (s *Server) startFilter(ctx context.Context, res *executor.Result) trace.Span {
	_, span := s.tracer.Start(ctx, "codecell.filter")
	if span.IsRecording() {
		n := len(res.Value)
		for _, l := range res.Logs {
			n += len(l.Message)
		}
		span.SetAttributes(attrInBytes.Int(n))
	}
	return span
}

// endFilter closes the filter's span with what it found (counts by
// class, never the values) and whether it cut the result.
func endFilter(span trace.Span, sum *FilterSummary, err error) {
	if span.IsRecording() {
		var n, tokenized int
		var cut bool
		if sum != nil {
			for _, c := range sum.Findings {
				n += c
			}
			tokenized, cut = sum.Tokenized, sum.Cut
		}
		span.SetAttributes(attrFindings.Int(n), attrTokenized.Int(tokenized), attrCut.Bool(cut))
		if err != nil {
			span.SetStatus(codes.Error, "filter failed")
		}
	}
	span.End()
}

// startStore opens the span of storing a run's whole result.
func (s *Server) startStore(ctx context.Context, n int) trace.Span {
	_, span := s.tracer.Start(ctx, "codecell.store", trace.WithAttributes(attrBytes.Int(n)))
	return span
}

// startToolCall opens the span of a tool call of a run. The tool is named
// as the caller's catalogue names it; a name it does not have is
// unknownTool.
func startToolCall(ctx context.Context, tracer trace.Tracer, reg *tools.Registry, c tools.Caller, name string, args json.RawMessage) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		// Not sampled, or no tracing: no span, at no cost.
		return ctx, trace.SpanFromContext(ctx)
	}
	shown := unknownTool
	if _, ok := reg.View(c).Get(name); ok {
		shown = name
	}
	return tracer.Start(ctx, "execute_tool "+shown, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrOperation.String("execute_tool"), attrToolName.String(shown), attrArgsBytes.Int(len(args))))
}

// endToolCall closes a tool call's span with the size of its result or
// the code of its error.
func endToolCall(span trace.Span, out json.RawMessage, err error) {
	if !span.IsRecording() {
		return
	}
	if err != nil {
		code := errorCode(err)
		span.SetAttributes(attrErrorCode.String(code), attrErrorKind.String(code))
		span.SetStatus(codes.Error, code)
	} else {
		span.SetAttributes(attrOutBytes.Int(len(out)))
	}
	span.End()
}

// traceRequest adds an HTTP request a tool sent to its call's span, as
// an event: method, host, status, attempt and duration.
func traceRequest(span trace.Span, q tools.Request) {
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{attrHTTPMethod.String(q.Method), attrHTTPHost.String(q.Host), attrHTTPAttempt.Int(q.Attempt),
		attrHTTPDurationMS.Float64(float64(q.Duration) / float64(time.Millisecond))}
	if q.Status != 0 {
		attrs = append(attrs, attrHTTPStatus.Int(q.Status))
	}
	if q.Error != "" {
		attrs = append(attrs, attrHTTPError.String(q.Error))
	}
	span.AddEvent("http.request", trace.WithTimestamp(q.Started), trace.WithAttributes(attrs...))
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
			out = append(out, attrSessionHash.String(sessionHash(a.Value)))
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

// endStore closes the store's span.
func endStore(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "store failed")
	}
	span.End()
}
