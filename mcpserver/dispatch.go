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
	// track follows what the run received from each source, for the
	// data-flow rules and the output filter; nil tracks nothing.
	track *tracker
	// plan, in a dry run, records the writes instead of making them.
	plan *planRecorder
	// outer is the dispatcher the calls a tool makes for its caller go
	// through (a skill's program, a helper's calls; see tools.Gate): the
	// run's, so that they are audited with it. Nil means this one.
	outer executor.Dispatcher
}

// newRunDispatcher returns the dispatcher of the run execID, whose nested
// calls go through it.
func newRunDispatcher(d dispatcher, execID string) *runDispatcher {
	rd := &runDispatcher{dispatcher: d, execID: execID}
	rd.outer = rd
	return rd
}

// callKey carries, to a tool's handler, the dispatcher that called it:
// its caller's session tokens and the run's flow, for the runtime tools
// that show what they are given to the client (llm, approval).
type callKey struct{}

// dispatcherFrom returns the dispatcher of the call ctx is, if any.
func dispatcherFrom(ctx context.Context) (dispatcher, bool) {
	d, ok := ctx.Value(callKey{}).(dispatcher)
	return d, ok
}

// via is the dispatcher nested calls go through.
func (d dispatcher) via() executor.Dispatcher {
	if d.outer != nil {
		return d.outer
	}
	return d
}

// gated returns ctx for the handler of a call: it carries the caller, the
// dispatcher, and the gate through which the handler calls other tools
// for the caller (a skill's program, a helper's calls), each one more
// call through this same gate.
func (d dispatcher) gated(ctx context.Context) context.Context {
	ctx = tools.WithCaller(ctx, d.caller)
	ctx = context.WithValue(ctx, callKey{}, d)
	via := d.via()
	return tools.WithGate(ctx, func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		out, err := via.Call(ctx, executor.Call{Name: name, Args: args, Run: executor.RunFrom(ctx)})
		var te *tools.Error
		var coded executor.CodedError
		if err != nil && !errors.As(err, &te) && errors.As(err, &coded) {
			// A refusal (a rate limit) keeps its code through the helper.
			err = &tools.Error{Code: coded.ErrorCode(), Tool: name, Message: err.Error(), Err: err}
		}
		return out, err
	})
}

// served says how a call was answered.
type served uint8

const (
	servedLive    served = iota // the tool ran
	servedCached                // from the memo cache (memoize.go)
	servedPlanned               // recorded in a dry run's plan (plan.go)
)

var _ executor.Dispatcher = dispatcher{}

// Call runs a program's tool call.
func (d dispatcher) Call(ctx context.Context, c executor.Call) (json.RawMessage, error) {
	out, how, err := d.call(ctx, c.Name, c.Args)
	if how == servedCached {
		c.MarkCached()
	}
	return out, err
}

func (d dispatcher) call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, served, error) {
	t, _ := d.s.reg.View(d.caller).Get(name)
	helper := t != nil && t.Gated
	// A helper's calls are charged one by one; the helper itself is not.
	if !helper {
		if r := d.s.limits.allowToolCall(ctx, d.caller.Principal, d.local); r != nil {
			d.s.metrics.refusals.WithLabelValues(r.limit).Inc()
			d.s.metrics.toolCalls.WithLabelValues(metricName(d.s.reg, d.caller, name), "rate_limited").Inc()
			return nil, servedLive, r
		}
	}
	asWritten := args // a plan keeps the arguments with their tokens
	var flow *filter.Flow
	if d.track != nil {
		flow = d.track.settled()
	}
	var err error
	if d.s.showsClient(t) {
		// What the client's model or user is shown is never
		// de-tokenised: the tool shows its arguments as the filter
		// shows any output (llm.go, approval.go).
		if flow != nil {
			err = checkFlow(flow, name, args)
		}
	} else {
		args, err = resolveTokens(ctx, d.vault, name, args)
		if err == nil && flow != nil {
			err = checkFlow(flow, name, args)
		}
	}
	if err != nil {
		d.s.metrics.toolCalls.WithLabelValues(metricName(d.s.reg, d.caller, name), tools.CodeOf(err)).Inc()
		if tools.CodeOf(err) == "policy_violation" {
			d.s.log.Warn("a data-flow rule blocked a tool call", "tool", metricName(d.s.reg, d.caller, name), "principal", d.caller.Principal)
		}
		return nil, servedLive, err
	}
	ctx = d.gated(ctx)
	var provenance json.RawMessage
	if flow != nil {
		// What a tool stores (a memory, a workspace file) keeps the
		// sources of the values it was given.
		if p := flow.Provenance(args); !p.IsZero() {
			if b, err := json.Marshal(p); err == nil {
				ctx = memory.WithProvenance(ctx, b)
				provenance = b
			}
		}
	}
	if d.plan.records(t) {
		// A recorded call is checked as a real one would be, so that a
		// plan holds only calls that can run.
		if err := d.s.reg.View(d.caller).Validate(name, args); err != nil {
			return nil, servedLive, err
		}
		var known []filter.Known
		if flow != nil {
			known = flow.KnownIn(args)
		}
		out, err := d.plan.add(t.Name, asWritten, provenance, known)
		d.s.metrics.toolCalls.WithLabelValues(metricName(d.s.reg, d.caller, name), "planned").Inc()
		return out, servedPlanned, err
	}
	var out json.RawMessage
	cached := false
	if helper {
		// A helper's calls come back through this gate, each checked,
		// approved, memoised and observed as a call of its own.
		out, err = d.s.reg.Call(ctx, name, args)
	} else {
		// A call the policy names waits for the user's approval; a
		// plan's writes are approved when they are committed, not
		// when recorded.
		if err := d.approve(ctx, name, asWritten); err != nil {
			d.s.metrics.toolCalls.WithLabelValues(metricName(d.s.reg, d.caller, name), tools.CodeOf(err)).Inc()
			return nil, servedLive, err
		}
		out, cached, err = d.s.memo.call(ctx, t, args, func() (json.RawMessage, error) { return d.s.reg.Call(ctx, name, args) })
		if err == nil && d.track != nil {
			d.track.observe(name, out)
		}
	}
	status, how := "ok", servedLive
	switch {
	case err != nil:
		status = tools.CodeOf(err)
	case cached:
		status, how = "cached", servedCached
	}
	d.s.metrics.toolCalls.WithLabelValues(metricName(d.s.reg, d.caller, name), status).Inc()
	return out, how, err
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
	execID string
	// progress, when set, passes on what tools report of their progress
	// (an upstream server's notifications), as the run's progress.
	progress func(message string, fraction float64)
	// purpose is the run's purpose as execute_code gave it, shown when
	// a call needs approval; llm is its llm budget spent (llm.go, under
	// the llmUsage's lock).
	purpose string
	llm     llmBudget

	mu        sync.Mutex
	calls     []memory.ToolCall
	requests  []memory.HTTPRequest
	artifacts []tools.Artifact
}

// runKey carries the run's dispatcher to the tool handlers it calls, so
// that a skill's nested run makes its calls through it too.
type runKey struct{}

// maxArtifacts bounds the artifacts a run's record lists.
const maxArtifacts = 100

func (d *runDispatcher) Call(ctx context.Context, c executor.Call) (json.RawMessage, error) {
	name, args := c.Name, c.Args
	ctx = context.WithValue(ctx, runKey{}, d)
	start := time.Now()
	ctx, span := d.s.startToolCall(ctx, d.caller, name, args)
	rep := tools.Reporter{Artifact: d.addArtifact, Request: func(q tools.Request) { d.addRequest(q); traceRequest(span, q) }}
	if d.progress != nil {
		rep.Progress = func(message string, fraction float64) {
			if message == "" {
				message = "in progress"
			}
			d.progress(name+": "+message, fraction)
		}
	}
	out, how, err := d.dispatcher.call(tools.WithReporter(ctx, rep), name, args)
	if how == servedCached {
		c.MarkCached()
	}
	endToolCall(span, out, err)
	call := memory.ToolCall{
		ExecutionID: d.execID,
		Tool:        metricName(d.s.reg, d.caller, name),
		ArgsHash:    hashHex(args),
		Status:      "ok",
		Duration:    time.Since(start),
		StartedAt:   start,
		Cached:      how == servedCached,
		Planned:     how == servedPlanned,
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

// nestedDispatcher makes the calls of a skill's run through the run that
// called the skill (or, outside a run, the dispatcher of the call that
// did): as its caller, with its session's tokens, rate limit, origins and
// audit record, depth skills deep.
type nestedDispatcher struct {
	run   executor.Dispatcher
	depth int
}

func (n nestedDispatcher) Call(ctx context.Context, c executor.Call) (json.RawMessage, error) {
	return n.run.Call(context.WithValue(ctx, skillDepthKey{}, n.depth), c)
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

// maxRequests bounds the HTTP requests a run's audit record keeps.
const maxRequests = 10000

// addRequest keeps an HTTP request a tool sent, for the audit log.
func (d *runDispatcher) addRequest(q tools.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.requests) < maxRequests {
		d.requests = append(d.requests, memory.HTTPRequest{ExecutionID: d.execID, Tool: q.Tool, Method: q.Method, Host: q.Host,
			Status: q.Status, Error: q.Error, Attempt: q.Attempt, Duration: q.Duration, StartedAt: q.Started})
	}
}

// auditRequests returns the HTTP requests sent so far.
func (d *runDispatcher) auditRequests() []memory.HTTPRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.requests
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

// tracker is a run's data flow, fed off the call's path: a tool's result
// is observed while the program reads it, and whatever needs the flow
// complete — the next call's check, the filter of any output — waits for
// the observations in progress. On a large result the two then overlap
// instead of adding up.
type tracker struct {
	flow *filter.Flow

	mu      sync.Mutex
	pending []chan struct{}
}

// observe records result as received from source, in the background.
func (t *tracker) observe(source string, result json.RawMessage) {
	data := bytes.Clone(result) // the executor owns result once the call returns
	done := make(chan struct{})
	t.mu.Lock()
	t.pending = append(t.pending, done)
	t.mu.Unlock()
	go func() {
		defer close(done)
		t.flow.Observe(source, data, storedProvenance(data))
	}()
}

// settled waits for the observations in progress and returns the flow.
func (t *tracker) settled() *filter.Flow {
	t.mu.Lock()
	pending := t.pending
	t.pending = nil
	t.mu.Unlock()
	for _, done := range pending {
		<-done
	}
	return t.flow
}

// checkFlow refuses a call whose arguments carry a value a data-flow rule
// forbids sending to the tool.
func checkFlow(flow *filter.Flow, name string, args json.RawMessage) error {
	err := flow.Check(name, args)
	var fe *filter.FlowError
	if errors.As(err, &fe) {
		return &tools.Error{Code: "policy_violation", Tool: name, Message: fe.Error(), Err: err}
	}
	return err
}

// storedProvenance is the union of the provenance fields in the result of
// a tool that reads what was stored (memories, workspace files): the
// sources the stored data came from. Other results carry none.
func storedProvenance(out json.RawMessage) filter.Provenance {
	var p filter.Provenance
	if !bytes.Contains(out, []byte(`"provenance"`)) {
		return p
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "provenance" {
					if b, err := json.Marshal(e); err == nil {
						var q filter.Provenance
						if json.Unmarshal(b, &q) == nil {
							p = p.Union(q)
						}
					}
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	var v any
	if json.Unmarshal(out, &v) == nil {
		walk(v)
	}
	return p
}

// resolveTokens turns the tokens in a call's arguments back into their
// values, under the exfiltration rules.
func resolveTokens(ctx context.Context, v *filter.Vault, name string, args json.RawMessage) (json.RawMessage, error) {
	if v == nil || !bytes.Contains(args, []byte("⟦")) {
		return args, nil
	}
	out, err := v.ResolveContext(ctx, args, name)
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
