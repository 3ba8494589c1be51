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

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
	"github.com/codecell/codecell/tools/catalog"
)

// flagSpec binds a command-line flag to a configuration key.
type flagSpec struct {
	name, key, usage string
}

// flagSpecs are the flags that set configuration keys. Every key can also
// be set in the file or the environment.
var flagSpecs = []flagSpec{
	{"http", "server.http", "serve Streamable HTTP (/mcp) and SSE (/sse) on this address instead of stdio, e.g. 127.0.0.1:7410"},
	{"expose", "server.expose", "MCP tools to list: code, direct or both"},
	{"catalog", "server.catalog", "a tool catalogue directory or file to load"},
	{"data-dir", "server.data_dir", "directory for the store and the filter key"},
	{"shutdown-grace", "server.shutdown_grace", "on SIGINT/SIGTERM, how long requests in progress may finish"},
	{"log-level", "server.log_level", "log level: debug, info, warn or error"},
	{"log-format", "server.log_format", "log format: text or json"},
	{"pool", "sandbox.pool_size", "programs that run at once, and VMs kept warm (0: one per CPU)"},
	{"queue-wait", "sandbox.queue_wait", "how long a run waits for a free VM before it fails as busy"},
	{"timeout", "sandbox.timeout", "a run's deadline when the request sets none"},
	{"max-timeout", "sandbox.max_timeout", "the longest deadline a request may ask for"},
	{"memory-limit", "sandbox.memory_limit_mib", "heap limit of a run, MiB"},
	{"max-tool-calls", "sandbox.max_tool_calls", "tool calls allowed per run"},
	{"max-code-bytes", "sandbox.max_code_bytes", "largest program accepted, bytes"},
	{"max-result-bytes", "sandbox.max_result_bytes", "largest result a program may return, bytes of JSON"},
}

// settings collects where the configuration comes from: a file and the
// flags given.
type settings struct {
	configPath string
	set        map[string]string
}

// register adds -config and the configuration flags to fs.
func (s *settings) register(fs *flag.FlagSet) {
	s.set = map[string]string{}
	fs.StringVar(&s.configPath, "config", "", "configuration file (TOML; default $CODECELL_CONFIG or ~/.config/codecell/config.toml if it exists)")
	def := defaultConfig()
	for _, spec := range flagSpecs {
		f, ok := fieldByKey(spec.key)
		if !ok {
			panic("flag " + spec.name + " names unknown key " + spec.key)
		}
		v := reflect.ValueOf(def).FieldByIndex(f.path).Interface()
		if d, ok := v.(Duration); ok {
			v = d.D()
		}
		usage := fmt.Sprintf("%s (%s; default %v)", spec.usage, spec.key, v)
		key := spec.key
		fs.Func(spec.name, usage, func(val string) error {
			s.set[key] = val
			return nil
		})
	}
}

// load reads the configuration: file, environment, flags.
func (s *settings) load() (Config, error) {
	path := s.configPath
	if path == "" {
		path = os.Getenv(envPrefix + "CONFIG")
	}
	if path == "" {
		if p := defaultConfigPath(); p != "" {
			if _, err := os.Stat(p); err == nil {
				path = p
			}
		}
	}
	cfg, err := loadConfig(path, os.Getenv, s.set)
	if err != nil {
		return cfg, configProblem{err}
	}
	return cfg, nil
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
	return executor.Config{
		WorkerCommand:      workerCommand(),
		PoolSize:           c.PoolSize,
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

// newServer builds the catalogue and the MCP server from cfg, over the
// store, whose memory and workspace tools join the catalogue.
func newServer(cfg Config, store *memory.Store, log *slog.Logger) (*mcpserver.Server, error) {
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		return nil, err
	}
	if err := store.Register(reg); err != nil {
		return nil, err
	}
	if cfg.Server.Catalog != "" {
		if err := catalog.LoadInto(reg, cfg.Server.Catalog); err != nil {
			return nil, fmt.Errorf("load catalogue: %w", err)
		}
		log.Info("loaded catalogue", "path", cfg.Server.Catalog, "tools", len(reg.List()), "categories", len(reg.Categories()))
	}
	expose, err := mcpserver.ParseExpose(cfg.Server.Expose)
	if err != nil {
		return nil, err
	}
	fcfg, key, rules, err := filterSetup(cfg)
	if err != nil {
		return nil, err
	}
	f, err := filter.New(fcfg)
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	var tokens []mcpserver.Token
	for _, t := range cfg.Auth.Tokens {
		tokens = append(tokens, mcpserver.Token{Principal: t.Principal, Token: t.Token})
	}
	l := cfg.Limits
	return mcpserver.New(mcpserver.Config{
		Version:        version,
		Executor:       executorConfig(cfg.Sandbox),
		Expose:         expose,
		Auth:           tokens,
		AllowedOrigins: cfg.Server.AllowedOrigins,
		Limits: mcpserver.Limits{
			ExecutionsPerMinute: l.ExecutionsPerMinute,
			ExecutionBurst:      l.ExecutionBurst,
			ToolCallsPerMinute:  l.ToolCallsPerMinute,
			ToolCallBurst:       l.ToolCallBurst,
			MaxInFlight:         l.MaxInFlight,
			MaxQueued:           l.MaxQueued,
			MaxBodyBytes:        l.MaxBodyBytes,
		},
		Filter:    f,
		FilterKey: key,
		Rules:     rules,
		Budget:    fcfg.Budget,
		MaxBudget: fcfg.MaxBudget,
		Store:     store,
		Logger:    log,
	}, reg)
}

// filterSetup builds the output filter's configuration, loading (or
// creating, on first start) the per-installation token key.
func filterSetup(cfg Config) (filter.Config, filter.Key, []filter.Rule, error) {
	fc := cfg.Filter
	policy := filter.Policy{AllowFields: fc.AllowFields, AllowTools: fc.AllowTools}
	if len(fc.Policy) > 0 {
		policy.Actions = map[filter.Class]filter.Action{}
		for class, action := range fc.Policy {
			policy.Actions[filter.Class(class)] = filter.Action(action)
		}
	}
	path, err := keyPath(cfg)
	if err != nil {
		return filter.Config{}, filter.Key{}, nil, err
	}
	key, err := filter.LoadOrCreateKey(path)
	if err != nil {
		return filter.Config{}, filter.Key{}, nil, fmt.Errorf("filter key: %w", err)
	}
	var rules []filter.Rule
	for _, r := range fc.Rules {
		rules = append(rules, filter.Rule{From: r.From, To: r.To})
	}
	return filter.Config{
		Budget:    fc.BudgetBytes,
		MaxBudget: fc.MaxBudgetBytes,
		Compact:   true,
		Policy:    policy,
	}, key, rules, nil
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
// configuration: -config and the configuration flags, plus its own.
type configCommand struct {
	*flag.FlagSet
	st settings
}

// newConfigCommand makes the flag set; usage is printed above the flags.
func newConfigCommand(name, usage string, stderr io.Writer) *configCommand {
	c := &configCommand{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError)}
	c.SetOutput(stderr)
	c.st.register(c.FlagSet)
	c.Usage = func() {
		fmt.Fprint(c.Output(), usage+"\n\nFlags:\n")
		c.PrintDefaults()
	}
	return c
}

// parse parses args and loads the configuration: file, environment, flags.
func (c *configCommand) parse(args []string) (Config, error) {
	if err := parseFlags(c.FlagSet, args); err != nil {
		return Config{}, err
	}
	return c.st.load()
}

// parseFlags parses args, turning a parse error into a usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	return nil
}
