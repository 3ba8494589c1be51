package upstream_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/codecell/codecell/memory"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/upstream"
	"github.com/codecell/codecell/vfs"
)

// shapeStore keeps learned result shapes as a store does, in memory:
// checked and compacted by memory's rule, kept across restarts of the
// source. (The stores' own keeping of them is memory/storetest's.)
type shapeStore struct {
	mu     sync.Mutex
	shapes map[string]map[string]json.RawMessage
}

var _ upstream.Shapes = (*shapeStore)(nil)

func (s *shapeStore) ToolShapes(_ context.Context, source string) (map[string]json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.shapes[source]), nil
}

func (s *shapeStore) PutToolShape(_ context.Context, source, tool string, shape json.RawMessage) error {
	compact, err := memory.CheckToolShape(source, tool, shape)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shapes[source] == nil {
		s.shapes[source] = map[string]json.RawMessage{}
	}
	s.shapes[source][tool] = json.RawMessage(compact)
	return nil
}

// openShapes returns an empty store for learned result shapes.
func openShapes(t *testing.T) *shapeStore {
	t.Helper()
	return &shapeStore{shapes: map[string]map[string]json.RawMessage{}}
}

func withShapes(s upstream.Shapes) func(*upstream.Config) {
	return func(c *upstream.Config) { c.Shapes = s }
}

// inferred returns what the registry shows of a tool's inferred output
// schema, or nil.
func (e *env) inferred(t *testing.T, name string) *tools.InferredSchema {
	t.Helper()
	tl, ok := e.reg.Get(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tl.InferredOutput
}

// waitInferred waits until the tool shows an inferred schema learned
// from observed results, and returns it.
func (e *env) waitInferred(t *testing.T, name string, observed int) *tools.InferredSchema {
	t.Helper()
	eventually(t, name+" inferred from "+strconv.Itoa(observed)+" results", func() bool {
		io := e.inferred(t, name)
		return io != nil && io.Observed == observed
	})
	return e.inferred(t, name)
}

// TestLearnsResultShapes follows what the source learns of the fake
// server's echo, whose result is whatever JSON it is given: the shape of
// the first result, widened by the next, stable at last; errors and tools
// with a declared output schema never observed; all of it kept across a
// restart, unless it was learned of another version of the tool.
func TestLearnsResultShapes(t *testing.T) {
	t.Parallel()
	store := openShapes(t)
	servers := map[string]upstream.Server{"fake": fake(t, "serve")}
	e := start(t, servers, withShapes(store))
	echo := func(e *env, value string) {
		t.Helper()
		text, _ := json.Marshal(value)
		if _, err := e.call(t, "fake.echo", `{"text":`+string(text)+`}`); err != nil {
			t.Fatal(err)
		}
	}
	if io := e.inferred(t, "fake.echo"); io != nil {
		t.Fatalf("inferred before any call: %s", io.Schema)
	}

	echo(e, `{"a":1,"b":"x"}`)
	io := e.waitInferred(t, "fake.echo", 1)
	if want := `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a","b"]}`; string(io.Schema) != want {
		t.Errorf("after one result: %s, want %s", io.Schema, want)
	}
	// Errors teach nothing, and a declared output schema needs no help.
	for range 3 {
		if _, err := e.call(t, "fake.fail", `{}`); err == nil {
			t.Fatal("fake.fail did not fail")
		}
	}
	if _, err := e.call(t, "fake.structured", `{}`); err != nil {
		t.Fatal(err)
	}
	echo(e, `{"a":2.5}`)
	io = e.waitInferred(t, "fake.echo", 2) // results are learned in order: fail's and structured's before
	if want := `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"string"}},"required":["a"]}`; string(io.Schema) != want {
		t.Errorf("after two results: %s, want %s", io.Schema, want)
	}
	for _, name := range []string{"fake.fail", "fake.structured"} {
		if io := e.inferred(t, name); io != nil {
			t.Errorf("%s has an inferred schema: %s", name, io.Schema)
		}
	}

	// The same shape again and again: learning stops once it held for
	// LearnStableAfter results in a row, and the count shown says so.
	stable := 2 + upstream.LearnStableAfter
	for i := 0; e.inferred(t, "fake.echo").Observed < stable; i++ {
		if i == 10*upstream.LearnMaxResults {
			t.Fatalf("learning did not stop: %+v", e.inferred(t, "fake.echo"))
		}
		echo(e, `{"a":3}`)
	}
	if io := e.inferred(t, "fake.echo"); io.Observed != stable || string(io.Schema) != `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"string"}},"required":["a"]}` {
		t.Errorf("learned: %d results, %s", io.Observed, io.Schema)
	}
	final := e.inferred(t, "fake.echo")
	// Another shape is no longer looked at: create_entities' result,
	// learned after it, shows it was not.
	echo(e, `"just text"`)
	if _, err := e.call(t, "fake.create_entities", `{}`); err != nil {
		t.Fatal(err)
	}
	entities := e.waitInferred(t, "fake.create_entities", 1)
	if io := e.inferred(t, "fake.echo"); io.Observed != final.Observed || string(io.Schema) != string(final.Schema) {
		t.Errorf("a result after learning stopped changed the shape: %d, %s", io.Observed, io.Schema)
	}

	// A shape learned of another version of a tool is set aside.
	if err := store.PutToolShape(t.Context(), upstream.ShapeSource("fake"), "get-sum",
		json.RawMessage(`{"basis":"another version","observed":3,"schema":{"type":"boolean"}}`)); err != nil {
		t.Fatal(err)
	}

	// After a restart, what was learned is shown before any call.
	e.src.Close()
	e = start(t, servers, withShapes(store))
	for name, want := range map[string]*tools.InferredSchema{"fake.echo": final, "fake.create_entities": entities} {
		if io := e.inferred(t, name); io == nil || io.Observed != want.Observed || string(io.Schema) != string(want.Schema) {
			t.Errorf("%s after a restart: %+v, want %d results, %s", name, io, want.Observed, want.Schema)
		}
	}
	if io := e.inferred(t, "fake.get_sum_2"); io != nil {
		t.Errorf("a shape of another version of get-sum is shown: %s", io.Schema)
	}
	stored, err := store.ToolShapes(t.Context(), upstream.ShapeSource("fake"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(stored["echo"]), `"done":true`) || strings.Contains(string(stored["create_entities"]), `"done"`) {
		t.Errorf("stored: echo %s, create_entities %s", stored["echo"], stored["create_entities"])
	}
}

// everythingServer returns the configuration of the reference server
// server-everything over stdio, as `make node-deps` installs it. Without
// it the test is skipped, unless CODECELL_REQUIRE_NODE is set, as `make
// test` does.
func everythingServer(t *testing.T) upstream.Server {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "testdata", "upstreams"))
	node := filepath.Join(dir, "node_modules", ".bin", "node")
	script := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if err == nil {
		if _, err = os.Stat(script); err == nil {
			_, err = os.Stat(node)
		}
	}
	if err != nil {
		if os.Getenv("CODECELL_REQUIRE_NODE") != "" {
			t.Fatalf("the reference MCP servers are not installed (%v); run make node-deps", err)
		}
		t.Skip("run make node-deps to test with the reference MCP servers")
	}
	return upstream.Server{Command: node, Args: []string{script, "stdio"}}
}

// TestInferredDeclarations shows what an agent reads of a real server's
// tools that declare no output schema — server-everything's
// get-resource-links and get-annotated-message — before any call, after
// a few, and after a restart.
func TestInferredDeclarations(t *testing.T) {
	t.Parallel()
	servers := map[string]upstream.Server{"everything": everythingServer(t)}
	store := openShapes(t)
	e := start(t, servers, withShapes(store))
	read := func(e *env, p string) string {
		t.Helper()
		b, err := vfs.New(e.reg).ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const links, message = "everything/get_resource_links.d.ts", "everything/get_annotated_message.d.ts"
	for _, p := range []string{links, message} {
		if d := read(e, p); !strings.Contains(d, "Promise<unknown>;") {
			t.Errorf("%s before any call:\n%s", p, d)
		}
	}

	call := func(name, args string) {
		t.Helper()
		if _, err := e.call(t, name, args); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	call("everything.get_resource_links", `{"count":2}`)
	e.waitInferred(t, "everything.get_resource_links", 1)
	call("everything.get_annotated_message", `{"messageType":"success","includeImage":false}`)
	e.waitInferred(t, "everything.get_annotated_message", 1)
	call("everything.get_annotated_message", `{"messageType":"debug","includeImage":true}`)
	e.waitInferred(t, "everything.get_annotated_message", 2)

	after := map[string]string{links: read(e, links), message: read(e, message)}
	for p, want := range map[string]string{
		links: `
  /** Inferred from 1 observed result, not declared by the tool: a hint, not a contract. */
  type GetResourceLinksResult = ({
    description: string;
    mimeType: string;
    name: string;
    type: string;
    /** @format uri */
    uri: string;
  } | string)[];
}
`,
		message: `
  /** Inferred from 2 observed results, not declared by the tool: a hint, not a contract. */
  type GetAnnotatedMessageResult = ({
    bytes: number;
    mimeType: string;
    type: string;
    /** @format uri */
    uri: string;
  } | string)[] | string;
}
`,
	} {
		if !strings.HasSuffix(after[p], want) || !strings.Contains(after[p], "): Promise<"+pascalResult(p)+">;") {
			t.Errorf("%s after a few calls:\n%s\nwant it to end with:%s", p, after[p], want)
		}
		checkDeclaration(t, p, after[p])
	}

	e.src.Close()
	e = start(t, servers, withShapes(store))
	for p, want := range after {
		if got := read(e, p); got != want {
			t.Errorf("%s after a restart:\n%s\nwant:\n%s", p, got, want)
		}
	}
}

// pascalResult is the name of a declaration's result type.
func pascalResult(p string) string {
	base := strings.TrimSuffix(filepath.Base(p), ".d.ts")
	var b strings.Builder
	for _, w := range strings.Split(base, "_") {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String() + "Result"
}

// checkDeclaration checks that a declaration is valid TypeScript.
func checkDeclaration(t *testing.T, name, src string) {
	t.Helper()
	res := api.Transform(src, api.TransformOptions{Loader: api.LoaderTS, Sourcefile: name})
	for _, m := range res.Errors {
		t.Errorf("%s: %s\n%s", name, m.Text, src)
	}
}
