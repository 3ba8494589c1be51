package main

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"

	"github.com/codecell/codecell/mcpserver/engine"
)

// This file reads the [llm] and [approval] sections: the budgets of the
// programs' llm calls (MCP sampling to the client, or a provider of the
// server's own) and the tool calls the client's user approves first (MCP
// elicitation).
//
//	[llm]
//	max_calls_per_run = 50
//	tokens_per_day = 1000000
//	provider = "openai"
//	provider_url = "http://127.0.0.1:11434/v1"
//	provider_model = "qwen2.5:7b"
//
//	[approval]
//	required_for = ["destructive", "gh.*_delete*"]
//	on_unsupported = "refuse"
//
//	[approval.principal.ci]
//	on_unsupported = "allow"

// LLMConfig is the [llm] section (engine.LLMConfig).
type LLMConfig struct {
	MaxCallsPerRun   int `toml:"max_calls_per_run"`
	MaxTokensPerRun  int `toml:"max_tokens_per_run"`
	CallsPerMinute   int `toml:"calls_per_minute"`
	TokensPerDay     int `toml:"tokens_per_day"`
	DefaultMaxTokens int `toml:"default_max_tokens"`
	MaxTokens        int `toml:"max_tokens"`
	// Provider is "" (none: the client's model only) or "openai" (an
	// OpenAI-compatible chat completions endpoint at ProviderURL).
	Provider       string `toml:"provider"`
	ProviderURL    string `toml:"provider_url"`
	ProviderModel  string `toml:"provider_model"`
	ProviderKeyEnv string `toml:"provider_key_env"`
	// Prefer is "client" or "provider" (engine.PreferClient, …).
	Prefer string `toml:"prefer"`
}

// ApprovalConfig is the [approval] section (engine.ApprovalConfig).
type ApprovalConfig struct {
	RequiredFor   []string `toml:"required_for"`
	OnUnsupported string   `toml:"on_unsupported"`
	// Principal overrides the policy for a principal:
	// [approval.principal.NAME].
	Principal map[string]ApprovalPrincipalConfig `toml:"principal"`
}

// ApprovalPrincipalConfig is one [approval.principal.NAME] table; a key
// left out keeps the section's.
type ApprovalPrincipalConfig struct {
	RequiredFor   []string `toml:"required_for"`
	OnUnsupported string   `toml:"on_unsupported"`
}

// defaultRuntimeConfig sets the defaults of [llm] and [approval].
func defaultRuntimeConfig(c *Config) {
	d := engine.LLMConfig{}.WithDefaults()
	c.LLM = LLMConfig{
		MaxCallsPerRun:   d.MaxCallsPerRun,
		MaxTokensPerRun:  d.MaxTokensPerRun,
		CallsPerMinute:   d.CallsPerMinute,
		TokensPerDay:     d.TokensPerDay,
		DefaultMaxTokens: d.DefaultMaxTokens,
		MaxTokens:        d.MaxTokens,
		ProviderKeyEnv:   envPrefix + "LLM_API_KEY",
		Prefer:           d.Prefer,
	}
	c.Approval = ApprovalConfig{RequiredFor: []string{}, OnUnsupported: "refuse"}
}

// validateRuntime checks [llm] and [approval].
func (c *Config) validateRuntime() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, configError{key, fmt.Sprintf(format, args...)})
	}
	l := c.LLM
	for key, v := range map[string]int{
		"llm.max_calls_per_run": l.MaxCallsPerRun, "llm.max_tokens_per_run": l.MaxTokensPerRun,
		"llm.calls_per_minute": l.CallsPerMinute, "llm.tokens_per_day": l.TokensPerDay,
		"llm.default_max_tokens": l.DefaultMaxTokens, "llm.max_tokens": l.MaxTokens,
	} {
		if v < 1 {
			bad(key, "must be at least 1")
		}
	}
	if l.DefaultMaxTokens > l.MaxTokens {
		bad("llm.default_max_tokens", "%d is above llm.max_tokens %d", l.DefaultMaxTokens, l.MaxTokens)
	}
	switch l.Provider {
	case "":
		if l.Prefer == engine.PreferProvider {
			bad("llm.prefer", "is %q but llm.provider is not set", l.Prefer)
		}
	case "openai":
		if l.ProviderURL == "" {
			bad("llm.provider_url", "is required with provider \"openai\" (e.g. http://127.0.0.1:11434/v1 for Ollama)")
		} else if u, err := url.Parse(l.ProviderURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("llm.provider_url", "%q is not an http(s) URL such as http://127.0.0.1:11434/v1", l.ProviderURL)
		} else if u.User != nil {
			bad("llm.provider_url", "must not carry credentials; put the key in the variable llm.provider_key_env names")
		}
		if l.ProviderModel == "" {
			bad("llm.provider_model", "is required with provider \"openai\": the chat model's name as the server knows it")
		}
	default:
		bad("llm.provider", "%q is not \"\" (none) or \"openai\" (an OpenAI-compatible chat endpoint)", l.Provider)
	}
	if l.Prefer != engine.PreferClient && l.Prefer != engine.PreferProvider {
		bad("llm.prefer", "%q is not one of client, provider", l.Prefer)
	}
	check := func(at string, requiredFor []string, onUnsupported string) {
		if onUnsupported != "" && onUnsupported != "refuse" && onUnsupported != "allow" {
			bad(at+".on_unsupported", "%q is not one of refuse, allow", onUnsupported)
		}
		for i, g := range requiredFor {
			if _, err := path.Match(g, ""); err != nil || g == "" {
				bad(fmt.Sprintf("%s.required_for[%d]", at, i), "%q is not \"destructive\", \"write\" or a tool name glob such as \"gh.*_delete*\"", g)
			}
		}
	}
	check("approval", c.Approval.RequiredFor, c.Approval.OnUnsupported)
	for _, name := range slices.Sorted(maps.Keys(c.Approval.Principal)) {
		p := c.Approval.Principal[name]
		check("approval.principal."+name, p.RequiredFor, p.OnUnsupported)
	}
	slices.SortFunc(errs, func(a, b error) int {
		if a.Error() < b.Error() {
			return -1
		}
		return 1
	})
	return errs
}

// llmConfig is the server's view of [llm].
func (c *Config) llmConfig() engine.LLMConfig {
	l := c.LLM
	return engine.LLMConfig{
		MaxCallsPerRun:   l.MaxCallsPerRun,
		MaxTokensPerRun:  l.MaxTokensPerRun,
		CallsPerMinute:   l.CallsPerMinute,
		TokensPerDay:     l.TokensPerDay,
		DefaultMaxTokens: l.DefaultMaxTokens,
		MaxTokens:        l.MaxTokens,
		Prefer:           l.Prefer,
		Provider:         l.provider(),
	}
}

// provider is the server's view of the provider keys; nil without one.
func (l LLMConfig) provider() *engine.ProviderConfig {
	if l.Provider == "" {
		return nil
	}
	return &engine.ProviderConfig{URL: l.ProviderURL, Model: l.ProviderModel, APIKeyEnv: l.ProviderKeyEnv}
}

// approvalConfig is the server's view of [approval].
func (c *Config) approvalConfig() engine.ApprovalConfig {
	a := c.Approval
	out := engine.ApprovalConfig{ApprovalPolicy: engine.ApprovalPolicy{RequiredFor: a.RequiredFor, OnUnsupported: a.OnUnsupported}}
	if len(a.Principal) > 0 {
		out.Principals = map[string]engine.ApprovalPolicy{}
		for name, p := range a.Principal {
			out.Principals[name] = engine.ApprovalPolicy{RequiredFor: p.RequiredFor, OnUnsupported: p.OnUnsupported}
		}
	}
	return out
}
