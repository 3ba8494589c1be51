package engine

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
)

// The gate. Every tool call a run makes — its program's, a helper's (an
// OpenAPI source's paginate, through tools.CallThrough), a skill's
// program's, a commit's step, or direct mode's one call — passes the same
// stages, in this order, each a value of its own (stages.go):
//
//	recorder   a run's calls: span, reports, audit row   (Run.log)
//	counter    the tool-call metric, by outcome
//	rateLimit  the caller's tool-call rate limit          (not helpers)
//	argsHeld   what large arguments cost the server, held (argsheld.go)
//	dataFlow   tokens resolved, data-flow rules, provenance
//	binding    the handler's context: caller, and this gate for its own calls
//	planner    a dry run records the writes               (Run.plan)
//	approver   calls the policy names wait for the user   (not helpers)
//	observer   what a call returns is followed            (not helpers)
//	memo       memoised tools answer from the cache       (not helpers)
//	resultBytes  a result's bytes reserved while in flight (inflight.go)
//
// and then the call is answered: by the engine's own runtime helpers
// (llm, approval, skills' administration), handed the call — its run,
// its caller, how deep in skills — as an argument; by any other tool
// through the registry, which resolves the name in the caller's toolset
// and validates the arguments. A stage answers the call itself (a
// refusal, a recorded write, a memoised result) or passes it on to the
// stages after it. Nothing a stage or a helper needs of the run is found
// in the context: a Call carries its Run.

// Call is one tool call at the gate: what every stage and every runtime
// helper is handed.
type Call struct {
	// Run is the run the call is made in.
	Run *Run
	// Name is the tool's name as the program wrote it; Tool is the tool
	// it names in the caller's catalogue, nil when it names none.
	Name string
	Tool *tools.Tool
	// Args are the arguments, as the program wrote them until dataFlow
	// resolves their tokens; Written keeps them as written.
	Args, Written json.RawMessage
	// provenance names the sources of the values in Args, when the run
	// follows its data flow and they came from any (provenanceOf); set
	// by dataFlow, found on first use.
	provenance func() json.RawMessage
	// Depth is how deep in skills the call is made: 0 for a program's
	// own calls, one more for each skill's program it is made from.
	Depth int
	// Exec is the executor's run the call comes from, nil outside a
	// program: where a helper parks while it waits on the client, and
	// the parent of a skill's run.
	Exec *executor.Run

	// served says how the call was answered.
	served served
	// label is the tool's name in metrics and the audit log (metricName),
	// worked out once.
	label string
	// sources are where its handler said the result's data came from
	// (observer), for a resumable run's journal.
	sources filter.Provenance
	// resume is a resumable run's call's place (mrtr.go): a program's
	// call's, or one made inside it; nil for any other call.
	resume *resumeCall
	// seen keeps, for a resumable run's journal, what the run's flow
	// observes while the program's call runs, the calls made inside it
	// included (mrtrjournal.go); nil when there is no journal.
	seen *observations
	// releases give back what stages reserved for the call (its
	// result's bytes, inflight.go) once the gate hands its result on.
	releases []func()
	// held is what the call holds of the results in flight (set by
	// resultBytes.pass), which a runtime tool raises to filter what the
	// program sent it (filterhold.go).
	held *holding
	// args is what the call's arguments hold while it is in the gate
	// (argsHeld), which the call's other holds cannot wait for: it is
	// given back only when the call is over.
	args *holding
	// handOff, when set, takes what the call holds of its result's bytes
	// in flight once the gate has handed its result on, to give it back
	// when the program's sandbox has the result (a program's call:
	// executor.Call.OnConsumed); delivered says there is a result.
	handOff   func(giveBack func())
	delivered bool
	// prepare, when set, hands the result to the program's sandbox
	// before the observer has followed it (executor.Call.Prepare): the
	// sandbox builds it meanwhile, and the program has it only once the
	// gate returns it.
	prepare func(out json.RawMessage)
}

// provenanceOf returns the sources of the values in c's arguments, as
// the store keeps them; nil when they came from none.
func (c *Call) provenanceOf() json.RawMessage {
	if c.provenance == nil {
		return nil
	}
	return c.provenance()
}

// served says how a call was answered.
type served uint8

const (
	servedLive    served = iota // the tool ran
	servedCached                // from the memo cache (memoize.go)
	servedPlanned               // recorded in a dry run's plan (plan.go)
	// servedRejected: a dry run's write that cannot be recorded (its
	// arguments are invalid), refused before anything else and not
	// counted in the tool-call metric.
	servedRejected
)

// metricLabel returns the tool's name as metrics and the audit log show
// it (metricName): the stages that label a call share one lookup.
func (c *Call) metricLabel(reg *tools.Registry) string {
	if c.label == "" {
		c.label = metricName(reg, c.Run.Caller, c.Name)
	}
	return c.label
}

// gated reports whether the call is a helper's (tools.Tool.Gated): its
// own calls pass the gate each on its own, so it is not rate-limited,
// approved, observed or memoised itself.
func (c *Call) gated() bool { return c.Tool != nil && c.Tool.Gated }

// stage is one step of the gate.
type stage interface {
	// pass answers c itself, or passes it on to the stages after it
	// (next.call).
	pass(ctx context.Context, c *Call, next next) (json.RawMessage, error)
}

// next is the rest of the gate after a stage.
type next struct {
	g *gate
	i int
}

func (n next) call(ctx context.Context, c *Call) (json.RawMessage, error) {
	return n.g.pass(ctx, c, n.i)
}

// helperFunc answers a call of one of the engine's runtime helpers.
type helperFunc func(ctx context.Context, c *Call, args json.RawMessage) (json.RawMessage, error)

// helper is a runtime helper: its declaration in the catalogue and the
// function that answers it.
type helper struct {
	tool tools.Tool
	call helperFunc
}

// bindHelper adapts a typed function to a helperFunc, as tools.Handle
// does for a handler: the arguments are decoded into In, the result
// encoded as JSON.
func bindHelper[In, Out any](fn func(context.Context, *Call, In) (Out, error)) helperFunc {
	return func(ctx context.Context, c *Call, args json.RawMessage) (json.RawMessage, error) {
		return tools.Handle(func(ctx context.Context, in In) (Out, error) { return fn(ctx, c, in) })(ctx, args)
	}
}

// gate runs calls through its stages.
type gate struct {
	reg     *tools.Registry
	stages  []stage
	helpers map[string]helperFunc // by qualified name; filled while the server is made
}

func newGate(reg *tools.Registry) *gate {
	return &gate{reg: reg, helpers: map[string]helperFunc{}}
}

// register adds runtime helpers to the catalogue; the gate answers their
// calls. The registry's handler of a helper answers what reaches it by
// another way (viaGate).
func (g *gate) register(hs ...helper) error {
	ts := make([]tools.Tool, len(hs))
	for i, h := range hs {
		ts[i] = h.tool
		ts[i].Handler = viaGate(h.tool.Name)
	}
	if err := g.reg.Register(ts...); err != nil {
		return err
	}
	for _, h := range hs {
		g.helpers[h.tool.Name] = h.call
	}
	return nil
}

// viaGate is the registry's handler of the runtime helper name. The gate
// answers a helper's calls, handing it the call; a call that reaches the
// registry another way — a tool's handler calling it through the registry,
// as memory.recall's expand calls llm.call — is made through the gate of
// the call whose handler makes it (tools.CallThrough), as one more call of
// that run. A call from no program's call has no run to act in.
func viaGate(name string) tools.Handler {
	return func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		out, err := tools.CallThrough(ctx, name, args)
		var te *tools.Error
		if errors.As(err, &te) && te.Code == tools.CodeNoGate {
			return nil, &tools.Error{Code: tools.CodeNoGate, Tool: name, Message: "this runtime helper acts in a program's run, and this call comes from none; call it from execute_code"}
		}
		return out, err
	}
}

// call makes c through every stage.
func (g *gate) call(ctx context.Context, c *Call) (json.RawMessage, error) {
	c.Tool, _ = g.reg.View(c.Run.Caller).Get(c.Name)
	if c.Tool != nil {
		// A call by an alias (an upstream's own "readSecret" for
		// read_secret) is the tool's call for every stage: the data-flow
		// rules, labels, memoisation and the audit name tools as the
		// catalogue does (issue 19, third round H9).
		c.Name = c.Tool.Name
	}
	c.Written = c.Args
	defer c.release()
	out, err := g.pass(ctx, c, 0)
	c.delivered = err == nil
	return out, err
}

// release gives back what the stages reserved for c.
func (c *Call) release() {
	for _, f := range c.releases {
		f()
	}
	c.releases = nil
}

func (g *gate) pass(ctx context.Context, c *Call, i int) (json.RawMessage, error) {
	if i < len(g.stages) {
		return g.stages[i].pass(ctx, c, next{g, i + 1})
	}
	return g.answer(ctx, c)
}

// answer makes the call: a runtime helper with the call, any other tool
// through the registry.
func (g *gate) answer(ctx context.Context, c *Call) (json.RawMessage, error) {
	if c.Tool != nil {
		if h, ok := g.helpers[c.Tool.Name]; ok {
			return g.reg.CallWith(ctx, c.Name, c.Args, func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
				return h(withAsking(ctx, c), c, args)
			})
		}
	}
	return g.reg.Call(ctx, c.Name, c.Args)
}

// through is the tools.Gate the handler of c calls other tools through
// (tools.CallThrough): each of its calls is one more call of c's run,
// through every stage, and a skill's program's are one skill deeper.
func (g *gate) through(c *Call) tools.Gate {
	skill, depth := isSkill(c.Tool), c.Depth
	if skill {
		depth++
	}
	return func(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
		out, err := g.call(ctx, &Call{Run: c.Run, Name: name, Args: args, Depth: depth, Exec: executor.RunFrom(ctx), resume: c.resume.nested(name), seen: c.seen})
		var te *tools.Error
		var coded executor.CodedError
		if !skill && err != nil && !errors.As(err, &te) && errors.As(err, &coded) {
			// A refusal (a rate limit) keeps its code through the helper;
			// a skill's program reads it as any program does.
			err = &tools.Error{Code: coded.ErrorCode(), Tool: name, Message: err.Error(), Err: err}
		}
		return out, err
	}
}

// isSkill reports whether t is a skill's program (not one of the skills
// category's own tools): its calls are made one skill deeper.
func isSkill(t *tools.Tool) bool {
	return t != nil && t.Source != "" && t.Category() == "skills"
}

// programCalls is the dispatcher of a run's program: each of its calls
// through the gate, as a call of run.
type programCalls struct {
	g   *gate
	run *Run
}

var _ executor.Dispatcher = programCalls{}

func (p programCalls) Call(ctx context.Context, ec executor.Call) (json.RawMessage, error) {
	if p.run.resume != nil {
		return p.resumableCall(ctx, ec)
	}
	c := &Call{Run: p.run, Name: ec.Name, Args: ec.Args, Exec: ec.Run, prepare: ec.Prepare}
	c.handOff = func(giveBack func()) { ec.OnConsumed(p.run.keep(giveBack)) }
	out, err := p.g.call(ctx, c)
	if c.served == servedCached {
		ec.MarkCached()
	}
	return out, err
}

// skillCalls is the dispatcher of a skill's program: each of its calls
// goes through the gate of the call that runs the skill
// (tools.CallThrough) — as a call of that call's run, its caller's, one
// skill deeper.
type skillCalls struct{}

var _ executor.Dispatcher = skillCalls{}

func (skillCalls) Call(ctx context.Context, ec executor.Call) (json.RawMessage, error) {
	return tools.CallThrough(ctx, ec.Name, ec.Args)
}

// layoutKey keys a view's executor layout in its memo.
type layoutKey struct{}

// functions returns the executor layout of the catalogue as c sees it:
// the namespaces of its programs. Callers that share a view share it.
func functions(reg *tools.Registry, c tools.Caller) *executor.Layout {
	return reg.View(c).Memo(layoutKey{}, func(v *tools.View) any {
		list := v.List()
		fns := make([]executor.Function, 0, len(list))
		for _, t := range list {
			fns = append(fns, executor.Function{Name: t.Name, Positional: t.Positional})
			// Other names of the tool, such as an upstream server's
			// original one: everything["get-sum"], kg.createEntities.
			for _, a := range t.Aliases {
				fns = append(fns, executor.Function{Name: t.Category() + "." + a, Positional: t.Positional})
			}
		}
		// A category whose source is loading or unavailable is a
		// namespace even without tools, so that calling it says why
		// rather than "ReferenceError: 'github' is not defined".
		for _, c := range v.Categories() {
			if v.CategoryStatus(c).Absent() {
				fns = append(fns, executor.Function{Name: c})
			}
		}
		return executor.NewLayout(fns)
	}).(*executor.Layout)
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

// errorCode is the code of a tool-call error, for messages.
func errorCode(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return r.ErrorCode()
	}
	return tools.CodeOf(err)
}
