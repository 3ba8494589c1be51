package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/tools/openapi"
)

// TestOpenAPIConfig reads [openapi.NAME] tables: every key, nested auth
// included, and durations.
func TestOpenAPIConfig(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.toml")
	os.WriteFile(path, []byte(`
[openapi.github]
spec = "https://example.com/api.github.com.json"
base_url = "https://api.github.com"
auth = { type = "bearer", token_env = "CODECELL_TEST_GH_TOKEN" }
headers = { "X-GitHub-Api-Version" = "2022-11-28" }
include = ["issues/*"]
exclude = ["issues/delete*"]
tags = ["issues"]
methods = ["GET", "POST"]
timeout = "10s"
max_concurrent_calls = 4
rate_limit = "5000/h"
allowed_hosts = ["uploads.github.com"]

[openapi.pets]
spec = "pets.yaml"
read_only = true
disabled = true
`), 0o600)
	cfg, pv, err := loadConfig(configSources{path, environ(map[string]string{"CODECELL_TEST_GH_TOKEN": "ghp_0123456789"}), nil})
	if err != nil {
		t.Fatal(err)
	}
	want := openapi.Config{
		Spec: "https://example.com/api.github.com.json", BaseURL: "https://api.github.com",
		Auth:    openapi.Auth{Type: "bearer", TokenEnv: "CODECELL_TEST_GH_TOKEN"},
		Headers: map[string]string{"X-GitHub-Api-Version": "2022-11-28"},
		Include: []string{"issues/*"}, Exclude: []string{"issues/delete*"}, Tags: []string{"issues"}, Methods: []string{"GET", "POST"},
		Timeout: Duration(10 * time.Second), MaxConcurrentCalls: 4, RateLimit: "5000/h", AllowedHosts: []string{"uploads.github.com"},
	}
	got := cfg.OpenAPI["github"]
	if got.Spec != want.Spec || got.BaseURL != want.BaseURL || got.Auth != want.Auth || got.Headers["X-GitHub-Api-Version"] != "2022-11-28" ||
		strings.Join(got.Include, ",") != "issues/*" || strings.Join(got.Methods, ",") != "GET,POST" || got.Timeout != want.Timeout ||
		got.MaxConcurrentCalls != 4 || got.RateLimit != "5000/h" || strings.Join(got.AllowedHosts, ",") != "uploads.github.com" {
		t.Errorf("openapi.github decoded as\n%+v\nwant\n%+v", got, want)
	}
	if p := cfg.OpenAPI["pets"]; !p.ReadOnly || !p.Disabled || p.Spec != "pets.yaml" {
		t.Errorf("openapi.pets decoded as %+v", p)
	}
	// The variable a source names is no typo of a CODECELL_ key.
	if len(pv.unknownEnv) > 0 {
		t.Errorf("unknown environment reported: %v", pv.unknownEnv)
	}
}

// TestOpenAPIConfigErrors: every problem of every source is reported at
// once, each naming its key as openapi.NAME.key.
func TestOpenAPIConfigErrors(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.toml")
	os.WriteFile(path, []byte(`
[openapi.gh]
spec = "http://example.com/api.json"
bse_url = "https://api.github.com"
auth = { type = "bearer", tken_env = "X" }
read_only = "yes"
timeout = "soon"

[openapi.GH]
spec = "api.json"

[openapi.keyed]
spec = "api.json"
auth = { type = "api_key", name = "X-Key", key_env = "NOPE_UNSET_KEY" }
rate_limit = "lots"

[openapi."!!"]
spec = "api.json"

[openapi.off]
disabled = true
`), 0o600)
	_, _, err := loadConfig(configSources{path, nil, nil})
	if err == nil {
		t.Fatal("loadConfig accepted a bad configuration")
	}
	for _, w := range []string{
		"openapi.gh.bse_url: unknown key; did you mean base_url?",
		"openapi.gh.auth.tken_env: unknown key; did you mean token_env?",
		"openapi.gh.read_only: want true or false, got a string",
		`openapi.gh.timeout: "soon" is not a duration`,
		`openapi.gh.spec: "http://example.com/api.json": fetch documents over https`,
		"openapi.gh.auth.token_env: is empty; name the environment variable",
		"openapi.gh: its category gh is that of [openapi.GH] too; rename one",
		`openapi.keyed.rate_limit: "lots": want requests per time`,
		`openapi."!!": the name makes no category`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	if strings.Contains(err.Error(), "openapi.off") {
		t.Errorf("a disabled source was checked: %v", err)
	}
	// An unset credential's variable is the environment's problem, not
	// the file's: that source will be unavailable, the others serve.
	if strings.Contains(err.Error(), "NOPE_UNSET_KEY") {
		t.Errorf("an unset credential is an error of the configuration: %v", err)
	}
}
