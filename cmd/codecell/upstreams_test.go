package main

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools/upstream"
)

// claudeDesktopConfig is a realistic claude_desktop_config.json, codecell
// among its servers.
const claudeDesktopConfig = `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop", "/Users/me/Downloads"]
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_inline0123456789abcdef"},
      "autoApprove": ["get_me"]
    },
    "Brave Search": {"command": "/opt/homebrew/bin/node", "args": ["/Users/me/mcp/brave/index.js"], "env": {"BRAVE_API_KEY": "${BRAVE_KEY}"}},
    "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${REMOTE_KEY}"}, "timeout": 30},
    "legacy": {"type": "sse", "url": "https://old.example.com/events", "disabled": true},
    "codecell": {"command": "/usr/local/bin/codecell", "args": ["serve", "--mcp-config", "/Users/me/claude_desktop_config.json"]}
  }
}`

// TestImportClaudeRoundTrips imports a host's configuration into a new
// file and an existing one, and reads back the same servers, codecell's
// own entry left out.
func TestImportClaudeRoundTrips(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "claude_desktop_config.json")
	os.WriteFile(src, []byte(claudeDesktopConfig), 0o600)
	want, err := upstream.ParseJSON([]byte(claudeDesktopConfig))
	if err != nil {
		t.Fatal(err)
	}
	delete(want, "codecell")

	for _, tt := range []struct{ name, existing string }{
		{"new file", ""},
		{"existing file", "[sandbox]\ntimeout = \"7s\"\n\n[upstream.mine]\ncommand = \"my-server\"\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "codecell.toml")
			if tt.existing != "" {
				os.WriteFile(out, []byte(tt.existing), 0o600)
			}
			var stdout, stderr bytes.Buffer
			if err := runImportClaude([]string{"--out", out, src}, &stdout, &stderr); err != nil {
				t.Fatalf("import: %v\n%s", err, stderr.String())
			}
			for _, w := range []string{"added Brave Search, filesystem, github, legacy, remote to " + out, "left out, as they start codecell itself: codecell"} {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, stdout.String())
				}
			}
			cfg, _, err := loadConfig(configSources{file: out, environ: []string{"BRAVE_KEY=b", "REMOTE_KEY=r"}})
			if err != nil {
				t.Fatalf("the written file does not load: %v", err)
			}
			set, errs := cfg.upstreams()
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			got := maps.Clone(set.servers)
			if tt.existing != "" {
				if cfg.Sandbox.Timeout.D().String() != "7s" || got["mine"].Command != "my-server" {
					t.Errorf("the existing settings changed: %+v, %+v", cfg.Sandbox, got["mine"])
				}
				delete(got, "mine")
			}
			if len(got) != len(want) {
				t.Fatalf("servers %v, want %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
			}
			for name, w := range want {
				g := got[name]
				if g.Command != w.Command || !slices.Equal(g.Args, w.Args) || !maps.Equal(g.Env, w.Env) || g.URL != w.URL ||
					!maps.Equal(g.Headers, w.Headers) || g.Type != w.Type || g.Timeout != w.Timeout || g.Disabled != w.Disabled {
					t.Errorf("%s:\n got %+v\nwant %+v", name, g, w)
				}
			}
			text, _ := os.ReadFile(out)
			if !strings.Contains(string(text), "keep this file private") {
				t.Error("no warning about the inline token")
			}
			if st, _ := os.Stat(out); st.Mode().Perm() != 0o600 {
				t.Errorf("mode %v", st.Mode().Perm())
			}
			// Again: nothing to add.
			stdout.Reset()
			if err := runImportClaude([]string{"--out", out, src}, &stdout, &stderr); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(stdout.String(), "nothing to add") {
				t.Errorf("second import: %s", stdout.String())
			}
			if again, _ := os.ReadFile(out); !bytes.Equal(again, text) {
				t.Error("a second import changed the file")
			}
		})
	}
	t.Run("to stdout", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if err := runImportClaude([]string{"--out", "-", src}, &stdout, &stderr); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stdout.String(), "[upstream.\"Brave Search\"]") || strings.Contains(stdout.String(), "codecell]") {
			t.Errorf("stdout:\n%s", stdout.String())
		}
	})
	t.Run("a bad entry is named", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.json")
		os.WriteFile(bad, []byte(`{"mcpServers": {"x": {"command": "a", "url": "http://h"}, "y": {"command": "b", "args": "-y"}}}`), 0o600)
		err := runImportClaude([]string{"--out", "-", bad}, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "mcpServers.y.args: want a list of strings") {
			t.Errorf("err = %v", err)
		}
		os.WriteFile(bad, []byte(`{"mcpServers": {"x": {"command": "a", "url": "http://h"}}}`), 0o600)
		err = runImportClaude([]string{"--out", "-", bad}, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "mcpServers.x: has both a command and a url") {
			t.Errorf("err = %v", err)
		}
	})
}

// TestUpstreamConfigErrors: config check names a bad upstream entry by
// its key, in the TOML file or in the mcp_config file.
func TestUpstreamConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mcp := filepath.Join(dir, "mcp.json")
	os.WriteFile(mcp, []byte(`{"mcpServers": {"fs": {"command": "node", "args": ["a"], "cwd": 3}, "same": {"command": "x"}, "codecell": {"command": "codecell"}}}`), 0o600)
	mcpOK := filepath.Join(dir, "ok.json")
	os.WriteFile(mcpOK, []byte(`{"mcpServers": {"web": {"url": "https://h/mcp", "headers": {"Authorization": "Bearer x", "X-Env": "${A"}}}}`), 0o600)
	tests := []struct {
		name, file string
		set        map[string]string
		want       []string
	}{
		{name: "unknown key", file: "[upstream.fs]\ncommand = \"npx\"\nargz = [\"-y\"]\n", want: []string{`upstream.fs.argz: unknown key; did you mean args?`}},
		{name: "wrong type", file: "[upstream.fs]\ncommand = \"npx\"\nargs = \"-y\"\n", want: []string{`upstream.fs.args: want a list of strings such as ["a", "b"], got a string`}},
		{name: "env of numbers", file: "[upstream.fs]\ncommand = \"npx\"\nenv = {A = 1}\n", want: []string{"upstream.fs.env", "upstream.fs.env.A is a whole number"}},
		{name: "bad duration", file: "[upstream.fs]\ncommand = \"npx\"\ntimeout = \"soon\"\n", want: []string{`upstream.fs.timeout: "soon" is not a duration`}},
		{name: "not a table", file: "[upstream]\nfs = \"npx\"\n", want: []string{"upstream.fs: want a table ([upstream.fs] with command or url), got a string"}},
		{name: "no command or url", file: "[upstream.\"My Tools\"]\ncategory = \"tools\"\n", want: []string{`upstream."My Tools": needs a command`}},
		{name: "bad category", file: "[upstream.fs]\ncommand = \"npx\"\ncategory = \"File System\"\n", want: []string{`upstream.fs.category: "File System" is not a category name`}},
		{name: "two with one category", file: "[upstream.a]\ncommand = \"a\"\ncategory = \"fs\"\n[upstream.b]\ncommand = \"b\"\ncategory = \"fs\"\n", want: []string{`upstream.b.category: "fs" is also the category of upstream "a"`}},
		{name: "a category of codecell's", file: "[upstream.kg]\ncommand = \"a\"\ncategory = \"memory\"\n", want: []string{`upstream.kg.category: memory is codecell's own category; choose another, such as memory_server`}},
		{name: "a type error in the JSON file", set: map[string]string{"server.mcp_config": mcp}, want: []string{mcp + ": mcpServers.fs.cwd: want a string, got a JSON number"}},
		{name: "a problem in the JSON file", set: map[string]string{"server.mcp_config": mcpOK}, want: []string{mcpOK + ": mcpServers.web.headers.X-Env: a ${ without its closing }"}},
		{name: "in both files", file: "[upstream.same]\ncommand = \"y\"\n", set: map[string]string{"server.mcp_config": mcp}, want: []string{"upstream.same: " + mcp + " has a server of the same name"}},
		{name: "no JSON file", set: map[string]string{"server.mcp_config": filepath.Join(dir, "nope.json")}, want: []string{"server.mcp_config (from --mcp-config): read " + filepath.Join(dir, "nope.json") + ": no such file"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.file != "" {
				path = filepath.Join(dir, strings.Repeat("u", i+1)+".toml")
				os.WriteFile(path, []byte(tt.file), 0o600)
			}
			_, _, err := loadConfig(configSources{path, nil, tt.set})
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

// TestConfigCheckShowsUpstreams prints the upstream servers with their
// secrets hidden, those of the JSON file in a comment.
func TestConfigCheckShowsUpstreams(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mcp := filepath.Join(dir, "mcp.json")
	os.WriteFile(mcp, []byte(`{"mcpServers": {"web": {"url": "https://h/mcp?key=querysecret", "headers": {"Authorization": "Bearer headersecret"}}, "codecell": {"command": "codecell"}}}`), 0o600)
	cfgFile := filepath.Join(dir, "c.toml")
	os.WriteFile(cfgFile, []byte("[server]\nmcp_config = \"mcp.json\"\n[upstream.fs]\ncommand = \"npx\"\nenv = {TOKEN = \"envsecret0123\"}\n"), 0o600)
	code, stdout, stderr := runCLI(t, "", "config", "check", "--config", cfgFile, "--data-dir", filepath.Join(dir, "data"), "--mcp-config", mcp)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, w := range []string{"# Upstream servers from " + mcp + ": web (category web, http: https://h/mcp).", "Left out of " + mcp + ", as they start codecell itself: codecell.", `TOKEN = "(hidden)"`} {
		if !strings.Contains(stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, stdout)
		}
	}
	for _, secret := range []string{"querysecret", "headersecret", "envsecret0123"} {
		if strings.Contains(stdout+stderr, secret) {
			t.Errorf("%s shown:\n%s", secret, stdout)
		}
	}
}

// TestSharedUpstreams: where several principals call (HTTP with tokens or
// OAuth), the start names the upstream servers they share, whose own
// state is one for all of them (attack9 D11); a server of one principal,
// and a disabled upstream, are not named.
func TestSharedUpstreams(t *testing.T) {
	servers := map[string]upstream.Server{
		"memory": {Command: "node"},
		"web":    {URL: "https://example.com/mcp"},
		"off":    {Command: "node", Disabled: true},
	}
	var cfg Config
	cfg.Server.HTTP = "127.0.0.1:0"
	if got := sharedUpstreams(cfg, servers); got != nil {
		t.Fatalf("HTTP without authentication (one principal): %v", got)
	}
	cfg.Auth.Tokens = []TokenConfig{{Principal: "alice"}, {Principal: "bob"}}
	if got := sharedUpstreams(cfg, servers); !slices.Equal(got, []string{"memory", "web"}) {
		t.Fatalf("two principals: %v, want [memory web]", got)
	}
	cfg.Server.HTTP = ""
	if got := sharedUpstreams(cfg, servers); got != nil {
		t.Fatalf("stdio (one principal): %v", got)
	}
}
