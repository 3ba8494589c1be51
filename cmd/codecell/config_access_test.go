package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver/engine"
)

// TestAccessConfig reads [access] and server.read_only from the file, the
// environment and --read-only, and names the key of each bad value.
func TestAccessConfig(t *testing.T) {
	t.Parallel()
	good := `[server]
read_only = false
[access.principal.alice]
allow = ["memory.*", "gh.get_*"]
deny = ["*.delete*"]
read_only = true
[access.principal."*"]
read_only = true
[access.scope."codecell:read"]
read_only = true
`
	for _, tt := range []struct {
		name  string
		file  string
		env   []string
		flags map[string]string
		want  engine.Access
		errs  []string
	}{
		{name: "rules", file: good, want: engine.Access{
			Principals: map[string]engine.AccessRule{
				"alice": {Allow: []string{"memory.*", "gh.get_*"}, Deny: []string{"*.delete*"}, ReadOnly: true},
				"*":     {ReadOnly: true},
			},
			Scopes: map[string]engine.AccessRule{"codecell:read": {ReadOnly: true}},
		}},
		{name: "read_only from the environment", env: []string{"CODECELL_SERVER_READ_ONLY=true"}, want: engine.Access{ReadOnly: true}},
		{name: "read_only from the flag", file: good, flags: map[string]string{"server.read_only": "true"}, want: engine.Access{
			ReadOnly: true,
			Principals: map[string]engine.AccessRule{
				"alice": {Allow: []string{"memory.*", "gh.get_*"}, Deny: []string{"*.delete*"}, ReadOnly: true},
				"*":     {ReadOnly: true},
			},
			Scopes: map[string]engine.AccessRule{"codecell:read": {ReadOnly: true}},
		}},
		{name: "bad globs", file: "[access.principal.bob]\nallow = [\"memory\", \"memory.[x\"]\n[access.scope.\"notes:read\"]\ndeny = [\"\"]\n", errs: []string{
			`access.principal.bob.allow[0]: glob "memory" matches no tool: names are category.tool; for a whole category write "memory.*"`,
			`access.principal.bob.allow[1]: glob "memory.[x": syntax error in pattern`,
			`access.scope."notes:read".deny[0]: empty glob`,
		}},
		{name: "unknown key and wrong type", file: "[access.principal.bob]\nalow = [\"memory.*\"]\nread_only = \"yes\"\n", errs: []string{
			"access.principal.bob.alow: unknown key; did you mean allow?",
			"access.principal.bob.read_only: want true or false, got a string",
		}},
		{name: "not a table", file: "[access.principal]\nbob = 3\n", errs: []string{"access.principal.bob: want a table ([access.principal.bob]), got a whole number"}},
		{name: "bad read_only", env: []string{"CODECELL_SERVER_READ_ONLY=maybe"}, errs: []string{`server.read_only (from CODECELL_SERVER_READ_ONLY): "maybe" is not true or false`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var path string
			if tt.file != "" {
				path = filepath.Join(t.TempDir(), "c.toml")
				if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg, _, err := loadConfig(configSources{path, tt.env, tt.flags})
			if len(tt.errs) > 0 {
				for _, want := range tt.errs {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Errorf("error %v, want one with %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := serverAccess(cfg); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("access %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestReadOnlyFlag takes --read-only without a value.
func TestReadOnlyFlag(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{{[]string{"--read-only"}, "true"}, {[]string{"--read-only=false"}, "false"}, {nil, ""}} {
		var s settings
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		s.register(fs, commandScope("serve"))
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		if got := s.set["server.read_only"]; got != tt.want {
			t.Errorf("%v: server.read_only %q, want %q", tt.args, got, tt.want)
		}
	}
}

// TestServeReadOnly starts the binary with --read-only over stdio: direct
// mode lists no tool that writes, and a program cannot call one.
func TestServeReadOnly(t *testing.T) {
	t.Parallel()
	c, err := client.NewStdioMCPClient(binary, dataDir(t), "serve", "--read-only", "--expose", "both")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	initialize(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mt := range list.Tools {
		names = append(names, mt.Name)
		if mt.Name != "execute_code" && (mt.Annotations.ReadOnlyHint == nil || !*mt.Annotations.ReadOnlyHint) {
			t.Errorf("lists %s, not read-only", mt.Name)
		}
	}
	if !slices.Contains(names, "memory__recall") || !slices.Contains(names, "execute_code") {
		t.Errorf("tools: %v", names)
	}
	isErr, rec, txt := callExecute(t, c, map[string]any{"code": `await tools.call("memory.remember", {content: "x"})`})
	if !isErr || rec == nil || rec.Error == nil || !strings.Contains(rec.Error.Message, `unknown tool "memory.remember"`) {
		t.Errorf("remember under --read-only: %s", txt)
	}
}
