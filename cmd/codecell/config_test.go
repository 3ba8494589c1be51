package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

// TestDefaultFileMatchesDefaults keeps `codecell config init`'s commented
// file and the built-in defaults saying the same thing.
func TestDefaultFileMatchesDefaults(t *testing.T) {
	t.Parallel()
	var fromFile Config
	md, err := toml.Decode(defaultConfigFile, &fromFile)
	if err != nil {
		t.Fatal(err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		t.Fatalf("unknown keys in the default file: %v", und)
	}
	want := defaultConfig()
	// Empty tables and lists decode as empty, not nil.
	want.Filter.Policy = map[string]string{}
	want.Filter.AllowFields, want.Filter.AllowTools, want.Server.AllowedOrigins = []string{}, []string{}, []string{}
	if !reflect.DeepEqual(fromFile, want) {
		t.Errorf("default file decodes to\n%+v\nwant\n%+v", fromFile, want)
	}
	// Every key is documented in the file.
	for _, f := range configFields() {
		_, name, _ := strings.Cut(f.key, ".")
		if !strings.Contains(defaultConfigFile, "\n"+name+" = ") {
			t.Errorf("key %s is not in the default file", f.key)
		}
	}
}

func TestPrecedence(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.toml")
	os.WriteFile(path, []byte("[sandbox]\ntimeout = \"2s\"\npool_size = 3\nmax_tool_calls = 7\n"), 0o600)
	env := []string{"CODECELL_SANDBOX_POOL_SIZE=4", "CODECELL_SANDBOX_MAX_TOOL_CALLS=8"}
	cfg, _, err := loadConfig(configSources{path, env, map[string]string{"sandbox.max_tool_calls": "9"}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Sandbox.Timeout.D() != 2*time.Second || cfg.Sandbox.PoolSize != 4 || cfg.Sandbox.MaxToolCalls != 9 {
		t.Errorf("file < env < flags broken: %+v", cfg.Sandbox)
	}
	if cfg.Sandbox.MaxTimeout.D() != time.Minute {
		t.Errorf("unset key lost its default: %v", cfg.Sandbox.MaxTimeout.D())
	}
}

func TestConfigErrorsNameTheirKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		file string
		env  map[string]string
		set  map[string]string
		want []string
	}{
		{name: "unknown key", file: "[sandbox]\ntimout = \"1s\"\n", want: []string{"sandbox.timout: unknown key; did you mean sandbox.timeout?"}},
		{name: "syntax", file: "[sandbox\n", want: []string{"line 2", "table name"}},
		{name: "wrong type", file: "[sandbox]\npool_size = \"many\"\n", want: []string{"pool_size"}},
		{name: "bad duration", env: map[string]string{"CODECELL_SANDBOX_TIMEOUT": "soon"}, want: []string{"sandbox.timeout (from CODECELL_SANDBOX_TIMEOUT)", "not a duration"}},
		{name: "bad number flag", set: map[string]string{"sandbox.pool_size": "two"}, want: []string{"sandbox.pool_size (from --pool)", "whole number"}},
		{name: "enum", set: map[string]string{"server.expose": "all"}, want: []string{`server.expose (from --expose): "all" is not one of code, direct, both`}},
		{name: "timeout above max", set: map[string]string{"sandbox.timeout": "2m"}, want: []string{"sandbox.timeout (from --timeout): 2m0s is above sandbox.max_timeout 1m0s; raise that too (--max-timeout)"}},
		{name: "memory", set: map[string]string{"sandbox.memory_limit_mib": "0"}, want: []string{"sandbox.memory_limit_mib"}},
		{name: "http address", set: map[string]string{"server.http": "7410"}, want: []string{"server.http", "host:port"}},
		{name: "token env unset", file: "[[auth.tokens]]\nprincipal = \"a\"\ntoken_env = \"NOPE_UNSET\"\n", want: []string{"auth.tokens[0].token_env: environment variable NOPE_UNSET is empty"}},
		{name: "short token", env: map[string]string{"CODECELL_AUTH_TOKENS": "alice=short"}, want: []string{"auth.tokens[0].token: is shorter than 16"}},
		{name: "bad token list", env: map[string]string{"CODECELL_AUTH_TOKENS": "justatoken"}, want: []string{"principal=token"}},
		{name: "filter policy", file: "[filter]\npolicy = {email = \"shred\"}\n", want: []string{`filter.policy.email: "shred" is not one of`}},
		{name: "openai embedder needs url", set: map[string]string{"memory.embedder": "openai"}, want: []string{"memory.embedder_url: is required"}},
		{name: "several at once", set: map[string]string{"sandbox.pool_size": "-1", "server.log_level": "loud"}, want: []string{"sandbox.pool_size", "server.log_level"}},
		{
			name: "a type error hides nothing",
			file: "[sandbox]\npool_size = \"many\"\ntimout = \"1s\"\nmax_tool_calls = -1\ntimeout = \"soon\"\n[sandbx]\nx = 1\n" +
				"[[auth.tokens]]\nprinciple = \"a\"\ntoken = \"0123456789abcdef0123\"\n[filter]\nallow_fields = \"x\"\npolicy = {email = 3}\n",
			env: map[string]string{"CODECELL_SERVER_LOG_LEVEL": "loud"},
			set: map[string]string{"sandbox.memory_limit_mib": "0"},
			want: []string{
				"sandbox.pool_size: want a whole number, got a string",
				"sandbox.timout: unknown key; did you mean sandbox.timeout?",
				"sandbox.max_tool_calls: must be positive, got -1",
				`sandbox.timeout: "soon" is not a duration`,
				"sandbx: unknown key; did you mean sandbox?",
				"auth.tokens.principle: unknown key; did you mean auth.tokens.principal?",
				"filter.allow_fields: want a list of strings",
				"filter.policy.email is a whole number",
				`server.log_level (from CODECELL_SERVER_LOG_LEVEL): "loud" is not one of`,
				"sandbox.memory_limit_mib (from --memory-limit): 0 is outside",
			},
		},
		{name: "tool call burst below max tool calls", set: map[string]string{"sandbox.max_tool_calls": "2000"}, want: []string{"limits.tool_call_burst: 1000 is below sandbox.max_tool_calls 2000"}},
		{name: "principal's vaults below one vault", file: "[limits]\nvault_bytes = 1048576\nprincipal_vault_bytes = 65536\n", want: []string{"limits.principal_vault_bytes: 65536 is below limits.vault_bytes 1048576"}},
		{name: "principal's vaults negative", env: map[string]string{"CODECELL_LIMITS_PRINCIPAL_VAULT_BYTES": "-1"}, want: []string{"limits.principal_vault_bytes (from CODECELL_LIMITS_PRINCIPAL_VAULT_BYTES): must not be negative"}},
		{name: "no such file", file: "-", want: []string{"no such file; write one with codecell config init"}},
		{name: "stdio not a boolean", env: map[string]string{"CODECELL_LIMITS_STDIO": "sometimes"}, want: []string{`limits.stdio (from CODECELL_LIMITS_STDIO): "sometimes" is not true or false`}},
		{name: "a section that is no table", file: "sandbox = 3\n", want: []string{"sandbox: want a table ([sandbox]), got a whole number"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.file == "-" {
				path = filepath.Join(dir, "missing.toml")
			} else if tt.file != "" {
				path = filepath.Join(dir, strings.Repeat("x", i+1)+".toml")
				os.WriteFile(path, []byte(tt.file), 0o600)
			}
			_, _, err := loadConfig(configSources{path, environ(tt.env), tt.set})
			if err == nil {
				t.Fatal("loadConfig accepted a bad configuration")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestTokensFromEnvAndFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.toml")
	os.WriteFile(path, []byte("[[auth.tokens]]\nprincipal = \"alice\"\ntoken_env = \"ALICE_TOKEN\"\n"), 0o600)
	env := []string{"ALICE_TOKEN=alice-secret-0123456789", "CODECELL_AUTH_TOKENS=bob=bob-secret-0123456789"}
	cfg, _, err := loadConfig(configSources{path, env, nil})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Auth.Tokens) != 2 || cfg.Auth.Tokens[0].Token != "alice-secret-0123456789" || cfg.Auth.Tokens[1].Principal != "bob" {
		t.Errorf("tokens %+v", cfg.Auth.Tokens)
	}
}

func TestPublicBind(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:7410": false, "localhost:1": false, "[::1]:7410": false,
		"0.0.0.0:7410": true, ":7410": true, "10.0.0.5:80": true, "example.com:80": true,
	} {
		if got := publicBind(addr); got != want {
			t.Errorf("publicBind(%q) = %v, want %v", addr, got, want)
		}
	}
}

// environ turns a map into NAME=value pairs, as os.Environ returns them.
func environ(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

// TestUnknownEnvironment checks that a CODECELL_* variable that is no key
// is reported with the nearest name, and that the variables codecell reads
// besides keys are not.
func TestUnknownEnvironment(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.toml")
	os.WriteFile(path, []byte("[[auth.tokens]]\nprincipal = \"alice\"\ntoken_env = \"CODECELL_TOKEN_ALICE\"\n"), 0o600)
	env := []string{
		"CODECELL_SANDBOX_TIMOUT=3s",
		"CODECELL_WHOLLY_UNKNOWN=1",
		"CODECELL_SANDBOX_TIMEOUT=3s",
		"CODECELL_AUTH_TOKENS=bob=bob-secret-0123456789",
		"CODECELL_TOKEN_ALICE=alice-secret-0123456789",
		"CODECELL_EMBEDDER_API_KEY=k",
		"CODECELL_CONFIG=" + path,
		"CODECELL_REQUIRE_NODE=1",
		"HOME=/nowhere",
	}
	_, pv, err := loadConfig(configSources{file: path, environ: env})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range pv.unknownEnv {
		got = append(got, e.Error())
	}
	want := []string{
		"CODECELL_SANDBOX_TIMOUT: not a configuration variable; did you mean CODECELL_SANDBOX_TIMEOUT?",
		"CODECELL_WHOLLY_UNKNOWN: not a configuration variable (a key section.name is CODECELL_SECTION_NAME)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unknown variables\n%q\nwant\n%q", got, want)
	}
	if wantEnv := []string{"CODECELL_AUTH_TOKENS", "CODECELL_SANDBOX_TIMEOUT"}; !reflect.DeepEqual(pv.env, wantEnv) {
		t.Errorf("variables that set keys %q, want %q", pv.env, wantEnv)
	}
}

// TestConfigCheck runs config check as a user would: it names what the
// configuration came from, shows resolved paths, refuses a misspelt
// variable that serve only warns about.
func TestConfigCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "codecell.toml")
	os.WriteFile(file, []byte("[sandbox]\ntimeout = \"2s\"\n"), 0o600)
	data := filepath.Join(dir, "data")
	tests := []struct {
		name     string
		args     []string
		env      []string
		wantCode int
		want     []string // on stdout when it succeeds, else on stderr
	}{
		{
			name: "defaults",
			args: []string{"config", "check"},
			env:  []string{"XDG_DATA_HOME=" + data, "XDG_CONFIG_HOME=" + filepath.Join(dir, "none")},
			want: []string{
				"#   file         none: no --config, CODECELL_CONFIG unset, no file at " + filepath.Join(dir, "none", "codecell", "config.toml"),
				"#   environment  none",
				"#   flags        none",
				"# Built-in defaults apply to every key.",
				`data_dir = "` + filepath.Join(data, "codecell") + `"`,
				`path = "` + filepath.Join(data, "codecell", "codecell.db") + `"`,
				`key_file = "` + filepath.Join(data, "codecell", "filter.key") + `"`,
			},
		},
		{
			name: "file, environment and flags",
			args: []string{"config", "check", "--config", file, "--max-tool-calls", "10", "--data-dir", data},
			env:  []string{"CODECELL_SANDBOX_POOL_SIZE=2"},
			want: []string{
				"#   file         " + file + " (from --config)",
				"#   environment  CODECELL_SANDBOX_POOL_SIZE",
				"#   flags        --data-dir, --max-tool-calls",
				"# Built-in defaults apply to every other key.",
				`timeout = "2s"`, "pool_size = 2", "max_tool_calls = 10",
				`data_dir = "` + data + `"`,
			},
		},
		{
			name: "file from the environment",
			args: []string{"config", "check"},
			env:  []string{"CODECELL_CONFIG=" + file},
			want: []string{"#   file         " + file + " (from CODECELL_CONFIG)", "#   environment  none"},
		},
		{
			name:     "misspelt variable",
			args:     []string{"config", "check"},
			env:      []string{"CODECELL_SANDBOX_TIMOUT=3s"},
			wantCode: 2,
			want:     []string{"CODECELL_SANDBOX_TIMOUT: not a configuration variable; did you mean CODECELL_SANDBOX_TIMEOUT?"},
		},
		{
			name:     "misspelt variable beside another problem",
			args:     []string{"config", "check", "--timeout", "soon"},
			env:      []string{"CODECELL_SANDBOX_TIMOUT=3s"},
			wantCode: 2,
			want:     []string{"CODECELL_SANDBOX_TIMOUT: not a configuration variable", `sandbox.timeout (from --timeout): "soon" is not a duration`},
		},
		{
			name: "other commands only warn",
			args: []string{"exec", "-"},
			env:  []string{"CODECELL_SANDBOX_TIMOUT=3s", "CODECELL_SERVER_DATA_DIR=" + data},
			want: []string{`"result": 2`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(binary, tt.args...)
			cmd.Env = append(os.Environ(), tt.env...)
			cmd.Stdin = strings.NewReader("1 + 1")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr %s", code, tt.wantCode, errb.String())
			}
			got := out.String()
			if code != 0 {
				got = errb.String()
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("output does not contain %q:\n%s", w, got)
				}
			}
			if tt.name == "other commands only warn" && !strings.Contains(errb.String(), "did you mean CODECELL_SANDBOX_TIMEOUT?") {
				t.Errorf("no warning on stderr: %s", errb.String())
			}
			if code == 0 && tt.args[0] == "config" {
				// What config check prints is a configuration file.
				var c Config
				if _, err := toml.Decode(got, &c); err != nil {
					t.Errorf("output is not TOML: %v", err)
				}
			}
		})
	}
}

// TestLimits checks that the default limits agree with each other and
// reach the server, stdio unlimited unless limits.stdio is set.
func TestLimits(t *testing.T) {
	t.Parallel()
	def, _, err := loadConfig(configSources{})
	if err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	if def.Limits.ToolCallBurst < def.Sandbox.MaxToolCalls {
		t.Errorf("default tool_call_burst %d is below max_tool_calls %d", def.Limits.ToolCallBurst, def.Sandbox.MaxToolCalls)
	}
	if l := serverLimits(def.Limits); l.Stdio || l.ToolCallBurst != def.Limits.ToolCallBurst {
		t.Errorf("default server limits %+v", l)
	}
	cfg, _, err := loadConfig(configSources{environ: []string{"CODECELL_LIMITS_STDIO=true"}})
	if err != nil {
		t.Fatal(err)
	}
	if !serverLimits(cfg.Limits).Stdio {
		t.Error("CODECELL_LIMITS_STDIO=true did not reach the server's limits")
	}
}
