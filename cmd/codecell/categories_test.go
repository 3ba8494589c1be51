package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/codecell/codecell/tools/openapi"
	"github.com/codecell/codecell/tools/upstream"
)

// TestPlanCategories: a source whose name is taken — by codecell, by a
// name programs have, or by another source — is served under another
// category, never dropped; a category set explicitly that is taken is an
// error that says what to choose.
func TestPlanCategories(t *testing.T) {
	t.Parallel()
	servers := map[string]upstream.Server{
		"memory":  {Command: "node"},
		"github":  {Command: "gh-mcp"},
		"Console": {Command: "x"},
		"my-fs":   {Command: "a"},
		"my_fs":   {Command: "b"},
		"kg":      {Command: "kg", Category: "graph"},
		"weather": {Command: "w"},
	}
	from := map[string]string{}
	for name := range servers {
		from[name] = "[upstream." + name + "]"
	}
	oas := map[string]openapi.Config{"github": {Spec: "gh.json"}, "skills": {Spec: "s.json"}, "graph": {Spec: "g.json"}, "off": {Spec: "o.json", Disabled: true}}
	plan, errs := planCategories(servers, from, oas, []string{"weather"})
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	for _, tt := range []struct {
		kind, name, category, why string
	}{
		{"upstream", "memory", "memory_server", "memory is codecell's own category"},
		{"upstream", "github", "github_server", "github is the category of [openapi.github]"},
		{"upstream", "Console", "console_server", "console is a name every program has (console.log)"},
		{"upstream", "my-fs", "my_fs", ""},
		{"upstream", "my_fs", "my_fs_server", "my_fs is the category of the MCP server my-fs"},
		{"upstream", "kg", "graph", ""},
		{"upstream", "weather", "weather_server", "weather is a category of the catalogue (server.catalog)"},
		{"openapi", "github", "github", ""},
		{"openapi", "skills", "skills_api", "skills is codecell's own category"},
		{"openapi", "graph", "graph_api", "graph is the category of the MCP server kg"},
	} {
		pl := plan.upstream[tt.name]
		if tt.kind == "openapi" {
			pl = plan.openAPI[tt.name]
		}
		if pl.category != tt.category || pl.why != tt.why {
			t.Errorf("%s %s: category %q (%q), want %q (%q)", tt.kind, tt.name, pl.category, pl.why, tt.category, tt.why)
		}
		if tt.kind == "upstream" && upstream.CategoryFor(tt.name, servers[tt.name]) != tt.category {
			t.Errorf("upstream %s is started as %s, not %s", tt.name, upstream.CategoryFor(tt.name, servers[tt.name]), tt.category)
		}
	}
	if _, ok := plan.openAPI["off"]; ok {
		t.Error("a disabled OpenAPI source takes a category")
	}
	if ps := upstream.CheckAll(servers); len(ps) > 0 {
		t.Errorf("the servers still collide: %v", ps)
	}
	notes := strings.Join(plan.movedNotes(func(name string) string { return from[name] }), "\n")
	if !strings.Contains(notes, "the MCP server memory is served as the category memory_server: memory is codecell's own category (set category in [upstream.memory] to choose another)") ||
		!strings.Contains(notes, "the OpenAPI source skills is served as the category skills_api") {
		t.Errorf("notes:\n%s", notes)
	}

	_, errs = planCategories(map[string]upstream.Server{"kg": {Command: "kg", Category: "memory"}}, map[string]string{"kg": "[upstream.kg]"}, nil, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "[upstream.kg].category: memory is codecell's own category; choose another, such as memory_server") {
		t.Errorf("an explicit category of codecell's: %v", errs)
	}
}

// TestBuiltinCategoriesCoverPrograms: every lower-case name a program
// has — codecell's categories, the runtime's namespaces, the prelude's
// globals — is one a source may not take, so that builtinCategories does
// not fall behind what the server adds.
func TestBuiltinCategoriesCoverPrograms(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary, "exec", "-")
	cmd.Env = append(os.Environ(), dataDir(t)...)
	cmd.Stdin = strings.NewReader(`return Object.getOwnPropertyNames(globalThis).filter(n => /^[a-z][a-z0-9_]*$/.test(n))`)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("exec: %v", err)
	}
	var rec struct {
		Result []string `json:"result"`
	}
	if err := json.Unmarshal(out, &rec); err != nil || len(rec.Result) < 10 {
		t.Fatalf("run record %s: %v", out, err)
	}
	for _, n := range rec.Result {
		if _, ok := builtinCategories[n]; !ok {
			t.Errorf("programs have %s, which a tool source could take as its category: add it to builtinCategories", n)
		}
	}
}

// TestMemoryServerNamedMemory (issue 20): the reference memory server
// named memory, exactly as Claude Desktop users name it, is served as
// memory_server beside codecell's own memory, both working, through the
// built binary over stdio; the log, the manifest, config check and config
// import-claude say so.
func TestMemoryServerNamedMemory(t *testing.T) {
	t.Parallel()
	node, dir := upstreamNode(t)
	work := t.TempDir()
	hostFile := filepath.Join(work, "claude_desktop_config.json")
	host := map[string]any{"mcpServers": map[string]any{
		"memory": map[string]any{"command": node, "args": []string{serverScript(dir, "server-memory")},
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(work, "memory.jsonl")}},
	}}
	b, _ := json.Marshal(host)
	if err := os.WriteFile(hostFile, b, 0o600); err != nil {
		t.Fatal(err)
	}

	log := &syncBuffer{}
	c, err := client.NewStdioMCPClient(binary, dataDir(t), "serve", "--mcp-config", hostFile, "--log-level", "debug")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if stderr, ok := client.GetStderr(c); ok {
		go io.Copy(log, stderr)
	}
	initialize(t, c)
	eventuallyTrue(t, "memory_server ready", func() bool {
		return strings.Contains(callTool(t, c, "read_tools", map[string]any{"path": "/manifest.json"}), `"memory_server":"9 tools;`)
	})
	manifest := callTool(t, c, "read_tools", map[string]any{"path": "/manifest.json"})
	if strings.Contains(manifest, "unavailable") || !strings.Contains(manifest, `"memory_server":"9 tools; the MCP server \"memory\" says:`) ||
		!strings.Contains(manifest, `"memory":"`) {
		t.Errorf("manifest:\n%s", manifest)
	}
	isErr, rec, txt := callExecute(t, c, map[string]any{"code": `
		await memory_server.create_entities({entities: [{name: "Ada", entityType: "person", observations: ["wrote the first program"]}]});
		const graph = await memory_server.read_graph({});
		await memory.remember({content: "Ada wrote the first program", layer: "semantic"});
		const mine = await memory.recall({query: "first program"});
		return {server: graph.entities.map(e => e.name), codecell: mine.results.length > 0};`})
	if isErr || rec.Status != "ok" || !strings.Contains(txt, `"result":{"server":["Ada"],"codecell":true}`) {
		t.Fatalf("both memories in one program: %s", txt)
	}
	eventuallyTrue(t, "the log says where memory went", func() bool {
		return strings.Contains(log.String(), "the MCP server memory is served as the category memory_server: memory is codecell's own category")
	})

	// config check and import-claude say it before anything runs.
	check := exec.Command(binary, "config", "check", "--mcp-config", hostFile)
	check.Env = append(os.Environ(), dataDir(t)...)
	out, err := check.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "# Note: the MCP server memory is served as the category memory_server: memory is codecell's own category") {
		t.Errorf("config check (%v):\n%s", err, out)
	}
	imp := exec.Command(binary, "config", "import-claude", "--out", filepath.Join(work, "codecell.toml"), hostFile)
	imp.Env = append(os.Environ(), dataDir(t)...)
	out, err = imp.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `memory is served as the category memory_server: memory is codecell's own category (its table says category = "memory_server"`) {
		t.Errorf("config import-claude (%v):\n%s", err, out)
	}
	written, _ := os.ReadFile(filepath.Join(work, "codecell.toml"))
	if !strings.Contains(string(written), "[upstream.memory]") || !strings.Contains(string(written), `category = "memory_server"`) {
		t.Errorf("imported configuration:\n%s", written)
	}
}
