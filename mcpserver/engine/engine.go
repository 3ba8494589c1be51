// Package engine runs programs for the callers of codecell's MCP
// surface. It owns a run from the moment it is admitted to its record:
// the run pipeline (pipeline.go: the executor, the output filter, the
// stored result, the audit log, the record), the gate that every tool
// call of a run passes, as a list of stages (gate.go, stages.go), dry
// runs and their commits (plan.go, commit.go), the runs of MCP tasks (tasks.go), the session
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
	"fmt"
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
	// StateTTL is how long the requestState of a run that asked the
	// client may be sent back (protocol 2026-07-28); 0 is
	// DefaultStateTTL.
	StateTTL time.Duration
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
//
// It is wired here, one way: each part — the gate, its stages, the
// runtime helpers, plans, skills, sessions, limits — is a value of its
// own that holds what it needs, and knows nothing of the Engine.
type Engine struct {
	cfg    Config
	log    *slog.Logger
	reg    *tools.Registry
	exec   *executor.Executor
	filter *filter.Filter
	tracer trace.Tracer

	budget, maxBudget int

	gate      *gate         // every tool call of a run passes it (gate.go)
	sessions  *sessions     // token vaults and ledgers
	limits    *Limiter      // rate limits and admission
	metrics   *Metrics      // the server's Prometheus collectors
	audit     *auditor      // nil without a store
	tasks     *Tasks        // execute_code's MCP tasks
	access    *accessPolicy // nil: every caller reaches every tool
	plans     *plans        // dry runs' plans, for their commits
	memo      *memoizer     // nil without memoisation
	approvals *approvals    // the approval stage and approval.request
	llm       *llm          // the llm namespace
	states    *stateSealer  // resumable runs' request states (requeststate.go)
	results   *resultBytes  // results in flight, runs' and not (inflight.go)

	// stopping ends the runs still in progress when the server shuts
	// down; see StopRuns.
	stopping   context.Context
	stopRuns   context.CancelCauseFunc
	sweeper    sync.WaitGroup
	stopSkills func() // nil without a store
	closeOnce  sync.Once
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
		e.audit = newAuditor(cfg.Store, e.log.With("part", "audit"), e.metrics.ObserveStore, cfg.Limits.withDefaults().AuditCallRowsPerDay)
	}
	key := cfg.Key
	if key == (filter.Key{}) {
		if key, err = filter.NewKey(); err != nil {
			return nil, err
		}
	}
	seal, err := newPlanSealer(key)
	if err != nil {
		return nil, err
	}
	var states cacheStore
	if cfg.Store != nil {
		states = cfg.Store
	}
	if e.states, err = newStateSealer(key, states, cfg.StateTTL); err != nil {
		return nil, err
	}
	e.plans = &plans{store: cfg.Store, seal: seal, ttl: cfg.Plans.withDefaults().TTL, filter: cfg.Filter, log: e.log}
	e.startSessions(key)
	if err = e.startShared(); err != nil {
		return nil, err
	}
	if e.access, err = newAccessPolicy(cfg.Access); err != nil {
		return nil, fmt.Errorf("access: %w", err)
	}
	if e.access != nil {
		e.reg.SetToolsets(e.access.toolset)
	}
	e.results = newResultBytes(e.cfg.Limits)
	if err = e.addRuntime(); err != nil {
		return nil, err
	}
	if err = cfg.Cache.Validate(); err != nil {
		return nil, err
	}
	e.cfg.Cache = cfg.Cache.withDefaults()
	if cfg.Store != nil {
		e.memo = newMemoizer(cfg.Store, e.cfg.Cache, e.log.With("part", "memoize"))
		if err = e.reg.DescribeCategory(CacheCategory, "A cache of your own that outlives runs: cache.set(key, value, {ttl}) keeps a JSON value for a while, cache.get(key) reads it."); err != nil {
			return nil, err
		}
		if err = e.reg.Register(cache{store: cfg.Store, cfg: e.cfg.Cache}.tools()...); err != nil {
			return nil, err
		}
	}
	if e.memo != nil {
		e.memo.results = e.results
	}
	e.gate.stages = e.stages()
	if cfg.Store != nil {
		k := &skills{reg: e.reg, store: cfg.Store, exec: e.exec, filter: e.filter, maxBudget: e.maxBudget, log: e.log}
		if e.stopSkills, err = k.start(context.Background(), e.gate); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// stages are the gate's stages, in their order (gate.go).
func (e *Engine) stages() []stage {
	stages := []stage{
		recorder{tracer: e.tracer, reg: e.reg},
		counter{metrics: e.metrics, reg: e.reg},
		rateLimit{limits: e.limits, metrics: e.metrics},
		argsHeld{results: e.results},
		dataFlow{reg: e.reg, log: e.log},
		binding{e.gate},
		planner{reg: e.reg, results: e.results},
		e.approvals,
		observer{results: e.results},
	}
	if e.memo != nil {
		stages = append(stages, e.memo)
	}
	// Last, right before the tool: what a stage answers holds nothing.
	return append(stages, e.results)
}

// addRuntime registers the runtime namespaces that ask the client: llm
// and approval.
func (e *Engine) addRuntime() (err error) {
	a := asker{client: roundTrips{e.cfg.Client}, filter: e.filter, results: e.results}
	if e.llm, err = newLLM(e.cfg.LLM, a, maxPromptBytes(e.filter)); err != nil {
		return err
	}
	if e.approvals, err = newApprovals(e.cfg.Approval, a, e.reg, e.log); err != nil {
		return err
	}
	if err := e.reg.DescribeCategory("llm", "Ask a model — the client's (MCP sampling) or the server's provider: call, classify, extract."); err != nil {
		return err
	}
	if err := e.reg.DescribeCategory("approval", "Ask the client's user to decide (MCP elicitation)."); err != nil {
		return err
	}
	return e.gate.register(append(e.llm.helpers(), e.approvals.helpers()...)...)
}

// startSessions sets up the session state, and sweeps idle sessions while
// the engine runs.
func (e *Engine) startSessions(key filter.Key) {
	e.sessions = newSessions(key, e.cfg.Rules, e.cfg.Sessions, e.log, func(reason string) {
		e.metrics.sessionsEvicted.WithLabelValues(reason).Inc()
	})
	e.sessions.match = e.reg.MatchName
	e.sweeper.Go(func() {
		every := min(time.Minute, max(e.sessions.limits.IdleTTL/4, 100*time.Millisecond))
		e.sessions.sweepEvery(e.stopping, every, e.metrics.observeSessions)
	})
}

// startShared shares the vaults and the rate limits through cfg.Shared,
// and prunes what expired there while the engine runs.
func (e *Engine) startShared() error {
	st := e.cfg.Shared
	if st == nil {
		return nil
	}
	if e.cfg.Key == (filter.Key{}) {
		return fmt.Errorf("shared state needs the filter key every instance uses (Config.FilterKey)")
	}
	e.sessions.shared = &sharedTokens{st: st, log: e.log.With("part", "shared"), observe: e.metrics.ObserveStore}
	e.limits.shared = newSharedQuota(st, e.log.With("part", "ratelimit"))
	e.sweeper.Go(func() {
		t := time.NewTicker(time.Minute)
		defer t.Stop()
		for {
			select {
			case <-e.stopping.Done():
				return
			case <-t.C:
			}
			e.limits.shared.sweep()
			ctx, cancel := context.WithTimeout(e.stopping, sharedTimeout)
			// Windows are at most burst/rate long; an hour's margin
			// keeps every window that may still be counted.
			if _, err := st.PruneShared(ctx, time.Now().Add(-time.Hour-e.limits.longestWindow())); err != nil && ctx.Err() == nil {
				e.log.Warn("prune shared state", "err", err)
			}
			cancel()
		}
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
		if e.stopSkills != nil {
			e.stopSkills()
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

// Session returns the state of c's session, made on first use.
func (e *Engine) Session(c tools.Caller) (*Session, error) {
	return e.sessions.get(c.Principal, c.Session)
}

// DropSession forgets every principal's state of the MCP session id, when
// it ends, and its tokens in the shared store.
func (e *Engine) DropSession(id string) { e.sessions.drop(id) }

// SessionIdleTTL is how long an unused session's state is kept.
func (e *Engine) SessionIdleTTL() time.Duration { return e.sessions.limits.IdleTTL }

// Flush writes the tokens sess's vault minted to the shared store,
// before the result that shows them leaves the server, so that the client
// may pass them to any instance. It finishes even if ctx was cancelled.
// Without a shared store it does nothing.
func (e *Engine) Flush(ctx context.Context, sess *Session) { e.sessions.flush(ctx, sess) }

// HasAccessRules reports whether access rules hide any tool from any
// caller: whether what a caller lists may differ from another's.
func (e *Engine) HasAccessRules() bool { return e.access != nil }

// Restricts reports whether the access rules hide any tool from c.
func (e *Engine) Restricts(c tools.Caller) bool { return e.access.of(c).Key != "" }
