package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
)

// The gate's own stages; the approver (approval.go) and the memoizer
// (memoize.go) are beside what they serve.

// recorder keeps each call of a run that keeps them (Run.log): its span,
// what the tool reports while it runs (artifacts, HTTP requests,
// progress), and its row of the audit log.
type recorder struct {
	tracer trace.Tracer
	reg    *tools.Registry
}

func (r recorder) pass(ctx context.Context, c *Call, next next) (json.RawMessage, error) {
	log := c.Run.log
	if log == nil {
		return next.call(ctx, c)
	}
	name, args := c.Name, c.Args
	start := time.Now()
	ctx, span := startToolCall(ctx, r.tracer, r.reg, c.Run.Caller, name, args)
	rep := tools.Reporter{Artifact: log.addArtifact, Request: func(q tools.Request) { log.addRequest(q); traceRequest(span, q) }}
	if progress := c.Run.progress; progress != nil {
		rep.Progress = func(message string, fraction float64) {
			if message == "" {
				message = "in progress"
			}
			progress(name+": "+message, fraction)
		}
	}
	out, err := next.call(tools.WithReporter(ctx, rep), c)
	endToolCall(span, out, err)
	row := memory.ToolCall{
		ExecutionID: log.execID,
		Tool:        c.metricLabel(r.reg),
		ArgsHash:    hashHex(args),
		Status:      "ok",
		Duration:    time.Since(start),
		StartedAt:   start,
		Cached:      c.served == servedCached,
		Planned:     c.served == servedPlanned,
	}
	if err != nil {
		row.Status = "error"
		row.ErrorCode = errorCode(err)
	}
	log.addCall(row)
	return out, err
}

// counter counts every call in the tool-call metric, by tool and
// outcome: ok, cached, planned, or the error's code.
type counter struct {
	metrics *Metrics
	reg     *tools.Registry
}

func (m counter) pass(ctx context.Context, c *Call, next next) (json.RawMessage, error) {
	out, err := next.call(ctx, c)
	status := "ok"
	switch {
	case c.served == servedRejected:
		return out, err
	case c.served == servedPlanned:
		status = "planned"
	case err != nil:
		status = errorCode(err)
	case c.served == servedCached:
		status = "cached"
	}
	m.metrics.toolCalls.WithLabelValues(c.metricLabel(m.reg), status).Inc()
	return out, err
}

// rateLimit charges each call to its caller's tool-call rate limit. A
// helper's calls are charged one by one; the helper itself is not.
type rateLimit struct {
	limits  *Limiter
	metrics *Metrics
}

func (l rateLimit) pass(ctx context.Context, c *Call, next next) (json.RawMessage, error) {
	if !c.gated() {
		if r := l.limits.allowToolCall(ctx, c.Run.Caller.Principal, c.Run.Local); r != nil {
			l.metrics.refusals.WithLabelValues(r.limit).Inc()
			return nil, r
		}
	}
	return next.call(ctx, c)
}

// dataFlow resolves the tokens in a call's arguments against the
// caller's session, under the exfiltration rules, and checks them
// against the data-flow rules and what the run has received; the
// arguments of a tool that shows them to the client's model or user
// (showsClient) keep their tokens. What a tool stores keeps the sources
// of the values it was given (memory.WithProvenance).
type dataFlow struct {
	reg *tools.Registry
	log *slog.Logger
}

func (f dataFlow) pass(ctx context.Context, c *Call, next next) (json.RawMessage, error) {
	flow := c.Run.settled()
	var err error
	if showsClient(c.Tool) {
		// What the client's model or user is shown is never
		// de-tokenised: the tool shows its arguments as the filter
		// shows any output (llm.go, approval.go).
		if flow != nil {
			err = checkFlow(flow, c.Name, c.Args)
		}
	} else {
		args := c.Args
		c.Args, err = resolveTokens(ctx, c.Run.vault, c.Name, c.Args)
		if err == nil && flow != nil {
			err = checkFlow(flow, c.Name, c.Args)
		}
		if err == nil {
			// The values resolved keep the sources of their tokens,
			// through a tool that echoes them (issue 19, H6).
			observeResolved(flow, c.Run.vault, c.Name, args, c.seen)
		}
	}
	if err != nil {
		if tools.CodeOf(err) == "policy_violation" {
			f.log.Warn("a data-flow rule blocked a tool call", "tool", c.metricLabel(f.reg), "principal", c.Run.Caller.Principal)
		}
		return nil, err
	}
	if flow != nil {
		// Found where a write keeps them (the store, a memoised result,
		// a plan's step), not for every call: it reads the arguments
		// whole, 22% of a 30 MB webhook call's CPU (attack25 F7).
		args := c.Args
		c.provenance = sync.OnceValue(func() json.RawMessage {
			if p := flow.Provenance(args); !p.IsZero() {
				if b, err := json.Marshal(p); err == nil {
					return b
				}
			}
			return nil
		})
		ctx = memory.WithProvenanceOf(ctx, c.provenance)
	}
	return next.call(ctx, c)
}

// binding gives the tool's handler its context: the caller it acts for
// (tools.WithCaller), and this gate, through which it calls other tools
// for that caller (a skill's program, a helper's calls; tools.WithGate).
type binding struct{ g *gate }

func (b binding) pass(ctx context.Context, c *Call, next next) (json.RawMessage, error) {
	ctx = tools.WithCaller(ctx, c.Run.Caller)
	ctx = tools.WithGate(ctx, b.g.through(c))
	return next.call(ctx, c)
}

// planner records, in a dry run, each write instead of making it. A
// recorded call is checked as a real one would be, so that a plan holds
// only calls that can run; a plan's writes are approved when they are
// committed, not when recorded.
type planner struct {
	reg     *tools.Registry
	results *resultBytes
}

func (pl planner) pass(ctx context.Context, c *Call, next next) (json.RawMessage, error) {
	p := c.Run.plan
	if !p.records(c.Tool) {
		return next.call(ctx, c)
	}
	if err := pl.results.validateHeld(ctx, pl.reg.View(c.Run.Caller), c); err != nil {
		c.served = servedRejected
		return nil, err
	}
	var known []filter.Known
	if c.Run.flow != nil {
		known = c.Run.flow.flow.KnownIn(c.Args)
	}
	c.served = servedPlanned
	return p.add(c.Tool.Name, c.Written, c.provenanceOf(), known) // the arguments with their tokens
}

// observer follows what each call returns into the run's data flow
// (tracker), before the call returns it, holding what that costs: a
// result whose observation cannot be held fails its call. A program's
// call hands its result to the sandbox first (Call.prepare), which
// builds it into the VM while the flow observes it: the program has it
// only once the call returns it, and a refused one never.
type observer struct{ results *resultBytes }

func (o observer) pass(ctx context.Context, c *Call, next next) (json.RawMessage, error) {
	if c.gated() || c.Run.flow == nil {
		return next.call(ctx, c)
	}
	from := &resultSources{}
	out, err := next.call(context.WithValue(ctx, resultSourcesKey{}, from), c)
	if err != nil {
		return out, observeFailure(ctx, o.results, c, from.get(), err)
	}
	if err == nil {
		// A store tool's result says which sources its data came from,
		// where the tool puts them (storedOf); the journal of a
		// resumable run keeps them with the result.
		st := storedOf(c.Tool, out)
		c.sources = from.get().Union(st.from)
		if c.prepare != nil {
			c.prepare(out)
		}
		hold, keep, release := o.results.holdObserving(ctx, c, len(out))
		err = c.Run.flow.observe(c.Name, out, c.sources, hold, keep)
		release()
		if err != nil {
			return nil, observeError(c.Name, err)
		}
		c.seen.note(c.Name, out, c.sources)
		// What the store gave back encoded is known decoded too, before
		// the program has it (issue 19, attack21 P2).
		if err := observeDecoded(ctx, o.results, c, out, st); err != nil {
			return nil, err
		}
	}
	return out, err
}

// observeFailure observes what err, the error of c's tool, carries to
// the program — the ToolError's message: an upstream's isError text, an
// API's error body, what a skill's program threw — as a result is, under
// the sources its handler named (from), before the program has it; and
// returns err, or the refusal of what observing it costs. An error of a
// call refused before its tool was called (c.held is set by resultBytes,
// the last stage) is the server's own and carries no source's data.
// Without it, an honest CRM's "contact AC-99-1234567 is locked" passed
// every rule once the program caught it (issue 19, attack25 F11).
func observeFailure(ctx context.Context, r *resultBytes, c *Call, from filter.Provenance, err error) error {
	if c.held == nil {
		return err
	}
	text := err.Error()
	c.sources = from
	hold, keep, release := r.holdObserving(ctx, c, len(text))
	oerr := c.Run.flow.observeNow(c.Name, text, from, hold, keep)
	release()
	if oerr != nil {
		return observeError(c.Name, oerr)
	}
	if c.seen != nil {
		// The journal keeps JSON: the text as a string.
		j, _ := json.Marshal(text)
		c.seen.note(c.Name, j, from)
	}
	return err
}

// observeDecoded observes the stored data a store tool's result out gave
// back encoded (st.decoded), decoded, under the result's sources — when
// it has any: data of none holds no value a rule follows. The call holds
// what the decoded texts take beside its result's copies first (a
// decoded 8 MiB file is up to 24 MiB of texts), so that reads at once
// cannot take more than their holds; a refusal fails the call, as does
// one of what observing them costs (holdObserving).
func observeDecoded(ctx context.Context, r *resultBytes, c *Call, out json.RawMessage, st stored) error {
	if len(st.decoded) == 0 || st.from.IsZero() {
		return nil
	}
	var texts []string
	size := tools.ResultCopies * int64(len(out))
	for _, d := range st.decoded {
		size += 3 * int64(len(d)) // the bytes, and their texts at most twice
	}
	if c.held != nil {
		if err := c.held.raise(ctx, size, fmt.Sprintf("the data of this result of %s, decoded from base64 for the data-flow rules, takes the server about %s with the result", c.Name, formatSize(size))); err != nil {
			return err
		}
	}
	for _, d := range st.decoded {
		texts = append(texts, decodedTexts(d)...)
	}
	for _, text := range texts {
		hold, keep, release := r.holdObserving(ctx, c, len(text))
		err := c.Run.flow.observeNow(c.Name, text, c.sources, hold, keep)
		release()
		if err != nil {
			return observeError(c.Name, err)
		}
		if c.seen != nil {
			// The journal keeps JSON: the text as a string.
			j, _ := json.Marshal(text)
			c.seen.note(c.Name, j, c.sources)
		}
	}
	return nil
}

// resultSources is where a tool's handler says which sources the data of
// its result came from, when its result does not say it itself (a
// skill's program returns what its code holds, which came from the
// sources it was saved with).
type resultSources struct {
	mu sync.Mutex
	p  filter.Provenance
}

type resultSourcesKey struct{}

func (r *resultSources) get() filter.Provenance {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.p
}

// addResultSources tells the observer of the call ctx is for that its
// result holds data of the sources p (a provenance as the store keeps
// it); nothing outside a call the run's flow follows.
func addResultSources(ctx context.Context, p json.RawMessage) {
	r, _ := ctx.Value(resultSourcesKey{}).(*resultSources)
	if r == nil || len(p) == 0 {
		return
	}
	var q filter.Provenance
	if json.Unmarshal(p, &q) != nil {
		return
	}
	r.mu.Lock()
	r.p = r.p.Union(q)
	r.mu.Unlock()
}
