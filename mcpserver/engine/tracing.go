package engine

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/tools"
)

// Traces. A request is a span (mcp-go's, opened by mcpserver), a run is
// a span under it, and each tool call of the run a span under that; the
// queue wait, the filter and the store are spans of the run. Spans carry
// names, sizes, kinds, codes and durations, never what a program or a
// tool wrote: no arguments, results, console lines, error messages or
// code, and no principal (a name that may be personal data: the run's
// execution id links the span to the audit log, which has it).

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

// runSpan is the span of one run.
type runSpan struct {
	trace.Span
	tracer trace.Tracer
	ctx    context.Context
	queued time.Time
}

// startRun opens the span of a run.
func startRun(ctx context.Context, tracer trace.Tracer, execID string, lang executor.Language, code string) (context.Context, *runSpan) {
	ctx, span := tracer.Start(ctx, "codecell.run", trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		if lang == "" {
			lang = executor.JavaScript
		}
		span.SetAttributes(attrExecutionID.String(execID), attrLanguage.String(string(lang)), attrCodeBytes.Int(len(code)))
	}
	return ctx, &runSpan{Span: span, tracer: tracer, ctx: ctx}
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
func startFilter(ctx context.Context, tracer trace.Tracer, res *executor.Result) trace.Span {
	_, span := tracer.Start(ctx, "codecell.filter")
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
func startStore(ctx context.Context, tracer trace.Tracer, n int) trace.Span {
	_, span := tracer.Start(ctx, "codecell.store", trace.WithAttributes(attrBytes.Int(n)))
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

// endStore closes the store's span.
func endStore(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "store failed")
	}
	span.End()
}
