package main

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/codecell/codecell/executor"
	"github.com/codecell/codecell/filter"
	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/openapi"
	"github.com/codecell/codecell/tools/upstream"
)

// Config is everything codecell can be told, from one TOML file, then
// CODECELL_* environment variables, then flags, each overriding the one
// before. Keys are section.name, as in the file: sandbox.timeout is
// CODECELL_SANDBOX_TIMEOUT and, for the common ones, a flag (-timeout).
type Config struct {
	Server  ServerConfig  `toml:"server"`
	Sandbox SandboxConfig `toml:"sandbox"`
	Auth    AuthConfig    `toml:"auth"`
	Limits  LimitsConfig  `toml:"limits"`
	Filter  FilterConfig  `toml:"filter"`
	Memory  MemoryConfig  `toml:"memory"`
	// Upstream are the MCP servers whose tools codecell serves, by name
	// ([upstream.NAME] tables); server.mcp_config names a file with more.
	Upstream map[string]upstream.Server `toml:"upstream"`
	// OpenAPI holds the [openapi.NAME] sources (config_openapi.go).
	OpenAPI map[string]openapi.Config `toml:"openapi"`
	// Tasks holds the [tasks] section (config_tasks.go).
	Tasks TasksConfig `toml:"tasks"`
	// Search holds the [search] section (config_search.go).
	Search SearchConfig `toml:"search"`
	// Cluster holds what instances on one store share (config_multi.go).
	Cluster ClusterConfig `toml:"cluster"`
	// LLM and Approval are the programs' runtime: [llm] budgets and the
	// [approval] policy (config_llm.go).
	LLM      LLMConfig      `toml:"llm"`
	Approval ApprovalConfig `toml:"approval"`
	// Cache is the programs' cache and memoisation (config_cache.go).
	Cache CacheConfig `toml:"cache"`
	// Access says which tools each caller may reach (config_access.go).
	Access AccessConfig `toml:"access"`

	// file is the configuration file read, "" for none: the confinement
	// of upstream servers denies it to them (harden.go).
	file string
	// listening are the TCP ports codecell serves on, none over stdio:
	// the confinement of upstream servers denies connecting to them
	// (harden.go).
	listening []int
}

// ServerConfig holds transports, the catalogue and logging.
type ServerConfig struct {
	HTTP           string   `toml:"http"`
	Expose         string   `toml:"expose"`
	Catalog        string   `toml:"catalog"`
	DataDir        string   `toml:"data_dir"`
	ShutdownGrace  Duration `toml:"shutdown_grace"`
	ReadTimeout    Duration `toml:"read_timeout"`
	IdleTimeout    Duration `toml:"idle_timeout"`
	LogLevel       string   `toml:"log_level"`
	LogFormat      string   `toml:"log_format"`
	AllowedOrigins []string `toml:"allowed_origins"`
	// MCPConfig is a file in Claude Desktop's format whose mcpServers
	// codecell bridges, beside the [upstream.NAME] tables.
	MCPConfig string `toml:"mcp_config"`
	// UpstreamWait bounds how long startup waits for upstream servers.
	UpstreamWait Duration `toml:"upstream_wait"`
	// LoadWait bounds how long a client's initialize waits for the tool
	// sources still loading (OpenAPI descriptions); 0 answers at once,
	// with those sources listed as loading.
	LoadWait Duration `toml:"load_wait"`
	// ReadOnly keeps only the tools annotated read-only (config_access.go).
	ReadOnly bool `toml:"read_only"`
	// ListPageSize is how many entries one page of tools/list,
	// prompts/list, resources/list and resources/templates/list holds
	// (mcpserver.Config.ListPageSize).
	ListPageSize int `toml:"list_page_size"`
}

// SandboxConfig holds the executor's pool and limits.
type SandboxConfig struct {
	Isolation string `toml:"isolation"`
	PoolSize  int    `toml:"pool_size"`
	// ReservedSlots are the pool's slots that runs past the default
	// deadline (timeout) never take; 0 means a quarter of the pool,
	// negative none (executor.Config.ReservedSlots).
	ReservedSlots      int      `toml:"reserved_slots"`
	QueueWait          Duration `toml:"queue_wait"`
	Timeout            Duration `toml:"timeout"`
	MaxTimeout         Duration `toml:"max_timeout"`
	MemoryLimitMiB     int      `toml:"memory_limit_mib"`
	MaxStackFrames     int      `toml:"max_stack_frames"`
	MaxCodeBytes       int      `toml:"max_code_bytes"`
	MaxToolCalls       int      `toml:"max_tool_calls"`
	MaxConcurrentCalls int      `toml:"max_concurrent_calls"`
	MaxLogLines        int      `toml:"max_log_lines"`
	MaxLogBytes        int      `toml:"max_log_bytes"`
	MaxResultBytes     int      `toml:"max_result_bytes"`
	PlanTTL            Duration `toml:"plan_ttl"`
	// MaxTaskDuration caps the deadline of a run made as an MCP task, in
	// place of max_timeout ([tasks], config_tasks.go).
	MaxTaskDuration Duration `toml:"max_task_duration"`
}

// AuthConfig holds the bearer tokens HTTP clients present.
type AuthConfig struct {
	Tokens []TokenConfig `toml:"tokens"`
	// OAuth is the [auth.oauth] table (config_oauth.go).
	OAuth OAuthConfig `toml:"oauth"`
}

// TokenConfig maps one bearer token to the principal it authenticates.
// The token is given inline or, better, read from the environment variable
// TokenEnv names.
type TokenConfig struct {
	Principal string `toml:"principal"`
	Token     string `toml:"token"`
	TokenEnv  string `toml:"token_env"`
}

// LimitsConfig holds per-principal rate limits and global caps.
type LimitsConfig struct {
	ExecutionsPerMinute int   `toml:"executions_per_minute"`
	ExecutionBurst      int   `toml:"execution_burst"`
	ToolCallsPerMinute  int   `toml:"tool_calls_per_minute"`
	ToolCallBurst       int   `toml:"tool_call_burst"`
	MaxInFlight         int   `toml:"max_in_flight"`
	MaxQueued           int   `toml:"max_queued"`
	MaxBodyBytes        int64 `toml:"max_body_bytes"`
	// Bytes of tool results in flight, every tool's, over all runs and in
	// one run, each result counted as what it decodes into.
	ResultBytesInFlight       int64 `toml:"result_bytes_in_flight"`
	ResultBytesInFlightPerRun int64 `toml:"result_bytes_in_flight_per_run"`
	// BridgedListed is how many prompts of one bridged MCP server are
	// served, and resources and templates listed, each
	// (mcpserver.Config.BridgedListed).
	BridgedListed int `toml:"bridged_listed"`
	// MaxJournalBytes bounds what a run of protocol 2026-07-28 keeps to
	// be replayed after input_required.
	MaxJournalBytes int `toml:"max_journal_bytes"`
	// MaxPrincipalJournalBytes bounds a principal's stored journals
	// together (memory.Limits.MaxPrincipalJournalBytes).
	MaxPrincipalJournalBytes int64 `toml:"max_principal_journal_bytes"`
	// MaxPrincipalPlanBytes bounds the bytes of a principal's live dry-run
	// plans together, kept for sandbox.plan_ttl unless committed
	// (memory.Limits.MaxPrincipalPlanBytes).
	MaxPrincipalPlanBytes int64 `toml:"max_principal_plan_bytes"`
	// AuditCallRowsPerDay is how many of a principal's tool calls a day
	// the audit log keeps a row each; past it, a run's calls are kept as
	// one row per tool and outcome with their count
	// (engine.Limits.AuditCallRowsPerDay).
	AuditCallRowsPerDay int `toml:"audit_call_rows_per_day"`
	// Stdio applies the per-principal rate limits to stdio's local user
	// too; by default they apply to HTTP principals only.
	Stdio bool `toml:"stdio"`
	// Session state (token vaults and ledgers), kept in memory.
	SessionIdleTTL       Duration `toml:"session_idle_ttl"`
	SessionsPerPrincipal int      `toml:"sessions_per_principal"`
	VaultBytes           int      `toml:"vault_bytes"`
	// PrincipalVaultBytes bounds one principal's vaults together; 0
	// means a quarter of TotalVaultBytes, at least VaultBytes.
	PrincipalVaultBytes int `toml:"principal_vault_bytes"`
	TotalVaultBytes     int `toml:"total_vault_bytes"`
}

// FilterConfig holds the output filter's policy.
type FilterConfig struct {
	BudgetBytes    int               `toml:"budget_bytes"`
	MaxBudgetBytes int               `toml:"max_budget_bytes"`
	Policy         map[string]string `toml:"policy"`
	AllowFields    []string          `toml:"allow_fields"`
	AllowTools     []string          `toml:"allow_tools"`
	Rules          []RuleConfig      `toml:"rules"`
	KeyFile        string            `toml:"key_file"`
}

// RuleConfig forbids values that came from tools matching From to be
// passed to tools matching To.
type RuleConfig struct {
	From string `toml:"from"`
	To   string `toml:"to"`
}

// MemoryConfig holds the store and its embedder.
type MemoryConfig struct {
	Path               string   `toml:"path"`
	Embedder           string   `toml:"embedder"`
	EmbedderURL        string   `toml:"embedder_url"`
	EmbedderModel      string   `toml:"embedder_model"`
	EmbedderKeyEnv     string   `toml:"embedder_key_env"`
	EmbedderDimensions int      `toml:"embedder_dimensions"`
	AuditMaxAge        Duration `toml:"audit_max_age"`
	ResultsMaxAge      Duration `toml:"results_max_age"`
	// ResultsMaxPrincipalBytes and ResultsMaxBytes bound stored results
	// (compressed) per principal and in all, at write time
	// (memory.Limits.MaxPrincipalResultsBytes, MaxResultsBytes).
	ResultsMaxPrincipalBytes int64 `toml:"results_max_principal_bytes"`
	ResultsMaxBytes          int64 `toml:"results_max_bytes"`
	WorkspaceMaxFileBytes    int64 `toml:"workspace_max_file_bytes"`
	WorkspaceMaxBytes        int64 `toml:"workspace_max_bytes"`
	// Quotas of a principal's memories and graph (memory.Limits).
	MaxMemories       int   `toml:"max_memories"`
	MaxMemoryBytes    int64 `toml:"max_memory_bytes"`
	MaxGraphEntities  int   `toml:"max_graph_entities"`
	MaxGraphRelations int   `toml:"max_graph_relations"`
	MaxGraphBytes     int64 `toml:"max_graph_bytes"`
	// Backend and DSN choose the store (config_backend.go).
	Backend   string `toml:"backend"`
	DSN       string `toml:"dsn"`
	PGVectors string `toml:"pg_vectors"`
}

// Duration is tools.Duration, the one duration type of the configuration,
// under a short name for the sections' fields.
type Duration = tools.Duration

// defaultConfig is the configuration of a fresh install. The commented file
// that `codecell config init` writes must say the same (a test checks).
func defaultConfig() Config {
	c := Config{
		Server: ServerConfig{
			Expose:        "code",
			ShutdownGrace: Duration(10 * time.Second),
			ReadTimeout:   Duration(30 * time.Second),
			IdleTimeout:   Duration(2 * time.Minute),
			LogLevel:      "info",
			LogFormat:     "text",
			UpstreamWait:  Duration(2 * time.Second),
			ListPageSize:  mcpserver.DefaultListPageSize,
		},
		// The executor's own defaults: it applies them to a zero Config,
		// and this file, config.default.toml and docs/configuration.md say
		// the same (TestDefaultFileMatchesDefaults, TestConfigReference).
		Sandbox: SandboxConfig{
			Isolation:          "process",
			QueueWait:          Duration(executor.DefaultQueueWait),
			Timeout:            Duration(executor.DefaultTimeout),
			MaxTimeout:         Duration(executor.DefaultMaxTimeout),
			MemoryLimitMiB:     executor.DefaultMemoryLimit >> 20,
			MaxStackFrames:     executor.DefaultMaxStackFrames,
			MaxCodeBytes:       executor.DefaultMaxCodeBytes,
			MaxToolCalls:       executor.DefaultMaxToolCalls,
			MaxConcurrentCalls: executor.DefaultMaxConcurrentCalls,
			MaxLogLines:        executor.DefaultMaxLogLines,
			MaxLogBytes:        executor.DefaultMaxLogBytes,
			MaxResultBytes:     0, // the heap limit
			PlanTTL:            Duration(time.Hour),
			MaxTaskDuration:    Duration(10 * time.Minute),
		},
		Limits: LimitsConfig{
			ExecutionsPerMinute:       600,
			ExecutionBurst:            60,
			ToolCallsPerMinute:        6000,
			ToolCallBurst:             1000, // at least sandbox.max_tool_calls
			MaxInFlight:               64,
			MaxQueued:                 256,
			MaxBodyBytes:              4 << 20,
			ResultBytesInFlight:       256 << 20,
			ResultBytesInFlightPerRun: 128 << 20,
			BridgedListed:             mcpserver.DefaultBridgedListed,
			MaxJournalBytes:           1 << 20, // engine.DefaultMaxJournalBytes
			MaxPrincipalJournalBytes:  64 << 20,
			MaxPrincipalPlanBytes:     8 << 20, // one plan of the largest size, sealed, and room for small ones
			AuditCallRowsPerDay:       10000,   // engine.DefaultAuditCallRowsPerDay: about 2.8 MiB of rows a principal a day
			SessionIdleTTL:            Duration(time.Hour),
			SessionsPerPrincipal:      64,
			VaultBytes:                8 << 20,
			TotalVaultBytes:           256 << 20,
		},
		Filter: FilterConfig{
			BudgetBytes:    16 << 10,
			MaxBudgetBytes: 256 << 10,
		},
		Tasks:  defaultTasks(),
		Search: defaultSearch(),
		Memory: MemoryConfig{
			Embedder:                 "offline",
			Backend:                  backendSQLite,
			PGVectors:                defaultPGVectors,
			EmbedderKeyEnv:           "CODECELL_EMBEDDER_API_KEY",
			AuditMaxAge:              Duration(30 * 24 * time.Hour),
			ResultsMaxAge:            Duration(7 * 24 * time.Hour),
			ResultsMaxPrincipalBytes: 128 << 20,
			ResultsMaxBytes:          1 << 30,
			WorkspaceMaxFileBytes:    8 << 20,
			WorkspaceMaxBytes:        256 << 20,
			MaxMemories:              100_000,
			MaxMemoryBytes:           256 << 20,
			MaxGraphEntities:         100_000,
			MaxGraphRelations:        200_000,
			MaxGraphBytes:            64 << 20,
		},
		Cache: defaultCacheConfig(),
	}
	defaultRuntimeConfig(&c)
	return c
}

//go:embed config.default.toml
var defaultConfigFile string

// envPrefix starts every environment variable codecell reads.
const envPrefix = "CODECELL_"

// configError is a configuration problem at a key path.
type configError struct {
	key, msg string
}

func (e configError) Error() string { return e.key + ": " + e.msg }

// configSources are what loadConfig reads, each overriding the one before.
type configSources struct {
	file    string            // a TOML file; "" for none
	environ []string          // NAME=value, as os.Environ returns them
	flags   map[string]string // key → value
}

// provenance says what a configuration was made of.
type provenance struct {
	// file is the file read, "" when none; fileFrom says how it was
	// found: --config, CODECELL_CONFIG or the default location.
	file, fileFrom string
	// searched is the default location, when no file was named and none
	// was there.
	searched string
	// env lists the environment variables that set keys, sorted.
	env []string
	// flags lists the keys set by flags, sorted.
	flags []string
	// unknownEnv are CODECELL_* variables that name no key: a typo the
	// server would otherwise ignore.
	unknownEnv []error
}

// loadConfig builds the configuration from the file, then the environment,
// then the flags. It returns every problem found at once — unreadable
// values, unknown keys, bad values — each naming its key, and says what
// contributed.
func loadConfig(src configSources) (Config, provenance, error) {
	cfg := defaultConfig()
	pv := provenance{file: src.file}
	getenv := lookupEnv(src.environ)
	var errs []error
	if src.file != "" {
		for _, p := range decodeFile(src.file, &cfg) {
			errs = append(errs, fmt.Errorf("%s: %w", src.file, p))
		}
	}
	for _, f := range configFields() {
		name := envName(f.key)
		if v := getenv(name); v != "" {
			pv.env = append(pv.env, name)
			if err := f.set(&cfg, v); err != nil {
				errs = append(errs, configError{f.key + " (from " + name + ")", err.Error()})
			}
		}
	}
	if v := getenv(envPrefix + "AUTH_TOKENS"); v != "" {
		pv.env = append(pv.env, envPrefix+"AUTH_TOKENS")
		toks, err := parseTokenList(v)
		if err != nil {
			errs = append(errs, configError{"auth.tokens (from CODECELL_AUTH_TOKENS)", err.Error()})
		}
		cfg.Auth.Tokens = append(cfg.Auth.Tokens, toks...)
	}
	sort.Strings(pv.env)
	for k := range src.flags {
		pv.flags = append(pv.flags, k)
	}
	sort.Strings(pv.flags)
	for _, k := range pv.flags {
		f, ok := fieldByKey(k)
		if !ok {
			errs = append(errs, configError{k, "unknown key"})
			continue
		}
		if err := f.set(&cfg, src.flags[k]); err != nil {
			errs = append(errs, configError{k + " (from --" + flagName(k) + ")", err.Error()})
		}
	}
	// A bad value names where it was set, when not in the file.
	from := map[string]string{}
	for _, f := range configFields() {
		if slices.Contains(pv.env, envName(f.key)) {
			from[f.key] = envName(f.key)
		}
	}
	for _, k := range pv.flags {
		from[k] = "--" + flagName(k)
	}
	for _, e := range cfg.validate(getenv) {
		if ce, ok := e.(configError); ok && from[ce.key] != "" {
			e = configError{ce.key + " (from " + from[ce.key] + ")", ce.msg}
		}
		errs = append(errs, e)
	}
	pv.unknownEnv = unknownEnv(src.environ, cfg)
	return cfg, pv, errors.Join(errs...)
}

// lookupEnv makes a getenv over environ.
func lookupEnv(environ []string) func(string) string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(k string) string { return m[k] }
}

// decodeFile decodes the TOML file at path into cfg one key at a time, so
// that a value of the wrong type does not hide the other problems, and
// returns every problem: syntax, types and unknown keys.
func decodeFile(path string, cfg *Config) []error {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return []error{fmt.Errorf("no such file; write one with codecell config init %s", path)}
		}
		return []error{fmt.Errorf("read: %w", err)}
	}
	var sections map[string]toml.Primitive
	md, err := toml.Decode(string(data), &sections)
	if err != nil {
		return []error{errors.New(tomlError(err))}
	}
	var errs []error
	// reported holds the keys already reported, so that what lies below
	// them is not reported again.
	reported := map[string]bool{}
	root := reflect.ValueOf(cfg).Elem()
	known := map[string]int{}
	for i := range root.NumField() {
		known[tomlName(root.Type().Field(i))] = i
	}
	for _, name := range slices.Sorted(maps.Keys(sections)) {
		i, ok := known[name]
		if !ok {
			errs = append(errs, unknownKey(name))
			reported[name] = true
			continue
		}
		// A table made implicit by [[auth.tokens]] has no type of its own.
		if t := md.Type(name); t != "Hash" && t != "" {
			errs = append(errs, configError{name, fmt.Sprintf("want a table ([%s]), got %s", name, tomlType(t))})
			reported[name] = true
			continue
		}
		sec := root.Field(i)
		if name == upstreamSection {
			var values map[string]toml.Primitive
			if err := md.PrimitiveDecode(sections[name], &values); err != nil {
				errs = append(errs, configError{name, tomlError(err)})
				reported[name] = true
				continue
			}
			errs = append(errs, decodeUpstreams(md, values, cfg, reported)...)
			continue
		}
		if sec.Kind() == reflect.Map { // tables of named tables, such as [openapi.NAME]
			errs = append(errs, decodeTables(md, name, sections[name], sec, reported)...)
			continue
		}
		var values map[string]toml.Primitive
		if err := md.PrimitiveDecode(sections[name], &values); err != nil {
			errs = append(errs, configError{name, tomlError(err)})
			reported[name] = true
			continue
		}
		fields := map[string]int{}
		for j := range sec.NumField() {
			fields[tomlName(sec.Type().Field(j))] = j
		}
		for _, field := range slices.Sorted(maps.Keys(values)) {
			kk := toml.Key{name, field}
			key := kk.String()
			j, ok := fields[field]
			if !ok {
				errs = append(errs, unknownKey(key))
				reported[key] = true
				continue
			}
			if f := sec.Field(j); f.Kind() == reflect.Map && f.Type().Elem().Kind() == reflect.Struct { // [access.principal.NAME]
				errs = append(errs, decodeNamedTables(md, kk, values[field], f, reported)...)
				continue
			}
			// A fresh value: one that fails to decode leaves the default.
			v := reflect.New(sec.Field(j).Type())
			if err := md.PrimitiveDecode(values[field], v.Interface()); err != nil {
				errs = append(errs, configError{key, typeProblem(md, kk, v.Elem().Type(), err)})
				reported[key] = true
				continue
			}
			sec.Field(j).Set(v.Elem())
		}
	}
	// Keys inside tables of tables, such as [[auth.tokens]].
	for _, k := range md.Undecoded() {
		if !underReported(k, reported) {
			errs = append(errs, unknownKey(k.String()))
			reported[k.String()] = true
		}
	}
	return errs
}

func underReported(k toml.Key, reported map[string]bool) bool {
	for i := 1; i <= len(k); i++ {
		if reported[k[:i].String()] {
			return true
		}
	}
	return false
}

func unknownKey(key string) error {
	msg := "unknown key"
	if s := closestKey(key); s != "" {
		msg += fmt.Sprintf("; did you mean %s?", s)
	}
	return configError{key, msg}
}

// typeProblem says why the value at key does not fit a field of type t.
func typeProblem(md toml.MetaData, key toml.Key, t reflect.Type, err error) string {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return pe.Message // a value's own reason, such as a bad duration
	}
	var want string
	switch {
	case t == reflect.TypeOf(Duration(0)):
		want = `a duration such as "5s"`
	case t.Kind() == reflect.String:
		want = "a string"
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		want = "a whole number"
	case t.Kind() == reflect.Bool:
		want = "true or false"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		want = `a list of strings such as ["a", "b"]`
	case t.Kind() == reflect.Map:
		want = `a table of strings such as {email = "tokenize"}`
		if md.Type(key...) == "Hash" {
			for _, k := range md.Keys() {
				if len(k) == len(key)+1 && k[:len(key)].String() == key.String() && md.Type(k...) != "String" {
					return fmt.Sprintf("want %s; %s is %s", want, k, tomlType(md.Type(k...)))
				}
			}
		}
	default:
		return strings.TrimPrefix(err.Error(), "toml: ")
	}
	return fmt.Sprintf("want %s, got %s", want, tomlType(md.Type(key...)))
}

// tomlType names a TOML type as the decoder's MetaData.Type reports it.
func tomlType(t string) string {
	switch t {
	case "String":
		return "a string"
	case "Integer":
		return "a whole number"
	case "Float":
		return "a decimal number"
	case "Bool":
		return "a boolean"
	case "Datetime":
		return "a date"
	case "Array":
		return "a list"
	case "Hash":
		return "a table"
	case "ArrayHash":
		return "a list of tables"
	}
	return "a value of type " + t
}

// tomlError shortens the TOML decoder's error to its position and reason.
func tomlError(err error) string {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("line %d: %s", pe.Position.Line, pe.Message)
	}
	return strings.TrimPrefix(err.Error(), "toml: ")
}

// nonKeyEnv are the CODECELL_* variables codecell or its tests read that
// are not configuration keys.
func nonKeyEnv() []string {
	return []string{
		envPrefix + "CONFIG",             // the file to read
		envPrefix + "AUTH_TOKENS",        // auth.tokens as principal=token pairs
		envPrefix + "EMBEDDER_API_KEY",   // memory.embedder_key_env's default
		envPrefix + "LLM_API_KEY",        // llm.provider_key_env's default
		envPrefix + "REQUIRE_NODE",       // tests: fail, not skip, without Node.js
		envPrefix + "DISCLOSURE_REPORT",  // make bench-disclosure's report file
		envPrefix + "MEMORY_CRASH_CHILD", // memory's crash test
		envCPUProfile,                    // a developer's CPU profile of serve
		envTrace,                         // a developer's execution trace of serve
	}
}

// unknownEnv reports the CODECELL_* variables in environ that are neither
// a key nor one of nonKeyEnv nor a variable cfg names (token_env,
// embedder_key_env), each with the nearest known name.
func unknownEnv(environ []string, cfg Config) []error {
	var known []string
	for _, f := range configFields() {
		known = append(known, envName(f.key))
	}
	known = append(known, nonKeyEnv()...)
	named := map[string]bool{cfg.Memory.EmbedderKeyEnv: true, cfg.LLM.ProviderKeyEnv: true}
	for _, t := range cfg.Auth.Tokens {
		named[t.TokenEnv] = true
	}
	maps.Copy(named, openAPIEnv(cfg))
	named[cfg.Auth.OAuth.ClientSecretEnv] = true
	named[cfg.Cluster.KeyEnv] = true
	var errs []error
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || named[name] || slices.Contains(known, name) {
			continue
		}
		msg := "not a configuration variable"
		best, bestD := "", 4
		for _, k := range known {
			if d := tools.EditDistance(name, k, bestD); d < bestD {
				best, bestD = k, d
			}
		}
		if best != "" {
			msg += "; did you mean " + best + "?"
		} else {
			msg += " (a key section.name is CODECELL_SECTION_NAME)"
		}
		errs = append(errs, configError{name, msg})
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
}

// parseTokenList reads "principal=token,principal=token".
func parseTokenList(s string) ([]TokenConfig, error) {
	var out []TokenConfig
	for _, part := range strings.Split(s, ",") {
		p, tok, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || p == "" || tok == "" {
			return nil, errors.New("want principal=token pairs separated by commas")
		}
		out = append(out, TokenConfig{Principal: p, Token: tok})
	}
	return out, nil
}

// validate checks every value and resolves token_env references. It
// returns every problem.
func (c *Config) validate(env func(string) string) []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, configError{key, fmt.Sprintf(format, args...)})
	}
	oneOf := func(key, v string, allowed ...string) {
		for _, a := range allowed {
			if v == a {
				return
			}
		}
		bad(key, "%q is not one of %s", v, strings.Join(allowed, ", "))
	}
	oneOf("server.expose", c.Server.Expose, "code", "direct", "both")
	oneOf("server.log_level", c.Server.LogLevel, "debug", "info", "warn", "error")
	oneOf("server.log_format", c.Server.LogFormat, "text", "json")
	oneOf("sandbox.isolation", c.Sandbox.Isolation, "process", "inprocess")
	if c.Server.HTTP != "" {
		if _, _, err := net.SplitHostPort(c.Server.HTTP); err != nil {
			bad("server.http", "%q is not host:port (e.g. 127.0.0.1:7410)", c.Server.HTTP)
		}
	}
	if c.Server.ShutdownGrace < 0 {
		bad("server.shutdown_grace", "must not be negative")
	}
	if c.Server.UpstreamWait < 0 {
		bad("server.upstream_wait", "must not be negative")
	}
	if c.Server.LoadWait < 0 {
		bad("server.load_wait", "must not be negative")
	}
	errs = append(errs, c.checkUpstreams()...)
	positive := func(key string, v int64) {
		if v <= 0 {
			bad(key, "must be positive, got %d", v)
		}
	}
	positive("server.read_timeout", int64(c.Server.ReadTimeout))
	positive("server.idle_timeout", int64(c.Server.IdleTimeout))
	s := c.Sandbox
	if s.PoolSize < 0 {
		bad("sandbox.pool_size", "must not be negative (0 means one per CPU)")
	}
	if s.PoolSize > 0 && s.ReservedSlots >= s.PoolSize {
		bad("sandbox.reserved_slots", "%d of a pool of %d leaves runs longer than sandbox.timeout no slot; reserve fewer (0 means a quarter of the pool, -1 none)", s.ReservedSlots, s.PoolSize)
	}
	positive("sandbox.queue_wait", int64(s.QueueWait))
	positive("sandbox.timeout", int64(s.Timeout))
	positive("sandbox.max_timeout", int64(s.MaxTimeout))
	if s.Timeout > s.MaxTimeout {
		bad("sandbox.timeout", "%s is above sandbox.max_timeout %s; raise that too (--max-timeout)", s.Timeout.D(), s.MaxTimeout.D())
	}
	if s.MemoryLimitMiB < 1 || s.MemoryLimitMiB > 4096 {
		bad("sandbox.memory_limit_mib", "%d is outside 1..4096", s.MemoryLimitMiB)
	}
	if s.MaxStackFrames < 100 || s.MaxStackFrames > 20000 {
		bad("sandbox.max_stack_frames", "%d is outside 100..20000", s.MaxStackFrames)
	}
	positive("sandbox.max_code_bytes", int64(s.MaxCodeBytes))
	positive("sandbox.max_tool_calls", int64(s.MaxToolCalls))
	positive("sandbox.max_concurrent_calls", int64(s.MaxConcurrentCalls))
	positive("sandbox.max_log_lines", int64(s.MaxLogLines))
	positive("sandbox.max_log_bytes", int64(s.MaxLogBytes))
	if s.MaxResultBytes < 0 {
		bad("sandbox.max_result_bytes", "must not be negative (0 means the heap limit)")
	}

	seen := map[string]bool{}
	for i := range c.Auth.Tokens {
		t := &c.Auth.Tokens[i]
		key := fmt.Sprintf("auth.tokens[%d]", i)
		if t.Principal == "" {
			bad(key+".principal", "is empty; name who the token belongs to")
		}
		if t.TokenEnv != "" {
			if t.Token != "" {
				bad(key, "set token or token_env, not both")
			}
			t.Token = env(t.TokenEnv)
			if t.Token == "" {
				bad(key+".token_env", "environment variable %s is empty or unset", t.TokenEnv)
			}
		}
		if t.Token == "" && t.TokenEnv == "" {
			bad(key+".token", "is empty")
		} else if t.Token != "" && len(t.Token) < 16 {
			bad(key+".token", "is shorter than 16 characters; use a long random token")
		}
		if seen[t.Token] && t.Token != "" {
			bad(key+".token", "is the same as an earlier token")
		}
		seen[t.Token] = true
	}

	l := c.Limits
	positive("limits.executions_per_minute", int64(l.ExecutionsPerMinute))
	positive("limits.execution_burst", int64(l.ExecutionBurst))
	positive("limits.tool_calls_per_minute", int64(l.ToolCallsPerMinute))
	positive("limits.tool_call_burst", int64(l.ToolCallBurst))
	positive("limits.max_in_flight", int64(l.MaxInFlight))
	if l.MaxQueued < 0 {
		bad("limits.max_queued", "must not be negative")
	}
	positive("limits.max_body_bytes", l.MaxBodyBytes)
	positive("limits.result_bytes_in_flight", l.ResultBytesInFlight)
	positive("limits.result_bytes_in_flight_per_run", l.ResultBytesInFlightPerRun)
	positive("limits.bridged_listed", int64(l.BridgedListed))
	positive("server.list_page_size", int64(c.Server.ListPageSize))
	positive("limits.max_journal_bytes", int64(l.MaxJournalBytes))
	if l.MaxJournalBytes > c.Cache.MaxValueBytes {
		bad("limits.max_journal_bytes", "%d is over cache.max_value_bytes %d: the store keeps a run's journal as a cache entry; raise cache.max_value_bytes too, or lower this", l.MaxJournalBytes, c.Cache.MaxValueBytes)
	}
	if l.MaxPrincipalJournalBytes < int64(l.MaxJournalBytes) {
		bad("limits.max_principal_journal_bytes", "%d is below limits.max_journal_bytes %d: a principal's journals together must hold one run's", l.MaxPrincipalJournalBytes, l.MaxJournalBytes)
	}
	if int64(l.MaxJournalBytes) > l.MaxBodyBytes/2 {
		bad("limits.max_journal_bytes", "%d is over half of limits.max_body_bytes %d: without a store the journal comes back in the requestState of the client's retry, a request body; raise max_body_bytes too, or lower this", l.MaxJournalBytes, l.MaxBodyBytes)
	}
	positive("limits.max_principal_plan_bytes", l.MaxPrincipalPlanBytes)
	positive("limits.audit_call_rows_per_day", int64(l.AuditCallRowsPerDay))
	positive("limits.session_idle_ttl", int64(l.SessionIdleTTL))
	positive("limits.sessions_per_principal", int64(l.SessionsPerPrincipal))
	positive("limits.vault_bytes", int64(l.VaultBytes))
	positive("limits.total_vault_bytes", int64(l.TotalVaultBytes))
	if l.PrincipalVaultBytes < 0 {
		bad("limits.principal_vault_bytes", "must not be negative (0 means a quarter of limits.total_vault_bytes)")
	} else if l.PrincipalVaultBytes > 0 && l.PrincipalVaultBytes < l.VaultBytes {
		bad("limits.principal_vault_bytes", "%d is below limits.vault_bytes %d, so a principal's one full vault would be over its share; raise it, lower vault_bytes, or set 0 (a quarter of total_vault_bytes)", l.PrincipalVaultBytes, l.VaultBytes)
	}
	if l.ToolCallBurst < s.MaxToolCalls {
		bad("limits.tool_call_burst", "%d is below sandbox.max_tool_calls %d, so a run is rate-limited before it reaches its own limit; raise the burst or lower max_tool_calls",
			l.ToolCallBurst, s.MaxToolCalls)
	}

	f := c.Filter
	positive("filter.budget_bytes", int64(f.BudgetBytes))
	if f.MaxBudgetBytes < f.BudgetBytes {
		bad("filter.max_budget_bytes", "%d is below filter.budget_bytes %d", f.MaxBudgetBytes, f.BudgetBytes)
	}
	for class, action := range f.Policy {
		switch action {
		case "tokenize", "redact", "mask", "allow":
		default:
			bad("filter.policy."+class, "%q is not one of tokenize, redact, mask, allow", action)
		}
		if !knownClass(class) {
			bad("filter.policy."+class, "unknown class; classes are %s", classList())
		}
	}
	for i, r := range f.Rules {
		if r.From == "" || r.To == "" {
			bad(fmt.Sprintf("filter.rules[%d]", i), "needs both from and to (tool name globs such as crm.*)")
		}
	}

	m := c.Memory
	oneOf("memory.embedder", m.Embedder, "offline", "openai")
	if m.Embedder == "openai" {
		if m.EmbedderURL == "" {
			bad("memory.embedder_url", "is required with the openai embedder (e.g. http://localhost:11434/v1)")
		}
		if m.EmbedderModel == "" {
			bad("memory.embedder_model", "is required with the openai embedder")
		}
		if m.EmbedderDimensions <= 0 {
			bad("memory.embedder_dimensions", "is required with the openai embedder: the length of the model's vectors (e.g. 768)")
		}
	}
	if m.EmbedderDimensions < 0 {
		bad("memory.embedder_dimensions", "must not be negative")
	}
	positive("memory.workspace_max_file_bytes", m.WorkspaceMaxFileBytes)
	positive("memory.results_max_principal_bytes", m.ResultsMaxPrincipalBytes)
	positive("memory.max_memories", int64(m.MaxMemories))
	positive("memory.max_memory_bytes", m.MaxMemoryBytes)
	positive("memory.max_graph_entities", int64(m.MaxGraphEntities))
	positive("memory.max_graph_relations", int64(m.MaxGraphRelations))
	positive("memory.max_graph_bytes", m.MaxGraphBytes)
	if m.ResultsMaxBytes < m.ResultsMaxPrincipalBytes {
		bad("memory.results_max_bytes", "is below memory.results_max_principal_bytes")
	}
	if m.WorkspaceMaxBytes < m.WorkspaceMaxFileBytes {
		bad("memory.workspace_max_bytes", "is below memory.workspace_max_file_bytes")
	}
	errs = append(errs, c.validateOAuth(env)...)
	errs = append(errs, c.validateTasks()...)
	errs = append(errs, c.validateCluster(env)...)
	errs = append(errs, c.validateRuntime()...)
	errs = append(errs, c.validateCache()...)
	errs = append(errs, c.validateAccess()...)
	errs = append(errs, m.validateBackend()...)
	return append(errs, c.validateOpenAPI(env)...)
}

func knownClass(c string) bool {
	for _, k := range filter.Classes {
		if string(k) == c {
			return true
		}
	}
	return false
}

func classList() string {
	var names []string
	for _, k := range filter.Classes {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}

// publicBind reports whether addr listens beyond this machine.
func publicBind(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true
	}
	if host == "localhost" {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err != nil || !ip.IsLoopback()
}

// dataDir returns the directory for the store and the filter key.
func (c *Config) dataDir() (string, error) {
	if c.Server.DataDir != "" {
		return c.Server.DataDir, nil
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "codecell"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find data directory: %w (set server.data_dir)", err)
	}
	return filepath.Join(home, ".local", "share", "codecell"), nil
}

// defaultConfigPath is where codecell looks for its file when not told.
func defaultConfigPath() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "codecell", "config.toml")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".config", "codecell", "config.toml")
}

// configField is one scalar setting reachable from env and flags.
type configField struct {
	key  string
	path []int
	typ  reflect.Type
}

func (f configField) set(cfg *Config, s string) error {
	v := reflect.ValueOf(cfg).Elem().FieldByIndex(f.path)
	switch {
	case f.typ == reflect.TypeOf(Duration(0)):
		var d Duration
		if err := d.UnmarshalText([]byte(s)); err != nil {
			return err
		}
		v.Set(reflect.ValueOf(d))
	case f.typ.Kind() == reflect.String:
		v.SetString(s)
	case f.typ.Kind() == reflect.Int || f.typ.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", s)
		}
		v.SetInt(n)
	case f.typ.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not true or false", s)
		}
		v.SetBool(b)
	case f.typ.Kind() == reflect.Slice && f.typ.Elem().Kind() == reflect.String:
		var parts []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		v.Set(reflect.ValueOf(parts))
	default:
		return fmt.Errorf("cannot be set from text; use the config file")
	}
	return nil
}

// configFields lists every scalar and string-list setting, by key.
func configFields() []configField {
	var out []configField
	top := reflect.TypeOf(Config{})
	for i := range top.NumField() {
		sec := top.Field(i)
		if sec.Type.Kind() != reflect.Struct {
			continue // tables of named tables, decoded on their own
		}
		for j := range sec.Type.NumField() {
			f := sec.Type.Field(j)
			k := f.Type.Kind()
			if k == reflect.Map || k == reflect.Struct || (k == reflect.Slice && f.Type.Elem().Kind() != reflect.String) {
				continue
			}
			out = append(out, configField{
				key:  tomlName(sec) + "." + tomlName(f),
				path: []int{i, j},
				typ:  f.Type,
			})
		}
	}
	return out
}

func fieldByKey(key string) (configField, bool) {
	for _, f := range configFields() {
		if f.key == key {
			return f, true
		}
	}
	return configField{}, false
}

func tomlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return name
}

func envName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// closestKey suggests a known key for a misspelt one: a section for a
// section, a key for a key, a field of a table list (auth.tokens.token_env)
// for one of those.
func closestKey(key string) string {
	depth := strings.Count(key, ".")
	best, bestD := "", 4
	for _, k := range allKeys() {
		if strings.Count(k, ".") != depth {
			continue
		}
		if d := tools.EditDistance(key, k, bestD); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// allKeys lists every key the file may hold: sections, their keys, and
// the keys of the tables in table lists such as [[auth.tokens]].
func allKeys() []string {
	var out []string
	top := reflect.TypeOf(Config{})
	for i := range top.NumField() {
		sec := top.Field(i)
		out = append(out, tomlName(sec))
		if sec.Type.Kind() != reflect.Struct {
			continue
		}
		for j := range sec.Type.NumField() {
			f := sec.Type.Field(j)
			key := tomlName(sec) + "." + tomlName(f)
			out = append(out, key)
			if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct {
				for k := range f.Type.Elem().NumField() {
					out = append(out, key+"."+tomlName(f.Type.Elem().Field(k)))
				}
			}
		}
	}
	return out
}
