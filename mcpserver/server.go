// Package mcpserver is codecell's MCP surface: the MCP tools (execute_code
// and the discovery tools), resources and prompts, the transports (stdio,
// SSE and Streamable HTTP on one listener), authentication, and the
// wiring that turns an MCP request into a run of the engine
// (mcpserver/engine), which owns runs, the gate of their tool calls,
// plans, tasks and the programs' runtime helpers.
//
// It composes the other packages — the engine runs programs, tools holds
// the catalogue — and owns nothing they own. Nothing imports it but cmd.
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
	"github.com/codecell/codecell/mcpserver/engine"
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
	Limits engine.Limits
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
	Sessions engine.SessionLimits
	// Shared, when set, is the store that the instances behind one load
	// balancer share: token vaults and per-principal rate limits hold
	// across them (shared.go). It needs FilterKey, the same on every
	// instance. Nil keeps both in this process.
	Shared engine.SharedStore
	// DrainDelay is how long ServeHTTP keeps serving, with /readyz at
	// 503 and new sessions refused, before it stops accepting
	// connections: the time a balancer takes to stop routing here.
	DrainDelay time.Duration
	// Plans configures dry runs and their commits (engine/plan.go).
	Plans engine.PlanConfig
	// Cache configures the cache tools and memoisation
	// (engine/memoize.go).
	Cache engine.CacheConfig
	// Principal names the caller of requests that carry no authenticated
	// identity, such as stdio's local user. Default "local".
	Principal string
	// Tasks configures execute_code run as an MCP task (engine/tasks.go).
	Tasks engine.TaskConfig
	// TaskInline is how long a call of protocol 2026-07-28 that may
	// become a task of the tasks extension waits for its run before it
	// answers with the task (tasks2026.go). Default one second.
	TaskInline time.Duration
	// Access says which tools each caller may reach
	// (engine/toolsets.go); the zero value lets every caller reach every
	// tool.
	Access engine.Access
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// LLM bounds the programs' llm calls and names the provider they
	// may use besides the client's model (engine/llm.go,
	// engine/provider.go).
	LLM engine.LLMConfig
	// Approval names the tool calls the client's user approves first
	// (MCP elicitation, engine/approval.go).
	Approval engine.ApprovalConfig
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
	// SearchEmbedder, when set, makes search_tools rank by embeddings
	// too, fused with its ranking of words (search.Index.SetEmbedder):
	// the memory's embedder when it is an OpenAI-compatible endpoint.
	SearchEmbedder search.Embedder
	// Bridge, when set, is the source of bridged MCP servers whose
	// prompts and resources the server serves too (bridged.go).
	Bridge Bridge
	// BridgedListed is how many prompts one bridged server has served,
	// and resources and resource templates listed, each: the first it
	// lists. Default DefaultBridgedListed.
	BridgedListed int
	// ListPageSize is how many entries one page of tools/list,
	// prompts/list, resources/list and resources/templates/list holds;
	// the rest follow by nextCursor (lists.go). Default
	// DefaultListPageSize.
	ListPageSize int
}

// Server is a codecell MCP server. Create it with New, serve it with
// ServeStdio or Handler, and Close it when done.
type Server struct {
	cfg  Config
	log  *slog.Logger
	reg  *tools.Registry
	exec *executor.Executor
	mcp  *server.MCPServer
	eng  *engine.Engine // runs, their tool calls, plans, tasks

	vfs    *vfs.FS
	search *search.Index
	learn  *learner // nil when learning from use is off

	executeCodeSchema *tools.Schema
	searchToolsSchema *tools.Schema
	readToolsSchema   *tools.Schema

	auth   *authenticator
	owners *sessionOwners
	// sessionless scopes cancellations sent without a session to their
	// sender's requests.
	sessionless *sessionless
	// open bounds the HTTP requests open at once per principal.
	open *openRequests
	// sseMsgs follows requests posted to SSE sessions until answered.
	sseMsgs *sseMessages
	tracer  trace.Tracer
	levels  levelSet
	subs    subscriptions
	events  *eventStore
	tasks   *taskCalls
	// tasks26 are execute_code's tasks of protocol 2026-07-28.
	tasks26 *tasks26

	// oauth validates access tokens, nil when OAuth is off;
	// resourceMetadata is the URL of the protected-resource metadata.
	oauth            *oauth.Validator
	resourceMetadata string

	// filter and the budgets are the output filter and the response
	// budgets, the engine's, that resources are read through.
	filter            *filter.Filter
	budget, maxBudget int

	unsubscribe func()
	// listChanges tells sessions of the catalogue's changes, a window
	// of them at a time (listchanged.go).
	listChanges *listChanges
	closeOnce   sync.Once

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
	s := &Server{
		cfg:         cfg,
		log:         log,
		reg:         reg,
		exec:        exec,
		auth:        newAuthenticator(cfg.Auth),
		owners:      newSessionOwners(cfg.Principal, cfg.Sessions.PerPrincipal),
		sessionless: newSessionless(),
		open:        newOpenRequests(cfg.Sessions.PerPrincipal),
		sseMsgs:     newSSEMessages(),
		tracer:      newTracer(cfg.TracerProvider),
	}
	s.events = newEventStore(256, 8<<20, 1024, 32<<20, s.owners.principalOfSession)
	if err = s.initEngine(); err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	s.tasks = newTaskCalls(s.eng.Tasks(), func(ctx context.Context) string { return s.caller(ctx).Principal })
	s.tasks26 = newTasks26(s.eng.Tasks(), func(ctx context.Context) string { return s.caller(ctx).Principal }, cfg.TaskInline)
	s.tasks26.crashed = func(p any) *mcp.CallToolResult { res, _ := s.crashed(nil, p); return res }
	s.initOperations()
	if err = s.initOAuth(); err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	s.vfs = vfs.New(reg, vfs.WithManifestHint(manifestHint), vfs.WithSuggester(s.suggestTool))
	s.search = search.New(reg, func(c tools.Caller) search.Docs { return s.vfs.For(c) })
	if cfg.SearchEmbedder != nil {
		s.search.SetEmbedder(cfg.SearchEmbedder, s.log)
	}
	s.learn = newLearner(context.Background(), cfg.Learn, learnQuorumOf(cfg), s.search, cfg.Store, s.log)
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
	direct := cfg.Expose == ExposeDirect || cfg.Expose == ExposeBoth
	s.mcp = server.NewMCPServer(Name, cfg.Version, append(append(s.tasks.options(), answerMiddleware()...),
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
	s.mcp.EnableSampling() // the llm runtime helpers' (engine/llm.go)
	if cfg.Expose != ExposeDirect {
		s.mcp.AddTool(s.executeCodeTool(), s.executeCode)
		s.mcp.AddTool(s.readToolsTool(), s.readTools)
		s.mcp.AddTool(s.searchToolsTool(), s.searchTools)
	}
	s.addToolTree()
	s.addPrompt()
	s.initBridge()
	s.addLedger()
	if cfg.Store != nil {
		s.addWorkspace()
		s.addResults()
	}
	if direct {
		s.mcp.AddTools(s.directTools()...)
	}
	s.listChanges = newListChanges(listChangedWindow, s.announce(direct))
	s.unsubscribe = reg.Subscribe(func(ch tools.Change) {
		if direct && ch.Scope == "" {
			s.syncDirect(ch) // tools/list is the catalogue's at once
		}
		s.listChanges.changed(ch)
	})
	return s, nil
}

func (s *Server) hooks() *server.Hooks {
	h := s.levels.hooks()
	h.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) { s.eng.DropSession(cs.SessionID()) })
	s.owners.hooks(h)
	s.sessionless.hooks(h)
	s.subs.follows = s.followsSubscription
	s.subs.hooks(h)
	s.instructionHooks(h)
	s.tasks26.hooks(h) // before the 2025 tasks' hooks: drops the task parameter of 2026 requests
	s.tasks.hooks(h)
	s.cacheHooks(h)
	s.bridgeHooks(h)
	stdioAnswerHooks(h)
	sseHooks(h)
	s.pageHooks(h) // last: pages what the other hooks leave of a list
	return h
}

// initEngine resolves the output filter and the response budgets, and
// makes the engine that runs the programs.
func (s *Server) initEngine() error {
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
	cfg := engine.Config{
		Executor:  s.exec,
		Registry:  s.reg,
		Filter:    s.filter,
		Budget:    s.budget,
		MaxBudget: s.maxBudget,
		Key:       s.cfg.FilterKey,
		Rules:     s.cfg.Rules,
		Shared:    s.cfg.Shared,
		Sessions:  s.cfg.Sessions,
		Limits:    s.cfg.Limits,
		Plans:     s.cfg.Plans,
		Cache:     s.cfg.Cache,
		Tasks:     s.cfg.Tasks,
		Access:    s.cfg.Access,
		LLM:       s.cfg.LLM,
		Approval:  s.cfg.Approval,
		Client:    mcpClient{s},
		Tracer:    s.tracer,
		Logger:    s.log,
	}
	if s.cfg.Store != nil {
		cfg.Store = s.cfg.Store
	}
	eng, err := engine.New(cfg)
	if err != nil {
		return err
	}
	s.eng = eng
	return nil
}

// MCP returns the underlying mcp-go server, for in-process clients.
func (s *Server) MCP() *server.MCPServer { return s.mcp }

// Registry returns the catalogue the server serves.
func (s *Server) Registry() *tools.Registry { return s.reg }

// ErrShuttingDown is the cause of runs cancelled by StopRuns.
var ErrShuttingDown = engine.ErrShuttingDown

// StopRuns cancels every run in progress, which then ends with a
// "canceled" error that says the server is shutting down.
func (s *Server) StopRuns() { s.eng.StopRuns() }

// Execute runs a program as execute_code does, for the caller that ctx
// carries (engine.Engine.Execute), without the rate limit and admission
// execute_code applies first.
func (s *Server) Execute(ctx context.Context, x engine.Execution) (*engine.Record, []byte) {
	x.Caller, x.Local = s.caller(ctx), isLocal(ctx)
	return s.eng.Execute(ctx, x)
}

// Close cancels the runs still in progress and flushes the audit log.
// Requests in progress must have ended. It closes neither the executor
// nor the Store.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if s.unsubscribe != nil {
			s.unsubscribe()
		}
		if s.listChanges != nil {
			s.listChanges.close()
		}
		if s.eng != nil {
			s.eng.Close()
		}
	})
	return nil
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
