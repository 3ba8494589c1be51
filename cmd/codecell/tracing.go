package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Traces are off unless the standard OpenTelemetry variables ask for
// them: an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), or OTEL_TRACES_EXPORTER=otlp for
// the default endpoint (http://localhost:4318). OTEL_SDK_DISABLED=true
// and OTEL_TRACES_EXPORTER=none turn them off whatever else is set.
// They are sent over OTLP/HTTP; the exporter reads the rest of the
// OTEL_EXPORTER_OTLP_* variables (headers, TLS, compression, timeout),
// the SDK OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG and OTEL_BSP_*,
// and the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.

// tracingOn reports whether the environment asks for traces, and why not
// when it asks for what codecell cannot do.
func tracingOn(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	var on bool
	switch exp := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); exp {
	case "none":
		return false, nil
	case "otlp":
		on = true
	case "":
		on = getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: codecell exports traces over OTLP only (otlp, or none)", exp)
	}
	if !on {
		return false, nil
	}
	// The traces' own variable wins over the general one.
	name := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	p := strings.TrimSpace(getenv(name))
	if p == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		p = strings.TrimSpace(getenv(name))
	}
	switch p {
	case "", "http/protobuf", "http/json":
		return true, nil
	case "grpc":
		return false, fmt.Errorf("%s=grpc: codecell sends OTLP over HTTP; use http/protobuf and the collector's HTTP port (4318)", name)
	}
	return false, fmt.Errorf("%s=%s: unknown protocol (http/protobuf or http/json)", name, p)
}

// startTracing makes the tracer provider the environment asks for, or
// none (nil) when traces are off. stop flushes the spans still buffered
// and ends the exporter; call it once the server has stopped.
func startTracing(ctx context.Context, getenv func(string) string, log *slog.Logger) (_ trace.TracerProvider, stop func(context.Context) error, err error) {
	none := func(context.Context) error { return nil }
	on, err := tracingOn(getenv)
	if err != nil || !on {
		return nil, none, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, none, fmt.Errorf("trace exporter: %w", err)
	}
	// Later detectors win: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// over codecell's defaults.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "codecell"), attribute.String("service.version", version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		// A partial resource (a malformed OTEL_RESOURCE_ATTRIBUTES) still
		// names the service.
		log.Warn("trace resource", "err", err)
	}
	log = log.With("component", "tracing")
	// Export failures reach OpenTelemetry's error handler, which is the
	// process's: send them to the log rather than to the standard logger.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("export traces", "err", err) }))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	log.Info("exporting traces over OTLP/HTTP")
	return tp, func(ctx context.Context) error {
		if err := tp.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("flush traces: %w", err)
		}
		return nil
	}, nil
}

// flushTraces sends the spans still buffered, for at most
// traceFlushTimeout.
func flushTraces(stop func(context.Context) error, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
	defer cancel()
	if err := stop(ctx); err != nil {
		log.Warn("flush traces", "err", err)
	}
}

// traceFlushTimeout bounds the wait for the trace collector at shutdown.
const traceFlushTimeout = 5 * time.Second
