package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// dispatcher runs tool calls — a program's, or direct mode's — against the
// registry as one caller, under the caller's rate limit, with the tokens
// in their arguments resolved against the caller's session.
type dispatcher struct {
	s      *Server
	caller tools.Caller
	local  bool          // the caller is the local user over stdio
	vault  *filter.Vault // the caller's session's tokens
}

var _ executor.Dispatcher = dispatcher{}

func (d dispatcher) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	if r := d.s.limits.allowToolCall(d.caller.Principal, d.local); r != nil {
		d.s.metrics.refusals.WithLabelValues(r.limit).Inc()
		d.s.metrics.toolCalls.WithLabelValues(metricName(d.s.reg, d.caller, name), "rate_limited").Inc()
		return nil, r
	}
	args, err := resolveTokens(d.vault, name, args)
	if err != nil {
		d.s.metrics.toolCalls.WithLabelValues(metricName(d.s.reg, d.caller, name), tools.CodeOf(err)).Inc()
		if tools.CodeOf(err) == "policy_violation" {
			d.s.log.Warn("exfiltration rule blocked a tool call", "tool", name, "principal", d.caller.Principal)
		}
		return nil, err
	}
	out, err := d.s.reg.Call(tools.WithCaller(ctx, d.caller), name, args)
	status := "ok"
	if err != nil {
		status = tools.CodeOf(err)
	}
	d.s.metrics.toolCalls.WithLabelValues(metricName(d.s.reg, d.caller, name), status).Inc()
	return out, err
}

// metricName keeps metric labels bounded and free of what programs made
// up: global tools are labelled by name; names the catalogue does not have
// and a principal's own tools (skills) are one label each.
func metricName(reg *tools.Registry, c tools.Caller, name string) string {
	if _, known := reg.Get(name); known {
		return name
	}
	if t, known := reg.View(c).Get(name); known {
		if g, ok := reg.Get(t.Name); ok && g == t {
			return t.Name // a global tool called by one of its aliases
		}
		return "(own tool)"
	}
	return "(unknown)"
}

// runDispatcher is the dispatcher of one run: it also remembers what each
// call returned, for the filter, and keeps the calls for the audit record.
type runDispatcher struct {
	dispatcher
	execID  string
	origins *origins
	// progress, when set, passes on what tools report of their progress
	// (an upstream server's notifications), as the run's progress.
	progress func(message string, fraction float64)

	mu        sync.Mutex
	calls     []memory.ToolCall
	artifacts []tools.Artifact
}

// maxArtifacts bounds the artifacts a run's record lists.
const maxArtifacts = 100

func (d *runDispatcher) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	start := time.Now()
	rep := tools.Reporter{Artifact: d.addArtifact}
	if d.progress != nil {
		rep.Progress = func(message string, fraction float64) {
			if message == "" {
				message = "in progress"
			}
			d.progress(name+": "+message, fraction)
		}
	}
	out, err := d.dispatcher.Call(tools.WithReporter(ctx, rep), name, args)
	if err == nil {
		d.origins.add(name, out)
	}
	call := memory.ToolCall{
		ExecutionID: d.execID,
		Tool:        name,
		ArgsHash:    hashHex(args),
		Status:      "ok",
		Duration:    time.Since(start),
		StartedAt:   start,
	}
	if err != nil {
		call.Status = "error"
		call.ErrorCode = errorCode(err)
	}
	d.mu.Lock()
	d.calls = append(d.calls, call)
	d.mu.Unlock()
	return out, err
}

// addArtifact records an artifact a tool made: binary contents of an
// upstream result, kept as stored results.
func (d *runDispatcher) addArtifact(a tools.Artifact) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.artifacts) < maxArtifacts {
		d.artifacts = append(d.artifacts, a)
	}
}

// runArtifacts returns the artifacts made so far.
func (d *runDispatcher) runArtifacts() []tools.Artifact {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.artifacts
}

// auditCalls returns the calls made so far.
func (d *runDispatcher) auditCalls() []memory.ToolCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls
}

// errorCode is the code of a tool-call error, for messages.
func errorCode(err error) string {
	var r *refusal
	if errors.As(err, &r) {
		return r.ErrorCode()
	}
	return tools.CodeOf(err)
}

// origins remembers the results of a run's tool calls, so the filter can
// tell which tools a sensitive value came from. It keeps up to
// maxOriginBytes; beyond that, sources of later values are unknown.
type origins struct {
	mu      sync.Mutex
	results []origin
	bytes   int
}

type origin struct {
	tool   string
	result []byte
}

const maxOriginBytes = 16 << 20

func (o *origins) add(tool string, result []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.bytes+len(result) > maxOriginBytes {
		return
	}
	o.results = append(o.results, origin{tool, result})
	o.bytes += len(result)
}

// sources returns the tools whose results contained value.
func (o *origins) sources(value string) []string {
	enc, err := json.Marshal(value)
	if err != nil || len(enc) < 2 {
		return nil
	}
	needle := enc[1 : len(enc)-1]
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, r := range o.results {
		if !seen[r.tool] && bytes.Contains(r.result, needle) {
			seen[r.tool] = true
			out = append(out, r.tool)
		}
	}
	return out
}

// resolveTokens turns the tokens in a call's arguments back into their
// values, under the exfiltration rules.
func resolveTokens(v *filter.Vault, name string, args json.RawMessage) (json.RawMessage, error) {
	if v == nil || !bytes.Contains(args, []byte("⟦")) {
		return args, nil
	}
	out, err := v.Resolve(args, name)
	var re *filter.RuleError
	var te *filter.TokenError
	switch {
	case errors.As(err, &re):
		return nil, &tools.Error{Code: "policy_violation", Tool: name, Message: re.Error(), Err: err}
	case errors.As(err, &te):
		return nil, &tools.Error{Code: tools.CodeInvalidArguments, Tool: name, Message: te.Error(), Err: err}
	case err != nil:
		return nil, &tools.Error{Code: tools.CodeInvalidArguments, Tool: name, Message: "arguments: " + err.Error(), Err: err}
	}
	return out, nil
}
