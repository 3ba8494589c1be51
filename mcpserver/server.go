// Package mcpserver is codecell's MCP surface: the MCP tools (execute_code
// and the discovery tools), resources and prompts, the transports (stdio,
// SSE and Streamable HTTP on one listener) and the wiring that turns an MCP
// request into a sandboxed run.
//
// It composes the other packages — executor runs programs, tools holds the
// catalogue — and owns nothing they own. Nothing imports it but cmd.
package mcpserver

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/trace"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/mcpserver/oauth"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/search"
	"github.com/codecell/codecell/vfs"
)

// manifestHint tells an agent reading the manifest how to go deeper.
const manifestHint = "read_tools {category}/index.json lists a category, {category}/{tool}.d.ts gives a signature; search_tools finds tools by task. Call them in execute_code: await {category}.{tool}({...})."

// Name is the server name reported to MCP clients.
const Name = "codecell"

//go:embed instructions.md
var instructions string

// Config configures a Server.
type Config struct {
	// Version is reported to clients.
	Version string
	// Executor runs the programs. The caller creates it and closes it
	// after the server.
	Executor *executor.Executor
	// Expose selects the MCP tools listed: code mode (default) or also
	// every catalogue tool directly.
	Expose Expose
	// Auth lists the bearer tokens HTTP clients must present; none means
	// HTTP is open (serve it on loopback only).
	Auth []Token
	// OAuth, when set, also accepts OAuth access tokens on HTTP and
	// serves the protected-resource metadata (http.go).
	OAuth *oauth.Config
	// ReadTimeout bounds the time to read an HTTP request, headers and
	// body; IdleTimeout closes keep-alive connections idle that long.
	// Defaults 30 s and 2 min.
	ReadTimeout, IdleTimeout time.Duration
	// AllowedOrigins lists browser origins, besides the server's own,
	// allowed to call the HTTP transports. "*" allows any.
	AllowedOrigins []string
	// Limits bound the load on the server.
	Limits Limits
	// Filter is the output pipeline every result and log passes; nil
	// means a filter with the default policy under a key made for this
	// process (tokens then change at each start).
	Filter *filter.Filter
	// FilterKey derives the session tokens (see filter.LoadOrCreateKey).
	FilterKey filter.Key
	// Rules are the exfiltration rules tokens are resolved under.
	Rules []filter.Rule
	// Budget and MaxBudget are the default and largest response budgets
	// (bytes) a request may ask for; they must match the Filter's.
	// Defaults filter.DefaultBudget and 16 times that.
	Budget, MaxBudget int
	// Store, when set, keeps the audit log, stored results, workspace
	// files and skills. Its memory and workspace tools are registered by
	// the caller (memory.RegisterTools).
	Store Store
	// Sessions bound the memory that session state (token vaults) holds.
	Sessions SessionLimits
	// Shared, when set, is the store that the instances behind one load
	// balancer share: token vaults and per-principal rate limits hold
	// across them (shared.go). It needs FilterKey, the same on every
	// instance. Nil keeps both in this process.
	Shared SharedStore
	// DrainDelay is how long ServeHTTP keeps serving, with /readyz at
	// 503 and new sessions refused, before it stops accepting
	// connections: the time a balancer takes to stop routing here.
	DrainDelay time.Duration
	// Plans configures dry runs and their commits (plan.go).
	Plans PlanConfig
	// Cache configures the cache tools and memoisation (memoize.go).
	Cache CacheConfig
	// Principal names the caller of requests that carry no authenticated
	// identity, such as stdio's local user. Default "local".
	Principal string
	// Tasks configures execute_code run as an MCP task (tasks.go).
	Tasks TaskConfig
	// Access says which tools each caller may reach (toolsets.go); the
	// zero value lets every caller reach every tool.
	Access Access
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// LLM bounds the programs' llm calls and names the provider they
	// may use besides the client's model (llm.go, provider.go).
	LLM LLMConfig
	// Approval names the tool calls the client's user approves first
	// (MCP elicitation, approval.go).
	Approval ApprovalConfig
	// TracerProvider, when set, traces requests, runs and tool calls;
	// nil traces nothing.
	TracerProvider trace.TracerProvider
	// LoadWait is how long a client's initialize waits for the tool
	// sources still loading (tools.Registry.BeginLoad). Zero answers at
	// once: those sources are then listed as loading, with when they
	// should be ready.
	LoadWait time.Duration
	// Learn configures learning from use: search_tools queries followed
	// by runs that call tools rank those tools higher (search_learn.go).
	Learn LearnConfig
	// Bridge, when set, is the source of bridged MCP servers whose
	// prompts and resources the server serves too (bridged.go).
	Bridge Bridge
}

// Server is a codecell MCP server. Create it with New, serve it with
// ServeStdio or Handler, and Close it when done.
type Server struct {
	cfg  Config
	log  *slog.Logger
	reg  *tools.Registry
	exec *executor.Executor
	mcp  *server.MCPServer

	vfs    *vfs.FS
	search *search.Index
	learn  *learner // nil when learning from use is off

	executeCodeSchema *tools.Schema
	searchToolsSchema *tools.Schema
	readToolsSchema   *tools.Schema

	auth    *authenticator
	owners  *sessionOwners
	limits  *limiter
	metrics *metrics
	tracer  trace.Tracer
	levels  levelSet
	subs    subscriptions
	events  *eventStore
	audit   *auditor
	tasks   *taskRuns

	// oauth validates access tokens, nil when OAuth is off;
	// resourceMetadata is the URL of the protected-resource metadata.
	oauth            *oauth.Validator
	resourceMetadata string
	plans            PlanConfig
	planSeal         *planSealer // plan.go, planseal.go
	memo             *memoizer
	access           *accessPolicy // nil: every caller reaches every tool

	// stopping ends the runs still in progress when the server shuts
	// down; see Stop.
	stopping          context.Context
	stopRuns          context.CancelCauseFunc
	filter            *filter.Filter
	sessions          *sessions
	sweeper           sync.WaitGroup
	budget, maxBudget int

	// llm, llmUse and approvals serve the runtime tools (runtime.go).
	llm       LLMConfig
	llmUse    *llmUsage
	provider  *provider // nil: the client's model only (provider.go)
	approvals *approvalPolicy
	// credentials redacts credentials only: in answers to a program's
	// approval.request (approval.go).
	credentials *filter.Filter

	unsubscribe       func()
	unsubscribeSkills func()
	closeOnce         sync.Once

	// draining and poolWarm answer /readyz (ready.go).
	draining, poolWarm atomic.Bool

	// bridged keeps the bridged servers' prompts and resources the MCP
	// server serves; nil without a Bridge (bridged.go).
	bridged *bridged
}

// New builds a server over the tools in reg.
func New(cfg Config, reg *tools.Registry) (_ *Server, err error) {
	if reg == nil {
		return nil, errors.New("new server: nil registry")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Principal == "" {
		cfg.Principal = "local"
	}
	if cfg.Expose == "" {
		cfg.Expose = ExposeCode
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 30 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 2 * time.Minute
	}
	log := cfg.Logger.With("component", "mcpserver")
	exec := cfg.Executor
	if exec == nil {
		return nil, errors.New("new server: no executor")
	}
	stopping, stopRuns := context.WithCancelCause(context.Background())
	s := &Server{
		stopping: stopping,
		stopRuns: stopRuns,
		cfg:      cfg,
		log:      log,
		reg:      reg,
		exec:     exec,
		auth:     newAuthenticator(cfg.Auth),
		owners:   newSessionOwners(cfg.Principal),
		limits:   newLimiter(cfg.Limits),
		metrics:  newMetrics(exec),
		tracer:   newTracer(cfg.TracerProvider),
		events:   newEventStore(256, 8<<20, 1024),
	}
	s.tasks = newTaskRuns(cfg.Tasks, func(ctx context.Context) string { return s.caller(ctx).Principal })
	if cfg.Store != nil {
		s.audit = newAuditor(cfg.Store, log.With("part", "audit"), s.metrics.observeStore)
	}
	if err = s.initFilter(); err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	if err = s.initShared(); err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	s.initOperations()
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err = s.initOAuth(); err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	s.vfs = vfs.New(reg, vfs.WithManifestHint(manifestHint))
	s.search = search.New(reg, func(c tools.Caller) search.Docs { return s.vfs.For(c) })
	s.learn = newLearner(context.Background(), cfg.Learn, s.search, cfg.Store, s.log)
	for _, sc := range []struct {
		dst    **tools.Schema
		name   string
		schema json.RawMessage
	}{
		{&s.executeCodeSchema, "execute_code", s.executeCodeInputSchema()},
		{&s.searchToolsSchema, "search_tools", s.searchToolsInputSchema()},
		{&s.readToolsSchema, "read_tools", s.readToolsInputSchema()},
	} {
		if *sc.dst, err = tools.CompileSchema(sc.schema); err != nil {
			return nil, fmt.Errorf("new server: %s schema: %w", sc.name, err)
		}
	}
	if err = s.initAccess(); err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	direct := cfg.Expose == ExposeDirect || cfg.Expose == ExposeBoth
	s.mcp = server.NewMCPServer(Name, cfg.Version, append(s.tasks.options(),
		server.WithToolFilter(s.filterDirectTools),
		server.WithInstructions(instructions),
		server.WithToolCapabilities(true),
		server.WithRecovery(),
		server.WithLogging(),
		server.WithHooks(s.hooks()),
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
		server.WithPromptFilter(s.filterBridgedPrompts),
		server.WithCompletions(),
		server.WithResourceCompletionProvider(completions{s}),
		server.WithElicitation(),
		discoverHints(),
		extensionCapability(),
	)...)
	s.traceRequests()
	if err = s.initRuntime(); err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	if cfg.Expose != ExposeDirect {
		s.mcp.AddTool(s.executeCodeTool(), s.executeCode)
		s.mcp.AddTool(s.readToolsTool(), s.readTools)
		s.mcp.AddTool(s.searchToolsTool(), s.searchTools)
	}
	s.addToolTree()
	s.addPrompt()
	s.initBridge()
	s.addLedger()
	if err = s.initPlansAndCache(); err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	if cfg.Store != nil {
		s.addWorkspace()
		s.addResults()
		if err = s.initSkills(context.Background()); err != nil {
			return nil, fmt.Errorf("new server: %w", err)
		}
	}
	if direct {
		s.mcp.AddTools(s.directTools()...)
	}
	s.unsubscribe = reg.Subscribe(func(ch tools.Change) {
		if ch.Scope != "" {
			// A principal's own tools changed (its skills): only its
			// sessions' tree changed, and nobody else learns of it.
			for _, id := range s.owners.sessionsOf(ch.Scope) {
				s.mcp.SendNotificationToSpecificClient(id, mcp.MethodNotificationToolsListChanged, nil)
				s.mcp.SendNotificationToSpecificClient(id, mcp.MethodNotificationResourcesListChanged, nil)
			}
			return
		}
		if direct {
			s.syncDirect(ch) // mcp-go announces the new tool list
		} else {
			s.mcp.SendNotificationToAllClients(mcp.MethodNotificationToolsListChanged, nil)
		}
		// The tree's files changed, and with them what the templates list.
		s.mcp.SendNotificationToAllClients(mcp.MethodNotificationResourcesListChanged, nil)
		s.toolTreeChanged()
	})
	return s, nil
}

func (s *Server) hooks() *server.Hooks {
	h := s.levels.hooks()
	s.sessions.hooks(h)
	s.owners.hooks(h)
	s.subs.hooks(h)
	s.instructionHooks(h)
	s.tasks.hooks(h)
	s.cacheHooks(h)
	s.bridgeHooks(h)
	return h
}

// initFilter sets up the output filter and the session vaults.
func (s *Server) initFilter() error {
	s.budget, s.maxBudget = s.cfg.Budget, s.cfg.MaxBudget
	if s.budget <= 0 {
		s.budget = filter.DefaultBudget
	}
	if s.maxBudget <= 0 {
		s.maxBudget = 16 * s.budget
	}
	s.filter = s.cfg.Filter
	if s.filter == nil {
		f, err := filter.New(filter.Config{Budget: s.budget, MaxBudget: s.maxBudget, Compact: true})
		if err != nil {
			return err
		}
		s.filter = f
	}
	key := s.cfg.FilterKey
	if key == (filter.Key{}) {
		k, err := filter.NewKey()
		if err != nil {
			return err
		}
		key = k
	}
	var err error
	if s.planSeal, err = newPlanSealer(key); err != nil {
		return err
	}
	s.sessions = newSessions(key, s.cfg.Rules, s.cfg.Sessions, func(reason string) {
		s.metrics.sessionsEvicted.WithLabelValues(reason).Inc()
	})
	s.sweeper.Go(func() {
		every := min(time.Minute, max(s.sessions.limits.IdleTTL/4, 100*time.Millisecond))
		s.sessions.sweepEvery(s.stopping, every, s.metrics.observeSessions)
	})
	return nil
}

// MCP returns the underlying mcp-go server, for in-process clients.
func (s *Server) MCP() *server.MCPServer { return s.mcp }

// Registry returns the catalogue the server serves.
func (s *Server) Registry() *tools.Registry { return s.reg }

// ErrShuttingDown is the cause of runs cancelled by StopRuns.
var ErrShuttingDown = errors.New("the server is shutting down; run the program again once it is back")

// StopRuns cancels every run in progress, which then ends with a
// "canceled" error that says the server is shutting down.
func (s *Server) StopRuns() { s.stopRuns(ErrShuttingDown) }

// Close cancels the runs still in progress and flushes the audit log.
// Requests in progress must have ended. It closes neither the executor
// nor the Store.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if s.unsubscribe != nil {
			s.unsubscribe()
		}
		if s.unsubscribeSkills != nil {
			s.unsubscribeSkills()
		}
		s.stopRuns(ErrShuttingDown)
		s.sweeper.Wait()
		s.audit.close()
	})
	return nil
}

// layoutKey keys a view's executor layout in its memo.
type layoutKey struct{}

// functions returns the executor layout of the catalogue as c sees it:
// the namespaces of its programs. Callers that share a view share it.
func (s *Server) functions(c tools.Caller) *executor.Layout {
	return s.reg.View(c).Memo(layoutKey{}, func(v *tools.View) any {
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

// caller identifies who a request is made for: the authenticated
// principal, or the configured one for unauthenticated transports, and the
// MCP session (none for a request of the stateless protocol).
func (s *Server) caller(ctx context.Context) tools.Caller {
	c := tools.Caller{Principal: s.cfg.Principal}
	if id, ok := identityFrom(ctx); ok {
		c.Principal, c.Scopes = id.principal, id.scopes
	}
	if session := server.ClientSessionFromContext(ctx); session != nil {
		c.Session = session.SessionID()
	}
	return c
}
