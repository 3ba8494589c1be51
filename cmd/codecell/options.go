package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
	"github.com/codecell/codecell/tools/catalog"
	"github.com/codecell/codecell/tools/search"
	"github.com/codecell/codecell/tools/upstream"
)

// flagSpec binds a command-line flag to a configuration key.
type flagSpec struct {
	name, key string
	// arg names the flag's value in help, e.g. ADDR.
	arg   string
	usage string
	// none says what an empty default means, e.g. "serve stdio".
	none  string
	scope flagScope
}

// flagScope says which commands take a configuration flag.
type flagScope uint8

const (
	// scopeServe flags shape a server: transports and the pool.
	scopeServe flagScope = 1 << iota
	// scopeRun flags shape how programs run: catalogue and limits.
	scopeRun
	// scopeStore flags say where the state lives and how to log.
	scopeStore
)

// commandScope is the set of configuration flags a command takes: serve
// and config check take them all, exec those that shape a run, the others
// (memory, config rotate-key) those that find the store.
func commandScope(command string) flagScope {
	switch command {
	case "serve", "config check":
		return scopeServe | scopeRun | scopeStore
	case "exec":
		return scopeRun | scopeStore
	}
	return scopeStore
}

// flagSpecs are the flags that set configuration keys. Every key can also
// be set in the file or the environment.
var flagSpecs = []flagSpec{
	{"http", "server.http", "ADDR", "serve Streamable HTTP (/mcp) and SSE (/sse) on this address instead of stdio, e.g. 127.0.0.1:7410", "serve stdio", scopeServe},
	{"expose", "server.expose", "MODE", "MCP tools to list: code, direct or both", "", scopeServe},
	{"read-only", "server.read_only", "", "serve only the tools annotated read-only, to every caller", "", scopeServe},
	{"catalog", "server.catalog", "PATH", "a tool catalogue directory or file to load", "only the built-in tools", scopeRun},
	{"mcp-config", "server.mcp_config", "FILE", "MCP servers to bridge, in Claude Desktop's format ({\"mcpServers\": {...}}); [upstream.NAME] tables in the config file add more", "none", scopeRun},
	{"data-dir", "server.data_dir", "DIR", "directory for the store and the filter key", "", scopeStore},
	{"shutdown-grace", "server.shutdown_grace", "DURATION", "on SIGINT/SIGTERM, how long requests in progress may finish", "", scopeServe},
	{"log-level", "server.log_level", "LEVEL", "log level: debug, info, warn or error", "", scopeStore},
	{"log-format", "server.log_format", "FORMAT", "log format: text or json", "", scopeStore},
	{"pool", "sandbox.pool_size", "N", "programs that run at once, and VMs kept warm", "", scopeServe},
	{"queue-wait", "sandbox.queue_wait", "DURATION", "how long a run waits for a free VM before it fails as busy", "", scopeServe},
	{"timeout", "sandbox.timeout", "DURATION", "a run's deadline when the request sets none", "", scopeRun},
	{"max-timeout", "sandbox.max_timeout", "DURATION", "the longest deadline a request may ask for", "", scopeRun},
	{"memory-limit", "sandbox.memory_limit_mib", "MIB", "heap limit of a run, MiB", "", scopeRun},
	{"max-tool-calls", "sandbox.max_tool_calls", "N", "tool calls allowed per run", "", scopeRun},
	{"max-code-bytes", "sandbox.max_code_bytes", "BYTES", "largest program accepted, bytes", "", scopeRun},
	{"max-result-bytes", "sandbox.max_result_bytes", "BYTES", "largest result a program may return, bytes of JSON", "0: the heap limit", scopeRun},
}

// settings collects where the configuration comes from: a file and the
// flags given.
type settings struct {
	configPath string
	set        map[string]string
	// args names the value of each flag in help, by flag name.
	args map[string]string
}

// register adds --config and the configuration flags of scope to fs.
func (s *settings) register(fs *flag.FlagSet, scope flagScope) {
	s.set = map[string]string{}
	s.args = map[string]string{"config": "FILE"}
	configDefault := "$" + envPrefix + "CONFIG, else " + defaultConfigPath() + " if it exists"
	fs.StringVar(&s.configPath, "config", "", "configuration file, TOML (default "+configDefault+")")
	def := defaultConfig()
	for _, spec := range flagSpecs {
		if spec.scope&scope == 0 {
			continue
		}
		f, ok := fieldByKey(spec.key)
		if !ok {
			panic("flag " + spec.name + " names unknown key " + spec.key)
		}
		usage := fmt.Sprintf("%s (%s; default %s)", spec.usage, spec.key, defaultText(def, spec, f))
		key := spec.key
		s.args[spec.name] = spec.arg
		set := func(val string) error {
			s.set[key] = val
			return nil
		}
		if f.typ.Kind() == reflect.Bool {
			fs.BoolFunc(spec.name, usage, set) // --read-only, --read-only=false
		} else {
			fs.Func(spec.name, usage, set)
		}
	}
}

// defaultText is the default of a flag's key as help shows it: the value,
// or what an empty or zero value stands for.
func defaultText(def Config, spec flagSpec, f configField) string {
	switch spec.key {
	case "server.data_dir":
		if dir, err := def.dataDir(); err == nil {
			return dir
		}
	case "sandbox.pool_size":
		if def.Sandbox.PoolSize == 0 {
			return fmt.Sprintf("0, one per CPU: %d here", runtime.NumCPU())
		}
	}
	v := reflect.ValueOf(def).FieldByIndex(f.path).Interface()
	if d, ok := v.(Duration); ok {
		v = d.D()
	}
	if s := fmt.Sprint(v); s != "" {
		return s
	}
	return "none: " + spec.none
}

// load reads the configuration: file, environment, flags. The file is
// --config, else $CODECELL_CONFIG, else the default location if a file is
// there.
func (s *settings) load() (Config, provenance, error) {
	path, from, searched := s.configPath, "--config", ""
	if path == "" {
		path, from = os.Getenv(envPrefix+"CONFIG"), envPrefix+"CONFIG"
	}
	if path == "" {
		from = "the default location"
		if p := defaultConfigPath(); p != "" {
			if _, err := os.Stat(p); err == nil {
				path = p
			} else {
				searched = p
			}
		}
	}
	cfg, pv, err := loadConfig(configSources{file: path, environ: os.Environ(), flags: s.set})
	if path != "" {
		pv.fileFrom = from
	}
	pv.searched = searched
	if err != nil {
		return cfg, pv, configProblem{err}
	}
	return cfg, pv, nil
}

// configProblem is an invalid configuration: a usage error, reported with
// one line per key.
type configProblem struct{ err error }

func (e configProblem) Error() string { return "invalid configuration:\n  " + indentErrors(e.err) }
func (e configProblem) Unwrap() error { return e.err }

func indentErrors(err error) string {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		out := ""
		for i, e := range joined.Unwrap() {
			if i > 0 {
				out += "\n  "
			}
			out += indentErrors(e)
		}
		return out
	}
	return err.Error()
}

func newLogger(cfg Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.Server.LogLevel)) // validated
	hopts := &slog.HandlerOptions{Level: level}
	if cfg.Server.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, hopts))
	}
	return slog.New(slog.NewTextHandler(w, hopts))
}

func executorConfig(c SandboxConfig) executor.Config {
	var worker []string
	if c.Isolation != string(executor.IsolationInProcess) {
		worker = workerCommand()
	}
	return executor.Config{
		Isolation:          executor.Isolation(c.Isolation),
		WorkerCommand:      worker,
		TransformCommand:   transformCommand(),
		PoolSize:           c.PoolSize,
		ReservedSlots:      c.ReservedSlots,
		QueueWait:          c.QueueWait.D(),
		Timeout:            c.Timeout.D(),
		MaxTimeout:         c.MaxTimeout.D(),
		MemoryLimit:        int64(c.MemoryLimitMiB) << 20,
		MaxStackFrames:     c.MaxStackFrames,
		MaxCodeBytes:       c.MaxCodeBytes,
		MaxToolCalls:       c.MaxToolCalls,
		MaxConcurrentCalls: c.MaxConcurrentCalls,
		MaxLogLines:        c.MaxLogLines,
		MaxLogBytes:        c.MaxLogBytes,
		MaxResultBytes:     c.MaxResultBytes,
	}
}

// newServer builds the sandbox, the catalogue and the MCP server from cfg,
// over the store, whose memory and workspace tools join the catalogue.
// close stops the server, then the sandbox.
func newServer(cfg Config, store store, log *slog.Logger, tp trace.TracerProvider) (srv *mcpserver.Server, close func(), err error) {
	ec := executorConfig(cfg.Sandbox)
	ec.Logger = log
	ec.MaxWaiting = cfg.Tasks.MaxWaiting
	exec, err := executor.New(ec)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox: %w", err)
	}
	if ec.WorkerCommand != nil {
		logWorkerConfinement(log)
	}
	defer func() {
		if err != nil {
			exec.Close()
		}
	}()
	srv, up, err := buildServer(cfg, store, exec, log, tp)
	if err != nil {
		return nil, nil, err
	}
	waitUpstreams(up, cfg.Server.UpstreamWait.D(), log)
	return srv, func() {
		srv.Close()
		if up != nil {
			up.Close()
		}
		exec.Close()
	}, nil
}

// buildServer builds the catalogue and the MCP server, and starts
// connecting to the upstream servers, whose tools join the catalogue as
// they become ready; the caller closes the server, then the source.
func buildServer(cfg Config, store store, exec *executor.Executor, log *slog.Logger, tp trace.TracerProvider) (_ *mcpserver.Server, up *upstream.Source, err error) {
	reg := tools.NewRegistry()
	// search_tools keeps each tool's terms between starts (tools/search).
	if dir, err := cfg.dataDir(); err == nil {
		reg.SetSnapshots(filepath.Join(dir, "search"), sync.OnceValue(func() string { return buildVersion(log) }))
	}
	if err := builtin.Register(reg); err != nil {
		return nil, nil, err
	}
	if err := memory.RegisterTools(reg, store.ToolSet()); err != nil {
		return nil, nil, err
	}
	if cfg.Server.Catalog != "" {
		before := len(reg.List())
		if err := catalog.LoadInto(reg, cfg.Server.Catalog); err != nil {
			return nil, nil, fmt.Errorf("load catalogue: %w", err)
		}
		log.Debug("loaded catalogue", "path", cfg.Server.Catalog, "tools", len(reg.List())-before)
	}
	// A confined stdio upstream is denied codecell's paths that exist
	// when it starts: the data directory and the filter key are made
	// first. A first start made them after, and the upstream could read
	// the key (issue 19, fourth round, A7).
	if dir, err := cfg.dataDir(); err == nil {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			log.Warn("cannot create the data directory; set server.data_dir to a writable one", "path", dir, "err", err)
		}
	}
	fcfg, key, rules, err := filterSetup(cfg)
	if err != nil {
		return nil, nil, err
	}
	// As early as possible: they connect while the rest starts.
	if up, err = startUpstreams(cfg, reg, store, log); err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil && up != nil {
			up.Close()
		}
	}()
	expose, err := mcpserver.ParseExpose(cfg.Server.Expose)
	if err != nil {
		return nil, nil, err
	}
	if len(rules) > 0 && expose != mcpserver.ExposeCode {
		log.Warn("data-flow rules hold within one run: in direct mode each tool call is its own run, so a value the model carries from one call to the next is followed only when it is a token (docs/filter.md)", "expose", cfg.Server.Expose, "rules", len(rules))
	}
	f, err := filter.New(fcfg)
	if err != nil {
		return nil, nil, fmt.Errorf("filter: %w", err)
	}
	shared, err := sharedState(cfg, store, key)
	if err != nil {
		return nil, nil, err
	}
	// An OpenAI-compatible embedder serves search_tools too.
	var searchEmb search.Embedder
	if cfg.Memory.Embedder == "openai" {
		emb, err := embedder(cfg, log)
		if err != nil {
			return nil, nil, err
		}
		searchEmb = emb
	}
	var tokens []mcpserver.Token
	for _, t := range cfg.Auth.Tokens {
		tokens = append(tokens, mcpserver.Token{Principal: t.Principal, Token: t.Token})
	}
	srv, err := mcpserver.New(mcpserver.Config{
		Version:        version,
		Executor:       exec,
		Expose:         expose,
		Auth:           tokens,
		OAuth:          cfg.Auth.OAuth.serverConfig(),
		AllowedOrigins: cfg.Server.AllowedOrigins,
		Limits:         serverLimits(cfg.Limits),
		Sessions:       sessionLimits(cfg.Limits),
		ReadTimeout:    cfg.Server.ReadTimeout.D(),
		IdleTimeout:    cfg.Server.IdleTimeout.D(),
		Filter:         f,
		FilterKey:      key,
		Rules:          rules,
		Budget:         fcfg.Budget,
		MaxBudget:      fcfg.MaxBudget,
		Store:          store,
		Tasks:          cfg.tasksServer(),
		Learn:          cfg.learnServer(),
		Shared:         shared,
		DrainDelay:     cfg.Cluster.DrainDelay.D(),
		Plans:          engine.PlanConfig{TTL: cfg.Sandbox.PlanTTL.D()},
		Cache:          cfg.Cache.server(),
		Access:         serverAccess(cfg),
		Logger:         log,
		LLM:            cfg.llmConfig(),
		Approval:       cfg.approvalConfig(),
		TracerProvider: tp,
		SearchEmbedder: searchEmb,
		LoadWait:       cfg.Server.LoadWait.D(),
		Bridge:         bridgeOf(up),
		BridgedListed:  cfg.Limits.BridgedListed,
		ListPageSize:   cfg.Server.ListPageSize,
	}, reg)
	if err != nil {
		return nil, nil, err
	}
	// Counted once everything is registered (the server adds the skills):
	// the figures the manifest shows, less upstream tools still on their
	// way; the programs' runtime (llm, approval, cache) is apart.
	catalogue, runtime, categories := 0, 0, map[string]bool{}
	for _, t := range reg.List() {
		if t.Runtime {
			runtime++
			continue
		}
		catalogue++
		categories[t.Category()] = true
	}
	log.Info("tools ready", "tools", catalogue, "categories", len(categories), "runtime", runtime, "catalog", cfg.Server.Catalog)
	return srv, up, nil
}

// serverLimits are the server's limits from the [limits] section.
func serverLimits(l LimitsConfig) engine.Limits {
	return engine.Limits{
		ExecutionsPerMinute: l.ExecutionsPerMinute,
		ExecutionBurst:      l.ExecutionBurst,
		ToolCallsPerMinute:  l.ToolCallsPerMinute,
		ToolCallBurst:       l.ToolCallBurst,
		MaxInFlight:         l.MaxInFlight,
		MaxQueued:           l.MaxQueued,
		MaxBodyBytes:        l.MaxBodyBytes,
		MaxJournalBytes:     l.MaxJournalBytes,
		AuditCallRowsPerDay: l.AuditCallRowsPerDay,
		Stdio:               l.Stdio,

		ResultBytesInFlight:       l.ResultBytesInFlight,
		ResultBytesInFlightPerRun: l.ResultBytesInFlightPerRun,
	}
}

// sessionLimits bound the session state from the [limits] section.
func sessionLimits(l LimitsConfig) engine.SessionLimits {
	return engine.SessionLimits{
		IdleTTL:             l.SessionIdleTTL.D(),
		PerPrincipal:        l.SessionsPerPrincipal,
		VaultBytes:          l.VaultBytes,
		PrincipalVaultBytes: l.PrincipalVaultBytes,
		TotalVaultBytes:     l.TotalVaultBytes,
	}
}

// filterSetup builds the output filter's configuration, loading (or
// creating, on first start) the per-installation token key.
func filterSetup(cfg Config) (filter.Config, filter.Key, []filter.Rule, error) {
	fc := cfg.Filter
	path, err := keyPath(cfg)
	if err != nil {
		return filter.Config{}, filter.Key{}, nil, err
	}
	key, err := loadFilterKey(cfg, path, os.Getenv)
	if err != nil {
		return filter.Config{}, filter.Key{}, nil, fmt.Errorf("filter key: %w", err)
	}
	var rules []filter.Rule
	for _, r := range fc.Rules {
		rules = append(rules, filter.Rule{From: r.From, To: r.To})
	}
	return filterConfig(cfg), key, rules, nil
}

// filterConfig is the output filter's configuration of the [filter]
// section.
func filterConfig(cfg Config) filter.Config {
	fc := cfg.Filter
	policy := filter.Policy{AllowFields: fc.AllowFields, AllowTools: fc.AllowTools}
	if len(fc.Policy) > 0 {
		policy.Actions = map[filter.Class]filter.Action{}
		for class, action := range fc.Policy {
			policy.Actions[filter.Class(class)] = filter.Action(action)
		}
	}
	return filter.Config{
		Budget:    fc.BudgetBytes,
		MaxBudget: fc.MaxBudgetBytes,
		Compact:   true,
		Policy:    policy,
	}
}

// keyPath is where the filter's token key lives.
func keyPath(cfg Config) (string, error) {
	if cfg.Filter.KeyFile != "" {
		return cfg.Filter.KeyFile, nil
	}
	dir, err := cfg.dataDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "filter.key"), nil
}

// configCommand is the flag set of a subcommand that reads the
// configuration: --config and the configuration flags it takes (see
// commandScope), plus its own.
type configCommand struct {
	*flag.FlagSet
	st     settings
	stderr io.Writer
	// strict makes unknown CODECELL_* variables errors, not warnings.
	strict bool
	// loaded says what the configuration parse loaded was made of.
	loaded provenance
}

// newConfigCommand makes the flag set of the command name ("serve",
// "memory stats"); usage is printed above the flags. Warnings about the
// configuration are logged to stderr.
func newConfigCommand(name, usage string, stderr io.Writer) *configCommand {
	c := &configCommand{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), stderr: stderr}
	c.SetOutput(stderr)
	c.st.register(c.FlagSet, commandScope(name))
	c.Usage = func() {
		fmt.Fprint(c.Output(), usage+"\n\nFlags:\n")
		printFlags(c.Output(), c.FlagSet, c.st.args)
	}
	return c
}

// parse parses args and loads the configuration: file, environment, flags.
// An unknown CODECELL_* variable is logged as a warning, or is an error
// when c.strict.
func (c *configCommand) parse(args []string) (Config, error) {
	if err := parseFlags(c.FlagSet, args); err != nil {
		return Config{}, err
	}
	cfg, loaded, err := c.st.load()
	c.loaded = loaded
	cfg.file = loaded.file
	if c.strict && len(loaded.unknownEnv) > 0 {
		var cp configProblem
		if errors.As(err, &cp) {
			return cfg, configProblem{errors.Join(append([]error{cp.err}, loaded.unknownEnv...)...)}
		}
		return cfg, configProblem{errors.Join(loaded.unknownEnv...)}
	}
	if err != nil {
		return cfg, err
	}
	log := newLogger(cfg, c.stderr)
	for _, w := range loaded.unknownEnv {
		log.Warn("ignored an environment variable", "problem", w.Error())
	}
	return cfg, nil
}

// helpRequested is -h or --help: run prints the text to stdout and exits 0.
type helpRequested struct{ text string }

func (helpRequested) Error() string { return "help requested" }

// parseFlags parses args. -h and --help become helpRequested with the
// usage text; any other mistake becomes a one-line usage error that says
// where to look.
func parseFlags(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	fs.SetOutput(io.Discard) // the flag package would print the whole usage
	err := fs.Parse(args)
	fs.SetOutput(out)
	if err == nil {
		return nil
	}
	if errors.Is(err, flag.ErrHelp) {
		var b strings.Builder
		fs.SetOutput(&b)
		fs.Usage()
		fs.SetOutput(out)
		return helpRequested{b.String()}
	}
	// The flag package names flags with one dash; help shows two.
	msg := oneDashFlag.ReplaceAllString(err.Error(), "$1--$2")
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: --"); ok {
		msg = "unknown flag --" + name
		if s := closestFlag(fs, name); s != "" {
			msg += "; did you mean --" + s + "?"
		}
	}
	return usageError{fmt.Sprintf("%s: %s (codecell %s -h lists the flags)", fs.Name(), msg, fs.Name())}
}

// oneDashFlag matches a flag name in the flag package's errors.
var oneDashFlag = regexp.MustCompile(`(: |for |flag )-([a-zA-Z])`)

// closestFlag suggests a flag of fs for a misspelt name.
func closestFlag(fs *flag.FlagSet, name string) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return closestWord(name, names)
}

// printFlags lists the flags of fs as help shows them: two dashes, a
// placeholder naming the value (from args, else from the flag's type or
// name) and the default when it says something.
func printFlags(w io.Writer, fs *flag.FlagSet, args map[string]string) {
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		arg, ok := args[f.Name]
		if !ok {
			arg = placeholder(f.Name, typ)
		}
		line := "  --" + f.Name
		if arg != "" {
			line += " " + arg
		}
		fmt.Fprintf(w, "%s\n        %s", line, strings.ReplaceAll(usage, "\n", "\n        "))
		if _, own := args[f.Name]; !own && !zeroDefault(f.DefValue) {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// placeholder names a flag's value from its type: N for numbers,
// DURATION, and for text the last word of the flag's name (--lang LANG).
func placeholder(name, typ string) string {
	switch typ {
	case "":
		return ""
	case "int", "int64", "uint", "uint64", "float":
		return "N"
	case "duration":
		return "DURATION"
	}
	if i := strings.LastIndexByte(name, '-'); i >= 0 {
		name = name[i+1:]
	}
	return strings.ToUpper(name)
}

func zeroDefault(v string) bool {
	switch v {
	case "", "0", "false", "0s":
		return true
	}
	return false
}

// bridgeOf is the server's view of the upstream servers' prompts and
// resources; nil without upstream servers.
func bridgeOf(up *upstream.Source) mcpserver.Bridge {
	if up == nil {
		return nil
	}
	return up
}
