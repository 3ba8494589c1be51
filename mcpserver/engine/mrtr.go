package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
)

// Multi round-trip runs (protocol 2026-07-28, SEP-2322). The protocol has
// no server-to-client requests: when a program's llm.* (the client's
// model), approval.request or a call that [approval] required_for guards
// needs the client, the run stops and the request ends with
// input_required, the questions (inputRequests) and a sealed
// requestState (requeststate.go). The client answers and sends the same
// request again with inputResponses and the state; the program runs again
// from the start — replayed:
//
//   - every call it made before is answered from the journal the state
//     carries, with the result it had, and not made again; so is every
//     question the client answered;
//   - Math.random and the clock are pinned to the first attempt's
//     (executor.Request.Pin), so a program that does the same things
//     makes the same calls with the same arguments;
//   - a call that differs from the journal's in its place (another tool,
//     other arguments) fails the run with replay_diverged, as does a run
//     that ends without a call it made before: nothing is made twice and
//     no result is built on answers to other questions.
//
// When a question is asked, the run waits for its other calls in flight
// to finish (and be journaled); a call it makes meanwhile waits too, never
// made, and the program never sees the question fail: it is stopped.

// KindReplayDiverged fails a resumed run that did not do, on replay, what
// it did before.
const KindReplayDiverged executor.Kind = "replay_diverged"

// maxRoundTrips bounds the retries of one run.
const maxRoundTrips = 20

// Resume is what a request of a protocol with multi round-trip requests
// brings to Execute: the answers and the state of a retry (none on the
// first attempt), and what the client declared it can answer.
type Resume struct {
	State     string
	Responses mcp.InputResponses
	// Sampling and Elicitation say the client declared the capability in
	// this request.
	Sampling, Elicitation bool
}

// InputRequired is how a run that needs the client ends on a protocol
// with multi round-trip requests: the surface answers with
// resultType "input_required", these requests and this state.
type InputRequired struct {
	Requests mcp.InputRequests
	State    string
}

// journal is what a run did that a replay must not do again.
type journal struct {
	// Seed and Now pin the program's Math.random and clock.
	Seed uint64 `json:"seed"`
	Now  int64  `json:"now"` // ms since the epoch
	// Calls are the program's calls that finished, in no order.
	Calls []journalCall `json:"calls,omitempty"`
	// Asked are the questions asked so far, by id: a digest of each, so
	// that an answer is used for the same question only. Answers are the
	// client's answers, by id.
	Asked   map[string]string          `json:"asked,omitempty"`
	Answers map[string]json.RawMessage `json:"answers,omitempty"`
	// Pending are the questions of the last attempt: the retry's answers
	// are taken for these only.
	Pending []string `json:"pending,omitempty"`
	// Rounds counts the retries.
	Rounds int `json:"rounds"`
	// LLMCalls and LLMTokens are the run's llm budget spent so far: a
	// run's budget holds over its retries.
	LLMCalls  int `json:"llm_calls,omitempty"`
	LLMTokens int `json:"llm_tokens,omitempty"`
	// Plan is the plan a commit claimed (commit2026.go); nil for a
	// program's run.
	Plan *journalPlan `json:"plan,omitempty"`
}

// journalCall is one finished call of a program: its place, its tool,
// the digest of its arguments as written, and what it returned.
type journalCall struct {
	Seq  int             `json:"q"`
	Tool string          `json:"t"`
	Args string          `json:"a"`
	Out  json.RawMessage `json:"o,omitempty"`
	Err  *journalError   `json:"e,omitempty"`
	// From are the sources the tool's handler said its result's data
	// came from (a skill's saved provenance).
	From *filter.Provenance `json:"f,omitempty"`
	// Seen is what the run's flow observed while the call ran, its own
	// result and those of the calls made inside it (mrtrjournal.go): the
	// replay tells the flow again.
	Seen []journalSeen `json:"s,omitempty"`
}

// journalError is a call's failure as the program saw it.
type journalError struct {
	Message  string          `json:"m"`
	Code     string          `json:"c"`
	Tool     string          `json:"t,omitempty"`
	Problems json.RawMessage `json:"p,omitempty"`
}

// replayedError is a journaled failure, returned again as the program saw
// it the first time.
type replayedError struct{ e *journalError }

func (r replayedError) Error() string     { return r.e.Message }
func (r replayedError) ErrorCode() string { return r.e.Code }
func (r replayedError) ErrorTool() string { return r.e.Tool }
func (r replayedError) ErrorDetails() any {
	if len(r.e.Problems) == 0 {
		return nil
	}
	return r.e.Problems
}

func journalErrorOf(name string, err error) *journalError {
	je := &journalError{Message: err.Error(), Code: tools.CodeToolFailed, Tool: name}
	var ce executor.CodedError
	if errors.As(err, &ce) {
		je.Code = ce.ErrorCode()
		if t := ce.ErrorTool(); t != "" {
			je.Tool = t
		}
	}
	var de interface{ ErrorDetails() any }
	if errors.As(err, &de) {
		if d := de.ErrorDetails(); d != nil {
			je.Problems, _ = json.Marshal(d)
		}
	}
	return je
}

// resumption is a resumable run's state: the journal it replays, what it
// adds to it, and the questions it stops for.
type resumption struct {
	in    Resume
	prior *journal // the journal of the state sent back; empty on the first attempt

	mu       sync.Mutex
	used     []bool        // prior.Calls served
	bySeq    map[int]int   // prior.Calls by Seq
	calls    []journalCall // the calls this attempt made, live
	asks     mcp.InputRequests
	asked    map[string]string
	inflight int // the program's calls in progress
	waiting  int // of which wait: questions, and calls made while stopping
	stopping bool
	diverged error
	stop     context.CancelCauseFunc // ends the run

	// The journal's bound (mrtrjournal.go): max bytes (0: none), kept
	// in the journal, read by the run in all; over once read passes max,
	// and tooBig is the failure of a run over it that asks.
	// lost says an observation came after its call was journaled.
	max, kept, read int
	over, lost      bool
	tooBig          error
}

// errInputRequired is the cause of a run stopped to ask the client.
var errInputRequired = errors.New("the run waits for the client's answers (input_required)")

func newResumption(in Resume, prior *journal) (*resumption, error) {
	if prior == nil {
		var b [8]byte
		_, _ = rand.Read(b[:])
		prior = &journal{Seed: binary.LittleEndian.Uint64(b[:]), Now: time.Now().UnixMilli()}
	} else {
		prior.Rounds++
		if prior.Rounds > maxRoundTrips {
			return nil, refusedState("the run asked the client more than %d times; do less per run", maxRoundTrips)
		}
	}
	r := &resumption{in: in, prior: prior, used: make([]bool, len(prior.Calls)), bySeq: map[int]int{}, asked: map[string]string{}}
	for i, c := range prior.Calls {
		r.bySeq[c.Seq] = i
	}
	for id, d := range prior.Asked {
		r.asked[id] = d
	}
	if prior.Answers == nil {
		prior.Answers = map[string]json.RawMessage{}
	}
	for id, resp := range in.Responses {
		if !slices.Contains(prior.Pending, id) {
			continue // an answer to no open question of this run
		}
		if b, err := json.Marshal(resp); err == nil {
			prior.Answers[id] = b
		}
	}
	return r, nil
}

// pin is the executor's pin of the run.
func (r *resumption) pin() *executor.Pin {
	return &executor.Pin{Seed: r.prior.Seed, Now: time.UnixMilli(r.prior.Now)}
}

// enter starts a program's call; false when the run is stopping, and the
// call must wait, never made.
func (r *resumption) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inflight++
	if r.stopping {
		r.waiting++
		r.check()
		return false
	}
	return true
}

func (r *resumption) leave() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inflight--
	r.check()
}

// check stops the run once it is stopping and no call is in progress but
// those that wait. Under r.mu.
func (r *resumption) check() {
	if r.stopping && r.inflight == r.waiting && r.stop != nil {
		r.stop(errInputRequired)
	}
}

// replay answers a program's call from the journal: ok when it is there;
// an error when the call differs from the one the journal has in its
// place. Seq is the call's place; args its arguments as written.
func (r *resumption) replay(seq int, name string, args json.RawMessage) (out json.RawMessage, err error, ok bool) {
	c, err, ok := r.replayFrom(seq, name, args)
	return c.Out, err, ok
}

// replayFrom is replay, with the call as the journal has it (what the
// flow observed while it ran).
func (r *resumption) replayFrom(seq int, name string, args json.RawMessage) (_ journalCall, err error, ok bool) {
	digest := hashHex(args)
	r.mu.Lock()
	defer r.mu.Unlock()
	serve := func(i int) (journalCall, error, bool) {
		r.used[i] = true
		c := r.prior.Calls[i]
		if c.Err != nil {
			return c, replayedError{c.Err}, true
		}
		return c, nil, true
	}
	i, slot := r.bySeq[seq]
	if slot && !r.used[i] && r.prior.Calls[i].Tool == name && r.prior.Calls[i].Args == digest {
		return serve(i)
	}
	// Calls the program made together may start in another order when
	// their results come back in another: the same call in another place.
	for j, c := range r.prior.Calls {
		if !r.used[j] && c.Tool == name && c.Args == digest {
			return serve(j)
		}
	}
	if slot {
		c := r.prior.Calls[i]
		what := fmt.Sprintf("its call #%d (%s) had other arguments than when it was first made", seq+1, name)
		if c.Tool != name {
			what = fmt.Sprintf("its call #%d was %s, and %s when it was first made", seq+1, name, c.Tool)
		}
		return journalCall{}, r.diverge("%s; a program resumed after input_required must make the same calls with the same arguments", what), false
	}
	return journalCall{}, nil, false
}

// diverge fails the run: it did not do on replay what it did before.
// Under r.mu.
func (r *resumption) diverge(format string, args ...any) error {
	if r.diverged == nil {
		r.diverged = fmt.Errorf("the program did not do on replay what it did before: "+format+". Make it deterministic (no values that change between runs in its calls' arguments), or send the request again without requestState", args...)
		if r.stop != nil {
			r.stop(r.diverged)
		}
	}
	return r.diverged
}

// record journals a finished call that was made live, with what the
// run's flow observed while it ran (seen), within the journal's bound.
func (r *resumption) record(seq int, name string, args, out json.RawMessage, err error, from filter.Provenance, seen *observations) {
	c := journalCall{Seq: seq, Tool: name, Args: hashHex(args), Out: bytes.Clone(out)}
	if !from.IsZero() {
		c.From = &from
	}
	if err != nil {
		c.Out, c.Err = nil, journalErrorOf(name, err)
	}
	var complete bool
	c.Seen, complete = seen.take(c.Out)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keep(c, complete)
}

// ask answers question id from the client's answers, or asks it: the
// call waits for the run to stop, and the run ends with input_required.
// A question whose answer was given for another question fails the run
// (replay_diverged).
func (r *resumption) ask(ctx context.Context, id string, q mcp.InputRequest) (json.RawMessage, error) {
	b, err := json.Marshal(q)
	if err != nil {
		return nil, err
	}
	digest := hashHex(b)
	r.mu.Lock()
	if r.over {
		err := r.journalFull()
		r.mu.Unlock()
		return nil, err
	}
	if d, ok := r.asked[id]; ok && d != digest {
		err := r.diverge("it asked the client another question (%s) than the one the client answered", id)
		r.mu.Unlock()
		return nil, err
	}
	if a, ok := r.prior.Answers[id]; ok {
		r.mu.Unlock()
		return a, nil
	}
	if r.asks == nil {
		r.asks = mcp.InputRequests{}
	}
	r.asks[id] = q
	r.asked[id] = digest
	r.stopping = true
	r.waiting++
	r.check()
	r.mu.Unlock()
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

// end checks a run that finished: a call of the journal it did not make
// again is a divergence. It returns the run's failure, if any.
func (r *resumption) end() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.over && len(r.asks) > 0 {
		r.journalFull()
	}
	if r.tooBig != nil {
		return r.tooBig
	}
	if r.diverged != nil || len(r.asks) > 0 {
		return r.diverged
	}
	var missed []string
	for i, u := range r.used {
		if !u {
			missed = append(missed, fmt.Sprintf("#%d %s", r.prior.Calls[i].Seq+1, r.prior.Calls[i].Tool))
		}
	}
	if len(missed) > 0 {
		sort.Strings(missed)
		return r.diverge("it ended without the calls %v it made before", missed)
	}
	return nil
}

// next is the journal a retry replays: the calls served and made, the
// questions asked and the answers given, and the llm budget spent.
func (r *resumption) next(spent llmBudget) *journal {
	r.mu.Lock()
	defer r.mu.Unlock()
	j := &journal{Seed: r.prior.Seed, Now: r.prior.Now, Rounds: r.prior.Rounds, Asked: r.asked, Answers: r.prior.Answers,
		LLMCalls: spent.calls, LLMTokens: spent.tokens, Plan: r.prior.Plan}
	j.Calls = append(append(j.Calls, r.prior.Calls...), r.calls...)
	for id := range r.asks {
		j.Pending = append(j.Pending, id)
	}
	sort.Strings(j.Pending)
	return j
}

// resumeCall is a program's call of a resumable run: its place, and how
// many questions it asked. A call made inside it — by its tool's handler
// (memory.recall's expand) or its skill's program — has a resumeCall of
// its own whose root is the program's call (nested).
type resumeCall struct {
	seq  int
	root *resumeCall // the program's call; nil for the program's call itself
	// before is how many of the root's inner calls other than questions
	// started before this inner one.
	before int

	mu    sync.Mutex
	asks  map[string]int
	inner int // the root's inner calls other than questions, started
}

// askID names the n-th question of a kind a call asks: the same on replay.
// The questions of the calls inside a program's call are its own.
func (c *resumeCall) askID(kind string) string {
	if c.root != nil {
		return c.root.askID(kind)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.asks == nil {
		c.asks = map[string]int{}
	}
	n := c.asks[kind]
	c.asks[kind]++
	return fmt.Sprintf("c%d.%s.%d", c.seq+1, kind, n)
}

// nested is the resumeCall of a call named name made inside c (by its
// handler or its skill's program); nil when c is nil.
//
// The journal keeps the program's call whole, when it ends: a question
// inside it stops the run, and the retry makes the program's call again,
// its handler answered from the journal when it asks the same question.
// What the handler did before the question is done again, so it may
// only have asked: the count of its other calls (before) lets Can refuse
// a question that follows one.
func (c *resumeCall) nested(name string) *resumeCall {
	if c == nil {
		return nil
	}
	root := c
	if c.root != nil {
		root = c.root
	}
	root.mu.Lock()
	defer root.mu.Unlock()
	n := &resumeCall{seq: root.seq, root: root, before: root.inner}
	if !asksClient(name) {
		root.inner++
	}
	return n
}

// asksClient reports whether the runtime helper name is a question to the
// client, which a retry answers from the journal rather than repeats.
func asksClient(name string) bool {
	switch name {
	case "llm.call", "llm.classify", "llm.extract", "approval.request":
		return true
	}
	return false
}

// resumableCall makes a program's call of a resumable run: from the
// journal when it is there, else through the gate, journaled.
func (p programCalls) resumableCall(ctx context.Context, ec executor.Call) (json.RawMessage, error) {
	r := p.run.resume
	if !r.enter() {
		<-ctx.Done() // the run stops to ask the client: never made
		r.leave()
		return nil, context.Cause(ctx)
	}
	defer r.leave()
	jc, err, ok := r.replayFrom(ec.Seq, ec.Name, ec.Args)
	if ok {
		ec.MarkCached()
		if err := r.replaySeen(p.run, jc, p.g.reg.View(p.run.Caller)); err != nil {
			return nil, err
		}
		return jc.Out, err
	}
	if err != nil {
		return nil, err
	}
	c := &Call{Run: p.run, Name: ec.Name, Args: ec.Args, Exec: ec.Run, resume: &resumeCall{seq: ec.Seq}, seen: &observations{r: r}}
	out, err := p.g.call(ctx, c)
	if c.served == servedCached {
		ec.MarkCached()
	}
	switch {
	case ctx.Err() != nil:
		// Stopped: asked the client, or cut short by the stop; the
		// program never sees this outcome.
	case c.served == servedPlanned || c.served == servedRejected:
		// A dry run's write is recorded again on replay, into the plan
		// of the attempt that finishes.
	default:
		r.record(ec.Seq, ec.Name, ec.Args, out, err, c.sources, c.seen)
	}
	return out, err
}

// askingKey carries, in a runtime helper's context, the call it answers:
// the Client that asks the client of a resumable run finds it there.
type askingKey struct{}

func withAsking(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, askingKey{}, c)
}

func askingFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(askingKey{}).(*Call)
	return c
}

// roundTrips is the Client of the runtime helpers: a resumable run's
// questions go into the run's journal (ask), any other to the surface's
// Client.
type roundTrips struct{ Client }

func (t roundTrips) resumable(ctx context.Context) *Call {
	if c := askingFrom(ctx); c != nil && c.Run != nil && c.Run.resume != nil {
		return c
	}
	return nil
}

func (t roundTrips) Can(ctx context.Context, tool string, what Capability) error {
	c := t.resumable(ctx)
	if c == nil {
		return t.Client.Can(ctx, tool, what)
	}
	in := c.Run.resume.in
	if (what == Sampling && !in.Sampling) || (what == Elicitation && !in.Elicitation) {
		return &tools.Error{Code: CodeCapabilityMissing, Tool: tool, Message: fmt.Sprintf("the MCP client did not declare the %s capability in this request (clientCapabilities in _meta): declare it so that programs can ask the client through input_required", what)}
	}
	if c.resume == nil || c.resume.before > 0 {
		return &tools.Error{Code: CodeCapabilityMissing, Tool: tool, Err: ErrNotAskableHere, Message: fmt.Sprintf("on protocol %s a tool or a skill asks the client (%s) only before its other calls; make the call from the program itself, or declare the tasks extension", "2026-07-28", what)}
	}
	return nil
}

func (t roundTrips) Sample(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	c := t.resumable(ctx)
	if c == nil {
		return t.Client.Sample(ctx, req)
	}
	if err := t.Can(ctx, "llm", Sampling); err != nil {
		return nil, err
	}
	a, err := c.Run.resume.ask(ctx, c.resume.askID("sample"), mcp.NewSamplingInputRequest(req.CreateMessageParams))
	if err != nil {
		return nil, err
	}
	var res mcp.CreateMessageResult
	if err := json.Unmarshal(a, &res); err != nil {
		return nil, fmt.Errorf("the client's answer to the sampling request: %w", err)
	}
	return &res, nil
}

func (t roundTrips) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	c := t.resumable(ctx)
	if c == nil {
		return t.Client.Elicit(ctx, req)
	}
	if err := t.Can(ctx, "approval", Elicitation); err != nil {
		return nil, err
	}
	a, err := c.Run.resume.ask(ctx, c.resume.askID("elicit"), mcp.NewElicitationInputRequest(req.Params))
	if err != nil {
		return nil, err
	}
	var res mcp.ElicitationResult
	if err := json.Unmarshal(a, &res); err != nil {
		return nil, fmt.Errorf("the client's answer to the elicitation request: %w", err)
	}
	return &res, nil
}

// stoppedToAsk reports whether err ended a call because its run stopped
// to ask the client.
func stoppedToAsk(err error) bool { return errors.Is(err, errInputRequired) }

// refund takes back what begin charged for a call that asked the client
// and was stopped: it is charged when it is answered, on the retry.
func (u *llmUsage) refund(run *runLog, principal string, estimate int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if p := u.principals[principal]; p != nil {
		p.minuteCalls = max(p.minuteCalls-1, 0) // the minute or the day may have turned
		p.dayTokens = max(p.dayTokens-estimate, 0)
	}
	if run != nil {
		run.llm.calls--
		run.llm.tokens -= estimate
	}
}

// startResume opens a resumable run's journal: a new one on the first
// attempt, the state's on a retry; the run's llm budget goes on from the
// state's.
func (e *Engine) startResume(ctx context.Context, x Execution, run *Run) (*resumption, error) {
	var prior *journal
	if x.Resume.State != "" {
		var err error
		if prior, err = e.states.open(ctx, x.Caller.Principal, x, x.Resume.State); err != nil {
			return nil, err
		}
	} else if len(x.Resume.Responses) > 0 {
		return nil, refusedState("inputResponses came without the requestState they answer")
	}
	r, err := newResumption(*x.Resume, prior)
	if err != nil {
		return nil, err
	}
	run.log.llm = llmBudget{calls: r.prior.LLMCalls, tokens: r.prior.LLMTokens}
	max := e.cfg.Limits.withDefaults().MaxJournalBytes
	if e.cfg.Store != nil {
		max = min(max, e.cfg.Cache.MaxValueBytes) // the store keeps it as a cache entry
	}
	r.limit(max)
	return r, nil
}

// endResume turns a resumable run's end into input_required when it
// stopped to ask, or into replay_diverged when it did not replay.
func (e *Engine) endResume(ctx context.Context, run *Run, x Execution, res *executor.Result) (*InputRequired, error) {
	r := run.resume
	if err := r.end(); err != nil {
		kind := KindReplayDiverged
		if err == r.tooBig {
			kind = KindJournalLimit
		}
		res.Status = executor.StatusError
		res.Value = nil
		res.Error = &executor.Error{Kind: kind, Message: err.Error()}
		return nil, nil
	}
	r.mu.Lock()
	asks := r.asks
	r.mu.Unlock()
	if len(asks) == 0 {
		return nil, nil
	}
	e.llm.use.mu.Lock()
	spent := run.log.llm
	e.llm.use.mu.Unlock()
	state, err := e.states.seal(ctx, x.Caller.Principal, x, r.next(spent))
	if err != nil {
		return nil, err
	}
	return &InputRequired{Requests: asks, State: state}, nil
}

// refusedResume is the record of a retry that cannot resume: its state is
// refused (KindStateRefused), or its journal could not be read.
func (e *Engine) refusedResume(err error) (*Record, []byte) {
	var se *stateError
	if errors.As(err, &se) {
		return e.RefusedRecord(KindStateRefused, se.msg)
	}
	e.log.Error("open request state", "err", err)
	return e.RefusedRecord(executor.KindInternal, "the run's journal could not be read; send the request again without requestState: "+err.Error())
}
