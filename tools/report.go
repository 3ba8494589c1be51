package tools

import (
	"context"
	"time"
)

// Reporter receives what a tool reports while it runs, beside its result:
// how far it got, and artifacts — binary or large outputs kept elsewhere
// (as stored results) that the result only refers to. The caller of a
// tool sets one on the call's context (WithReporter); a handler reports
// through ReportProgress and ReportArtifact, which do nothing when none
// is set. Either function may be nil. They may be called from any
// goroutine, several at once, and must not block.
type Reporter struct {
	Progress func(message string, fraction float64)
	Artifact func(Artifact)
	// Request receives a record of each HTTP request the call sent, for
	// the audit log.
	Request func(Request)
}

// Request is what the audit log keeps of one HTTP request a tool sent (one
// attempt): never its headers, body, query string or credentials.
type Request struct {
	Tool     string
	Method   string
	Host     string
	Status   int    // 0 when no response came
	Error    string // a word such as "timeout", or ""
	Attempt  int
	Duration time.Duration
	Started  time.Time
}

// Artifact is an output a tool kept outside its result, such as the image
// of an upstream server's result stored as a result of its own.
type Artifact struct {
	// Tool is the qualified name of the tool that made it.
	Tool string `json:"tool"`
	// Type is what it is: image, audio, resource.
	Type string `json:"type"`
	// URI is where it can be read, such as codecell://results/{id}.
	URI string `json:"uri"`
	// MimeType is its content type.
	MimeType string `json:"mimeType,omitempty"`
	// Bytes is its size.
	Bytes int64 `json:"bytes"`
}

type reporterKey struct{}

// WithReporter returns a context whose tool calls report to r.
func WithReporter(ctx context.Context, r Reporter) context.Context {
	return context.WithValue(ctx, reporterKey{}, r)
}

// ReportProgress tells the caller how far the call got: fraction in 0..1,
// or -1 when unknown, and a short message.
func ReportProgress(ctx context.Context, message string, fraction float64) {
	if r, ok := ctx.Value(reporterKey{}).(Reporter); ok && r.Progress != nil {
		r.Progress(message, fraction)
	}
}

// ReportRequest tells the caller of an HTTP request the call sent.
func ReportRequest(ctx context.Context, q Request) {
	if r, ok := ctx.Value(reporterKey{}).(Reporter); ok && r.Request != nil {
		r.Request(q)
	}
}

// ReportArtifact tells the caller of an artifact the call made.
func ReportArtifact(ctx context.Context, a Artifact) {
	if r, ok := ctx.Value(reporterKey{}).(Reporter); ok && r.Artifact != nil {
		r.Artifact(a)
	}
}
