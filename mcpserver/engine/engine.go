// Package engine runs programs for the callers of codecell's MCP
// surface. It owns a run from the moment it is admitted to its record:
// the run pipeline (execute.go: the executor, the output filter, the
// stored result, the audit log, the record), the gate that every tool
// call of a run passes, as a list of stages (gate.go), dry runs and
// their commits (plan.go), the runs of MCP tasks (tasks.go), the session
// state runs share (token vaults and ledgers), the callers' limits, and
// the programs' runtime helpers — llm, approval, cache, skills — each
// handed the call it answers, with its run.
//
// It knows no transport and no MCP request: package mcpserver turns
// requests into Executions and records into results, and implements
// Client, the way a helper asks the MCP client something. It imports no
// part of mcpserver.
package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/tools"
)

// Config configures an Engine. Executor, Registry, Filter and Client are
// required.
type Config struct {
	// Executor runs the programs; Registry holds the catalogue they call.
	Executor *executor.Executor
	Registry *tools.Registry
	// Filter is the output pipeline every result and log passes, and
	// Budget and MaxBudget are the default and largest response budgets
	// (bytes) a request may ask for, the Filter's.
	Filter            *filter.Filter
	Budget, MaxBudget int
	// Key derives the session tokens and the plans' seals; the zero Key
	// makes one for this process.
	Key filter.Key
	// Rules are the exfiltration rules tokens are resolved under.
	Rules []filter.Rule
	// Store, when set, keeps the audit log, stored results, skills, plans
	// and the cache; without it there are none of these.
	Store Store
	// Shared, when set, is the store that the instances behind one load
	// balancer share: token vaults and per-principal rate limits hold
	// across them (shared.go). It needs Key, the same on every instance.
	Shared SharedStore
	// Sessions bound the memory that session state (token vaults) holds.
	Sessions SessionLimits
	// Limits bound the load on the server.
	Limits Limits
	// Plans configures dry runs and their commits (plan.go).
	Plans PlanConfig
	// Cache configures the cache tools and memoisation (memoize.go).
	Cache CacheConfig
	// Tasks configures execute_code run as an MCP task (tasks.go).
	Tasks TaskConfig
	// Access says which tools each caller may reach (toolsets.go).
	Access Access
	// LLM bounds the programs' llm calls (llm.go).
	LLM LLMConfig
	// Approval names the tool calls the client's user approves first
	// (approval.go).
	Approval ApprovalConfig
	// Client asks the MCP client of a run's request for what the
	// runtime helpers need of it (runtime.go).
	Client Client
	// Tracer traces runs and tool calls; nil traces nothing.
	Tracer trace.Tracer
	// Logger receives the engine's logs; nil discards them.
	Logger *slog.Logger
}

// Engine runs programs (Execute), commits plans (Commit) and makes
// direct mode's calls (CallTool). Make it with New and Close it when the
// surface is done with it.
type Engine struct {
	cfg    Config
	log    *slog.Logger
	reg    *tools.Registry
	exec   *executor.Executor
	filter *filter.Filter
	tracer trace.Tracer
	client Client

	budget, maxBudget int

	gate     *gate         // every tool call of a run passes it (gate.go)
	sessions *sessions     // token vaults and ledgers
	limits   *Limiter      // rate limits and admission
	metrics  *Metrics      // the server's Prometheus collectors
	audit    *auditor      // nil without a store
	tasks    *Tasks        // execute_code's MCP tasks
	access   *accessPolicy // nil: every caller reaches every tool
	plans    PlanConfig
	planSeal *planSealer
	memo     *memoizer // nil without memoisation

	// llm, llmUse, approvals and credentials serve the runtime helpers
	// (runtime.go).
	llm         LLMConfig
	llmUse      *llmUsage
	approvals   *approvalPolicy
	credentials *filter.Filter

	// stopping ends the runs still in progress when the server shuts
	// down; see StopRuns.
	stopping          context.Context
	stopRuns          context.CancelCauseFunc
	sweeper           sync.WaitGroup
	unsubscribeSkills func()
	closeOnce         sync.Once
}

// New makes an engine: it checks the configuration, registers the
// runtime helpers and the store's tools (cache, skills) in the registry,
// installs the access rules, and starts the sweepers of session and
// shared state. Its errors name the configuration at fault, unwrapped.
func New(cfg Config) (_ *Engine, err error) {
	if cfg.Executor == nil || cfg.Registry == nil || cfg.Filter == nil || cfg.Client == nil {
		return nil, errors.New("new engine: an executor, a registry, a filter and a client are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Tracer == nil {
		cfg.Tracer = noop.NewTracerProvider().Tracer("")
	}
	stopping, stopRuns := context.WithCancelCause(context.Background())
	e := &Engine{
		cfg:       cfg,
		log:       cfg.Logger,
		reg:       cfg.Registry,
		exec:      cfg.Executor,
		filter:    cfg.Filter,
		tracer:    cfg.Tracer,
		client:    cfg.Client,
		budget:    cfg.Budget,
		maxBudget: cfg.MaxBudget,
		gate:      newGate(cfg.Registry),
		limits:    newLimiter(cfg.Limits),
		metrics:   newMetrics(cfg.Executor),
		tasks:     newTasks(cfg.Tasks),
		stopping:  stopping,
		stopRuns:  stopRuns,
	}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	if cfg.Store != nil {
		e.audit = newAuditor(cfg.Store, e.log.With("part", "audit"), e.metrics.ObserveStore)
	}
	if err = e.initSessions(); err != nil {
		return nil, err
	}
	if err = e.initShared(); err != nil {
		return nil, err
	}
	if err = e.initAccess(); err != nil {
		return nil, err
	}
	if err = e.initRuntime(); err != nil {
		return nil, err
	}
	if err = e.initPlansAndCache(); err != nil {
		return nil, err
	}
	e.initGate()
	if cfg.Store != nil {
		if err = e.initSkills(context.Background()); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// initGate sets the gate's stages, in their order (gate.go).
func (e *Engine) initGate() {
	stages := []stage{
		recorder{tracer: e.tracer, reg: e.reg},
		counter{metrics: e.metrics, reg: e.reg},
		rateLimit{limits: e.limits, metrics: e.metrics},
		dataFlow{reg: e.reg, log: e.log},
		binding{e.gate},
		planner{reg: e.reg},
		approver{e},
		observer{},
	}
	if e.memo != nil {
		stages = append(stages, e.memo)
	}
	e.gate.stages = stages
}

// initSessions sets up the session state and the plans' seals, and
// sweeps idle sessions while the engine runs.
func (e *Engine) initSessions() error {
	key := e.cfg.Key
	if key == (filter.Key{}) {
		k, err := filter.NewKey()
		if err != nil {
			return err
		}
		key = k
	}
	var err error
	if e.planSeal, err = newPlanSealer(key); err != nil {
		return err
	}
	e.sessions = newSessions(key, e.cfg.Rules, e.cfg.Sessions, func(reason string) {
		e.metrics.sessionsEvicted.WithLabelValues(reason).Inc()
	})
	e.sweeper.Go(func() {
		every := min(time.Minute, max(e.sessions.limits.IdleTTL/4, 100*time.Millisecond))
		e.sessions.sweepEvery(e.stopping, every, e.metrics.observeSessions)
	})
	return nil
}

// ErrShuttingDown is the cause of runs cancelled by StopRuns.
var ErrShuttingDown = errors.New("the server is shutting down; run the program again once it is back")

// StopRuns cancels every run in progress, which then ends with a
// "canceled" error that says the server is shutting down.
func (e *Engine) StopRuns() { e.stopRuns(ErrShuttingDown) }

// Stopping is done once the runs are stopped (StopRuns, Close).
func (e *Engine) Stopping() context.Context { return e.stopping }

// Close cancels the runs still in progress, stops the sweepers and
// flushes the audit log. It closes neither the executor nor the store.
func (e *Engine) Close() {
	e.closeOnce.Do(func() {
		if e.unsubscribeSkills != nil {
			e.unsubscribeSkills()
		}
		e.stopRuns(ErrShuttingDown)
		e.sweeper.Wait()
		e.audit.close()
	})
}

// Metrics returns the engine's Prometheus collectors, which the surface
// serves and adds its own to.
func (e *Engine) Metrics() *Metrics { return e.metrics }

// Limits returns the callers' limits: the surface applies the execution
// rate limit and admission before a run.
func (e *Engine) Limits() *Limiter { return e.limits }

// Tasks returns execute_code's MCP tasks.
func (e *Engine) Tasks() *Tasks { return e.tasks }

// Restricts reports whether the access rules hide any tool from c.
func (e *Engine) Restricts(c tools.Caller) bool { return e.access.of(c).Key != "" }

// layoutKey keys a view's executor layout in its memo.
type layoutKey struct{}

// functions returns the executor layout of the catalogue as c sees it:
// the namespaces of its programs. Callers that share a view share it.
func (e *Engine) functions(c tools.Caller) *executor.Layout {
	return e.reg.View(c).Memo(layoutKey{}, func(v *tools.View) any {
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
