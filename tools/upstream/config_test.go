package upstream_test

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/tools/upstream"
)

// claudeConfig is a realistic claude_desktop_config.json.
const claudeConfig = `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop", "/Users/me/Downloads"]
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"},
      "autoApprove": ["get_me"]
    },
    "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${REMOTE_KEY}"}, "timeout": 30},
    "legacy": {"type": "sse", "url": "https://old.example.com/events", "disabled": true},
    "codecell": {"command": "/usr/local/bin/codecell", "args": ["serve"]}
  }
}`

func TestParseJSON(t *testing.T) {
	t.Parallel()
	servers, err := upstream.ParseJSON([]byte(claudeConfig))
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(servers)); !slices.Equal(got, []string{"codecell", "filesystem", "github", "legacy", "remote"}) {
		t.Fatalf("servers %v", got)
	}
	if fs := servers["filesystem"]; fs.Command != "npx" || len(fs.Args) != 4 {
		t.Errorf("filesystem %+v", fs)
	}
	if r := servers["remote"]; r.Timeout.D() != 30*time.Second || r.Headers["Authorization"] != "Bearer ${REMOTE_KEY}" {
		t.Errorf("remote %+v", r)
	}
	for name, want := range map[string]upstream.Transport{"filesystem": upstream.Stdio, "remote": upstream.StreamableHTTP, "legacy": upstream.SSE} {
		s := servers[name]
		if got, _ := s.Transport(); got != want {
			t.Errorf("%s transport %s, want %s", name, got, want)
		}
	}
	if !servers["legacy"].Disabled {
		t.Error("legacy is not disabled")
	}
	if ps := upstream.CheckAll(servers); len(ps) != 0 {
		t.Errorf("problems in a valid file: %v", ps)
	}
}

func TestParseJSONErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, doc, want string }{
		{"not JSON", `{"mcpServers": {`, "line 1: unexpected end of JSON input"},
		{"no mcpServers", `{"servers": {}}`, `no "mcpServers" object`},
		{"mcpServers not an object", `{"mcpServers": []}`, "mcpServers: want an object of servers by name"},
		{"args not a list", `{"mcpServers": {"fs": {"command": "x", "args": "-y"}}}`, "mcpServers.fs.args: want a list of strings, got a JSON string"},
		{"env not strings", `{"mcpServers": {"fs": {"command": "x", "env": {"A": 1}}}}`, "mcpServers.fs.env.A: want a string, got a JSON number"},
		{"bad timeout", `{"mcpServers": {"fs": {"command": "x", "timeout": "soon"}}}`, `mcpServers.fs: "soon" is not a duration`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := upstream.ParseJSON([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		server upstream.Server
		field  string
		want   string
	}{
		{"empty", upstream.Server{}, "", "needs a command"},
		{"both", upstream.Server{Command: "x", URL: "http://h/mcp"}, "", "has both"},
		{"bad type", upstream.Server{Command: "x", Type: "websocket"}, "type", `"websocket" is not one of`},
		{"stdio without command", upstream.Server{Type: "stdio", URL: "http://h/mcp"}, "command", "type stdio needs a command"},
		{"bad url", upstream.Server{URL: "localhost:8080/mcp"}, "url", "is not an http"},
		{"url keeps no query", upstream.Server{URL: "ftp://h/x?key=secret123"}, "url", `"ftp://h/x"`},
		{"env for http", upstream.Server{URL: "http://h/mcp", Env: map[string]string{"A": "b"}}, "env", "for stdio servers"},
		{"headers for stdio", upstream.Server{Command: "x", Headers: map[string]string{"A": "b"}}, "headers", "for HTTP servers"},
		{"bad env name", upstream.Server{Command: "x", Env: map[string]string{"A-B": "1"}}, "env.A-B", "not an environment variable name"},
		{"unclosed reference", upstream.Server{Command: "x", Env: map[string]string{"A": "${B"}}, "env.A", "without its closing }"},
		{"bad reference", upstream.Server{Command: "x", Args: []string{"${1X}"}}, "args[0]", "does not name a variable"},
		{"bad glob", upstream.Server{Command: "x", Allow: []string{"[a"}}, "allow[0]", "is not a glob"},
		{"negative timeout", upstream.Server{Command: "x", Timeout: -1}, "timeout", "negative"},
		{"negative concurrency", upstream.Server{Command: "x", MaxConcurrentCalls: -2}, "max_concurrent_calls", "negative"},
		{"bad category", upstream.Server{Command: "x", Category: "My Tools"}, "category", "is not a category name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := tt.server.Check()
			for _, p := range ps {
				if p.Field == tt.field && strings.Contains(p.Message, tt.want) {
					if strings.Contains(p.Message, "secret123") {
						t.Errorf("a URL's query is shown: %s", p.Message)
					}
					return
				}
			}
			t.Errorf("problems %v lack %s: %q", ps, tt.field, tt.want)
		})
	}
}

func TestCategories(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"everything":     "everything",
		"GitHub Issues":  "github_issues",
		"server-memory":  "server_memory",
		"1password":      "mcp_1password",
		"__weird__name!": "weird_name",
		"???":            "",
	} {
		if got := upstream.CategoryFor(name, upstream.Server{}); got != want {
			t.Errorf("CategoryFor(%q) = %q, want %q", name, got, want)
		}
	}
	if got := upstream.CategoryFor("x", upstream.Server{Category: "kg"}); got != "kg" {
		t.Errorf("a configured category: %q", got)
	}
	ps := upstream.CheckAll(map[string]upstream.Server{
		"my-fs": {Command: "a"},
		"my_fs": {Command: "b"},
		"???":   {Command: "c"},
	})
	if len(ps["my_fs"]) != 1 || !strings.Contains(ps["my_fs"][0].Message, `also the category of upstream "my-fs"`) {
		t.Errorf("collision: %v", ps)
	}
	if len(ps["???"]) != 1 || ps["???"][0].Field != "category" {
		t.Errorf("no category: %v", ps)
	}
}

func TestToolNames(t *testing.T) {
	t.Parallel()
	originals := []string{"get_sum", "get-sum", "createEntities", "read_graph", "HTTPGet", "2fa-code", "Get Sum", "--", "get.sum", "get_sum_2"}
	want := map[string]string{
		"get_sum":        "get_sum",
		"get_sum_2":      "get_sum_2",
		"read_graph":     "read_graph",
		"createEntities": "create_entities",
		"HTTPGet":        "http_get",
		"2fa-code":       "t_2fa_code",
		"--":             "tool",
		// Collisions, in byte order of the originals: "Get Sum" < "get-sum" < "get.sum".
		"Get Sum": "get_sum_3",
		"get-sum": "get_sum_4",
		"get.sum": "get_sum_5",
	}
	for range 3 { // any order of the upstream's list gives the same names
		got, notes := upstream.ToolNames("fake", originals)
		if !maps.Equal(got, want) {
			t.Fatalf("names %v, want %v", got, want)
		}
		if !strings.Contains(notes["get-sum"], `Registered as get_sum_4 because get_sum is the name of the upstream tool "get_sum"`) || notes["read_graph"] != "" {
			t.Errorf("notes %v", notes)
		}
		slices.Reverse(originals)
	}
	long := strings.Repeat("verylongname", 20)
	got, _ := upstream.ToolNames("cat", []string{long, long + "x"})
	for o, n := range got {
		if len("cat."+n) > 128 {
			t.Errorf("%s → %s is too long", o, n)
		}
	}
	if got[long] == got[long+"x"] {
		t.Errorf("two long names collide: %v", got)
	}
}
