package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRuntimeConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file string
		env        []string
		check      func(t *testing.T, c Config)
		wantErr    []string
	}{
		{name: "policy with a principal's override", file: `
[approval]
required_for = ["destructive", "gh.*_delete*"]
[approval.principal.ci]
on_unsupported = "allow"
[llm]
max_calls_per_run = 5
`, check: func(t *testing.T, c Config) {
			a := c.approvalConfig()
			if !slices.Equal(a.RequiredFor, []string{"destructive", "gh.*_delete*"}) || a.OnUnsupported != "refuse" {
				t.Errorf("approval %+v", a)
			}
			if p := a.Principals["ci"]; p.OnUnsupported != "allow" || p.RequiredFor != nil {
				t.Errorf("ci's policy %+v, want allow and the section's globs", p)
			}
			if l := c.llmConfig(); l.MaxCallsPerRun != 5 || l.TokensPerDay != 1_000_000 {
				t.Errorf("llm %+v", l)
			}
		}},
		{name: "environment", env: []string{"CODECELL_LLM_TOKENS_PER_DAY=10", "CODECELL_APPROVAL_REQUIRED_FOR=write"}, check: func(t *testing.T, c Config) {
			if c.LLM.TokensPerDay != 10 || !slices.Equal(c.Approval.RequiredFor, []string{"write"}) {
				t.Errorf("llm %+v approval %+v", c.LLM, c.Approval)
			}
		}},
		{name: "bad values", file: `
[approval]
required_for = ["gh.[_delete"]
on_unsupported = "maybe"
[approval.principal.bob]
on_unsupported = "sometimes"
[llm]
max_tokens = 10
default_max_tokens = 20
`, wantErr: []string{
			`approval.on_unsupported: "maybe" is not one of refuse, allow`,
			`approval.principal.bob.on_unsupported: "sometimes"`,
			`approval.required_for[0]: "gh.[_delete" is not`,
			"llm.default_max_tokens: 20 is above llm.max_tokens 10",
		}},
		{name: "provider", file: `
[llm]
provider = "openai"
provider_url = "http://127.0.0.1:11434/v1"
provider_model = "qwen2.5:7b"
prefer = "provider"
`, check: func(t *testing.T, c Config) {
			l := c.llmConfig()
			if l.Provider == nil || l.Provider.URL != "http://127.0.0.1:11434/v1" || l.Provider.Model != "qwen2.5:7b" ||
				l.Provider.APIKeyEnv != "CODECELL_LLM_API_KEY" || l.Prefer != "provider" {
				t.Errorf("llm %+v provider %+v", l, l.Provider)
			}
		}},
		{name: "no provider", check: func(t *testing.T, c Config) {
			if l := c.llmConfig(); l.Provider != nil || l.Prefer != "client" {
				t.Errorf("llm %+v, want the client's model only", l)
			}
		}},
		{name: "bad provider", file: `
[llm]
provider = "openai"
provider_url = "ftp://user:pw@host/v1"
prefer = "server"
`, wantErr: []string{
			`llm.provider_model: is required with provider "openai"`,
			`llm.provider_url: "ftp://user:pw@host/v1" is not an http(s) URL`,
			`llm.prefer: "server" is not one of client, provider`,
		}},
		{name: "prefer provider without one", file: `
[llm]
prefer = "provider"
`, wantErr: []string{`llm.prefer: is "provider" but llm.provider is not set`}},
		{name: "unknown provider", file: `
[llm]
provider = "anthropic"
`, wantErr: []string{`llm.provider: "anthropic" is not`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var file string
			if tc.file != "" {
				file = filepath.Join(t.TempDir(), "c.toml")
				if err := os.WriteFile(file, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg, _, err := loadConfig(configSources{file: file, environ: tc.env})
			if len(tc.wantErr) > 0 {
				for _, w := range tc.wantErr {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("error %v, want it to say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, cfg)
		})
	}
}
