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

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/memory"
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
	// Executor configures the sandbox.
	Executor executor.Config
	// Expose selects the MCP tools listed: code mode (default) or also
	// every catalogue tool directly.
	Expose Expose
	// Auth lists the bearer tokens HTTP clients must present; none means
	// HTTP is open (serve it on loopback only).
	Auth []Token
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
	// the caller (memory.Store.Register).
	Store *memory.Store
	// Principal names the caller of requests that carry no authenticated
	// identity, such as stdio's local user. Default "local".
	Principal string
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
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

	executeCodeSchema *tools.Schema
	searchToolsSchema *tools.Schema
	readToolsSchema   *tools.Schema

	auth    *authenticator
	limits  *limiter
	metrics *metrics
	levels  levelSet
	subs    subscriptions
	events  *eventStore
	audit   *auditor

	// stopping ends the runs still in progress when the server shuts
	// down; see Stop.
	stopping          context.Context
	stopRuns          context.CancelCauseFunc
	filter            *filter.Filter
	sessions          sessions
	budget, maxBudget int

	layout            atomic.Pointer[layoutCache]
	unsubscribe       func()
	unsubscribeSkills func()
	closeOnce         sync.Once
}

// layoutCache is the executor layout for one registry version.
type layoutCache struct {
	version uint64
	layout  *executor.Layout
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
	log := cfg.Logger.With("component", "mcpserver")
	cfg.Executor.Logger = cfg.Logger
	exec, err := executor.New(cfg.Executor)
	if err != nil {
		return nil, fmt.Errorf("new server: %w", err)
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
		limits:   newLimiter(cfg.Limits),
		metrics:  newMetrics(exec),
		events:   newEventStore(256, 8<<20, 1024),
	}
	if cfg.Store != nil {
		s.audit = newAuditor(cfg.Store, log.With("part", "audit"), s.metrics.observeStore)
	}
	if err = s.initFilter(); err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	s.vfs = vfs.New(reg, vfs.WithManifestHint(manifestHint))
	s.search = search.New(reg, s.vfs)
	for _, sc := range []struct {
		dst    **tools.Schema
		name   string
		schema json.RawMessage
	}{
		{&s.executeCodeSchema, "execute_code", s.executeCodeInputSchema()},
		{&s.searchToolsSchema, "search_tools", json.RawMessage(searchToolsInput)},
		{&s.readToolsSchema, "read_tools", json.RawMessage(readToolsInput)},
	} {
		if *sc.dst, err = tools.CompileSchema(sc.schema); err != nil {
			return nil, fmt.Errorf("new server: %s schema: %w", sc.name, err)
		}
	}
	s.mcp = server.NewMCPServer(Name, cfg.Version,
		server.WithInstructions(instructions),
		server.WithToolCapabilities(true),
		server.WithRecovery(),
		server.WithLogging(),
		server.WithHooks(s.hooks()),
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(false),
		server.WithCompletions(),
		server.WithResourceCompletionProvider(completions{reg}),
	)
	s.mcp.AddTool(s.executeCodeTool(), s.executeCode)
	s.mcp.AddTool(s.readToolsTool(), s.readTools)
	s.mcp.AddTool(s.searchToolsTool(), s.searchTools)
	s.addToolTree()
	s.addPrompt()
	s.addLedger()
	if cfg.Store != nil {
		s.addWorkspace()
		s.addResults()
		if err = s.initSkills(context.Background()); err != nil {
			return nil, fmt.Errorf("new server: %w", err)
		}
	}
	direct := cfg.Expose == ExposeDirect || cfg.Expose == ExposeBoth
	if direct {
		s.mcp.AddTools(s.directTools()...)
	}
	s.unsubscribe = reg.Subscribe(func(ch tools.Change) {
		s.layout.Store(nil)
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
	s.subs.hooks(h)
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
	s.sessions = sessions{key: key, rules: s.cfg.Rules, m: map[string]*session{}}
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

// Close stops the sandbox pool and flushes the audit log. Requests in
// progress must have ended. It does not close the Store.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if s.unsubscribe != nil {
			s.unsubscribe()
		}
		if s.unsubscribeSkills != nil {
			s.unsubscribeSkills()
		}
		s.search.Close()
		s.vfs.Close()
		s.stopRuns(ErrShuttingDown)
		s.exec.Close()
		s.audit.close()
	})
	return nil
}

// functions returns the executor layout of the current catalogue.
func (s *Server) functions() *executor.Layout {
	v := s.reg.Version()
	if c := s.layout.Load(); c != nil && c.version == v {
		return c.layout
	}
	list := s.reg.List()
	fns := make([]executor.Function, len(list))
	for i, t := range list {
		fns[i] = executor.Function{Name: t.Name, Positional: t.Positional}
	}
	l := executor.NewLayout(fns)
	s.layout.Store(&layoutCache{version: v, layout: l})
	return l
}

// caller identifies who a request is made for: the authenticated
// principal, or the configured one for unauthenticated transports.
func (s *Server) caller(ctx context.Context) tools.Caller {
	c := tools.Caller{Principal: s.cfg.Principal}
	if p, ok := principalFrom(ctx); ok {
		c.Principal = p
	}
	if session := server.ClientSessionFromContext(ctx); session != nil {
		c.Session = session.SessionID()
	}
	return c
}

// dispatcher runs tool calls — a program's, or direct mode's — against the
// registry as one caller, under the caller's rate limit.
type dispatcher struct {
	s      *Server
	caller tools.Caller
	vault  *filter.Vault // the caller's session's tokens
}

var _ executor.Dispatcher = dispatcher{}

// Call runs a program's tool call.
func (d dispatcher) Call(ctx context.Context, c executor.Call) (json.RawMessage, error) {
	return d.call(ctx, c.Name, c.Args)
}

func (d dispatcher) call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	if r := d.s.limits.allowToolCall(d.caller.Principal); r != nil {
		d.s.metrics.refusals.WithLabelValues(r.limit).Inc()
		d.s.metrics.toolCalls.WithLabelValues(name, "rate_limited").Inc()
		return nil, r
	}
	args, err := resolveTokens(d.vault, name, args)
	if err != nil {
		d.s.metrics.toolCalls.WithLabelValues(metricName(d.s.reg, name), tools.CodeOf(err)).Inc()
		if tools.CodeOf(err) == "policy_violation" {
			d.s.log.Warn("exfiltration rule blocked a tool call", "tool", name, "principal", d.caller.Principal, "session", d.caller.Session)
		}
		return nil, err
	}
	out, err := d.s.reg.Call(tools.WithCaller(ctx, d.caller), name, args)
	status := "ok"
	if err != nil {
		status = tools.CodeOf(err)
	}
	d.s.metrics.toolCalls.WithLabelValues(metricName(d.s.reg, name), status).Inc()
	return out, err
}

// metricName keeps metric labels bounded: unknown tool names are one label.
func metricName(reg *tools.Registry, name string) string {
	if _, known := reg.Get(name); !known {
		return "(unknown)"
	}
	return name
}
