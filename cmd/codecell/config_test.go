package main

import (
	"os"
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
	env := map[string]string{"CODECELL_SANDBOX_POOL_SIZE": "4", "CODECELL_SANDBOX_MAX_TOOL_CALLS": "8"}
	cfg, err := loadConfig(path, func(k string) string { return env[k] }, map[string]string{"sandbox.max_tool_calls": "9"})
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
		{name: "bad number flag", set: map[string]string{"sandbox.pool_size": "two"}, want: []string{"sandbox.pool_size (from flag)", "whole number"}},
		{name: "enum", set: map[string]string{"server.expose": "all"}, want: []string{`server.expose: "all" is not one of code, direct, both`}},
		{name: "timeout above max", set: map[string]string{"sandbox.timeout": "2m"}, want: []string{"sandbox.timeout: 2m0s is above sandbox.max_timeout"}},
		{name: "memory", set: map[string]string{"sandbox.memory_limit_mib": "0"}, want: []string{"sandbox.memory_limit_mib"}},
		{name: "http address", set: map[string]string{"server.http": "7410"}, want: []string{"server.http", "host:port"}},
		{name: "token env unset", file: "[[auth.tokens]]\nprincipal = \"a\"\ntoken_env = \"NOPE_UNSET\"\n", want: []string{"auth.tokens[0].token_env: environment variable NOPE_UNSET is empty"}},
		{name: "short token", env: map[string]string{"CODECELL_AUTH_TOKENS": "alice=short"}, want: []string{"auth.tokens[0].token: is shorter than 16"}},
		{name: "bad token list", env: map[string]string{"CODECELL_AUTH_TOKENS": "justatoken"}, want: []string{"principal=token"}},
		{name: "filter policy", file: "[filter]\npolicy = {email = \"shred\"}\n", want: []string{`filter.policy.email: "shred" is not one of`}},
		{name: "openai embedder needs url", set: map[string]string{"memory.embedder": "openai"}, want: []string{"memory.embedder_url: is required"}},
		{name: "several at once", set: map[string]string{"sandbox.pool_size": "-1", "server.log_level": "loud"}, want: []string{"sandbox.pool_size", "server.log_level"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.file != "" {
				path = filepath.Join(dir, strings.Repeat("x", i+1)+".toml")
				os.WriteFile(path, []byte(tt.file), 0o600)
			}
			_, err := loadConfig(path, func(k string) string { return tt.env[k] }, tt.set)
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
	env := map[string]string{"ALICE_TOKEN": "alice-secret-0123456789", "CODECELL_AUTH_TOKENS": "bob=bob-secret-0123456789"}
	cfg, err := loadConfig(path, func(k string) string { return env[k] }, nil)
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
