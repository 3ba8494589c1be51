package mcpserver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
)

// storeServer builds a server over a store at path, as `codecell serve`
// does; closing happens at cleanup, server first.
func storeServer(t *testing.T, path string) (*mcpserver.Server, *sqlite.Store) {
	t.Helper()
	return storeServerTB(t, path, mcpserver.Config{})
}

func storeServerTB(t testing.TB, path string, cfg mcpserver.Config) (*mcpserver.Server, *sqlite.Store) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := st.Register(reg); err != nil {
		t.Fatal(err)
	}
	cfg.Store = st
	srv, err := mcpserver.New(forTests(t, cfg), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		st.Close()
	})
	return srv, st
}

func mustRun(t *testing.T, c interface {
	CallTool(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)
}, code string) json.RawMessage {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = "execute_code"
	req.Params.Arguments = map[string]any{"code": code}
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("run failed: %s", text(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var rec engine.Record
	json.Unmarshal(b, &rec)
	return rec.Result
}

// TestMemoryAcrossSessionsAndRestarts: one session remembers, recalls,
// links entities and saves a skill; after a restart of the server on the
// same database, a second session recalls and calls the skill.
func TestMemoryAcrossSessionsAndRestarts(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "codecell.db")

	first, firstStore := storeServer(t, db)
	a := start(t, transports[1].connect(t, first))
	got := mustRun(t, a, `
await memory.remember({content: "The payments service deploys on Tuesdays after the 10:00 freeze", tags: ["deploy", "payments"], importance: 0.8});
await memory.remember({content: "Alice owns the payments service and reviews its migrations", tags: ["people"]});
await memory.remember("The office coffee machine is on the third floor");
await memory.entity_upsert({name: "alice", type: "person"});
await memory.entity_upsert({name: "payments", type: "service"});
await memory.relate({from: "alice", to: "payments", type: "owns"});
const n = await memory.neighbors({entity: "alice", depth: 1});
const r = await memory.recall({query: "when does payments ship?", limit: 2});
await skills.save({
  name: "who_owns",
  description: "Name the owners of a service from the knowledge graph.",
  code: "const n = await memory.neighbors({entity: args.service, depth: 1, direction: 'in'}); return n.neighbors.map(x => x.entity.name)",
  inputSchema: {type: "object", properties: {service: {type: "string"}}, required: ["service"]}
});
await workspace.write("notes/deploy.md", "# Deploys\nTuesdays.");
({top: r.results[0].content, neighbors: n.neighbors.length})`)
	var out struct {
		Top       string `json:"top"`
		Neighbors int    `json:"neighbors"`
	}
	if err := json.Unmarshal(got, &out); err != nil || !strings.Contains(out.Top, "Tuesdays") || out.Neighbors != 1 {
		t.Fatalf("first session: %s", got)
	}

	// The skill is in the tool tree at all four levels, with its source.
	for _, p := range []string{"/skills/index.json", "/skills/who_owns.d.ts", "/skills/who_owns.md"} {
		body := text(callTool(t, a, "read_tools", map[string]any{"path": p}))
		if !strings.Contains(body, "who_owns") {
			t.Errorf("%s: %s", p, body)
		}
	}
	if md := text(callTool(t, a, "read_tools", map[string]any{"path": "/skills/who_owns.md"})); !strings.Contains(md, "memory.neighbors") {
		t.Errorf("level 3 lacks the skill's source: %s", md)
	}
	// The workspace file is a resource.
	if body := readResource(t, a, "codecell://workspace/notes/deploy.md"); !strings.Contains(body, "Tuesdays") {
		t.Errorf("workspace resource: %s", body)
	}

	// Restart: a new server over the same file.
	first.Close()
	firstStore.Close()
	second, secondStore := storeServer(t, db)
	b := start(t, transports[1].connect(t, second))
	got = mustRun(t, b, `
const r = await memory.recall("who reviews payments migrations?");
const owners = await skills.who_owns({service: "payments"});
const note = await workspace.read("notes/deploy.md");
({recalled: r.results[0].content, owners, note: note.data})`)
	var out2 struct {
		Recalled string   `json:"recalled"`
		Owners   []string `json:"owners"`
		Note     string   `json:"note"`
	}
	if err := json.Unmarshal(got, &out2); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out2.Recalled, "Alice") || len(out2.Owners) != 1 || out2.Owners[0] != "alice" || !strings.Contains(out2.Note, "Tuesdays") {
		t.Fatalf("second session: %s", got)
	}

	// A skill's failure is a clear tool error; bad arguments never reach it.
	res := mustRunErr(t, b, `await skills.who_owns({})`)
	if !strings.Contains(res, "missing property 'service'") {
		t.Errorf("skill argument validation: %s", res)
	}
	res = mustRunErr(t, b, `await skills.save({name: "broken", description: "x", code: "return (1 +"})`)
	if !strings.Contains(res, "syntax error at line 1") {
		t.Errorf("saving broken code: %s", res)
	}

	// Every run is in the audit log, with its tool calls.
	second.Close() // flushes the audit queue
	execs, err := secondStore.ListExecutions(t.Context(), memory.ExecutionQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(execs) != 4 {
		t.Fatalf("%d executions in the audit log, want 4", len(execs))
	}
	for _, e := range execs {
		if e.Principal != "local" || e.Status == "running" || e.CodeHash == "" {
			t.Errorf("audit record %+v", e)
		}
	}
}

func mustRunErr(t *testing.T, c interface {
	CallTool(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)
}, code string) string {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = "execute_code"
	req.Params.Arguments = map[string]any{"code": code}
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Fatalf("run succeeded: %s", text(res))
	}
	return text(res)
}

// TestWorkspaceReadsAreFiltered: a workspace file is the program's
// output like any other: read as a resource, its secrets are hidden and
// its size is budgeted.
func TestWorkspaceReadsAreFiltered(t *testing.T) {
	t.Parallel()
	srv, _ := storeServer(t, filepath.Join(t.TempDir(), "db"))
	c := start(t, transports[0].connect(t, srv))
	mustRun(t, c, `await workspace.write("leak.txt", "contact ada@example.com, password=hunter2hunter2\n" + "x".repeat(1 << 20)); 1`)
	body := readResource(t, c, "codecell://workspace/leak.txt")
	if strings.Contains(body, "ada@example.com") || strings.Contains(body, "hunter2hunter2") {
		t.Errorf("a workspace read shows secrets: %.200s", body)
	}
	if len(body) > 300<<10 {
		t.Errorf("a workspace read of %d bytes", len(body))
	}
}

// TestWorkspaceBinaryReadsAreFiltered (attack14 I7): a workspace file
// that is not UTF-8 was served as a blob as it was; its printable runs
// now pass the filter as an artifact's bytes do, the value masked in
// place and the bytes around it kept.
func TestWorkspaceBinaryReadsAreFiltered(t *testing.T) {
	t.Parallel()
	srv, _ := storeServer(t, filepath.Join(t.TempDir(), "db"))
	c := start(t, transports[0].connect(t, srv))
	// "\xff" + "card 4012888888881881" + "\x00\x01", in base64.
	data := append(append([]byte{0xff}, "card 4012888888881881"...), 0, 1)
	mustRun(t, c, fmt.Sprintf(`await workspace.write({path: "t.bin", data: %q, encoding: "base64"}); 1`, base64.StdEncoding.EncodeToString(data)))
	req := mcp.ReadResourceRequest{}
	req.Params.URI = "codecell://workspace/t.bin"
	res, err := c.ReadResource(t.Context(), req)
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("read: %+v %v", res, err)
	}
	blob, ok := res.Contents[0].(mcp.BlobResourceContents)
	if !ok {
		t.Fatalf("read: %T, want a blob", res.Contents[0])
	}
	got, err := base64.StdEncoding.DecodeString(blob.Blob)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got), "4012888888881881") {
		t.Fatalf("a binary workspace file read shows a card number: %q", got)
	}
	if len(got) != len(data) || got[0] != 0xff || !strings.HasPrefix(string(got[1:]), "card ") {
		t.Errorf("a binary workspace file read as %q; want its bytes with the value masked in place", got)
	}
}
