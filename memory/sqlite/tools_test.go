package sqlite

import (
	"github.com/codecell/codecell/memory"

	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
)

func newRegistry(t *testing.T, s *Store) *tools.Registry {
	t.Helper()
	r := tools.NewRegistry()
	if err := s.Register(r); err != nil {
		t.Fatalf("register: %v", err)
	}
	return r
}

func call(t *testing.T, r *tools.Registry, ctxName, name, args string) (map[string]any, error) {
	t.Helper()
	out, err := r.Call(as(t.Context(), ctxName), name, json.RawMessage(args))
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("%s result is not an object: %s", name, out)
	}
	return m, nil
}

func TestToolsCatalogue(t *testing.T) {
	s := openTest(t, Config{})
	r := newRegistry(t, s)
	want := []string{"consolidate", "entity_upsert", "forget", "get", "neighbors", "path", "recall", "relate", "remember", "stats", "task_add", "task_list", "task_update", "update"}
	got := r.ListCategory("memory")
	if len(got) != len(want) {
		t.Fatalf("%d memory tools, want %d", len(got), len(want))
	}
	for i, tl := range got {
		if tl.ShortName() != want[i] {
			t.Fatalf("tool %d is %s, want memory.%s", i, tl.Name, want[i])
		}
		if tl.Description == "" || len(tl.OutputSchema) == 0 || len(tl.Related) == 0 {
			t.Errorf("%s lacks description, output schema or related tools", tl.Name)
		}
		for _, rel := range tl.Related {
			if _, ok := r.Get(rel); !ok {
				t.Errorf("%s: related tool %s does not exist", tl.Name, rel)
			}
		}
		// Examples' arguments pass the input schema.
		for _, ex := range tl.Examples {
			if err := r.Validate(tl.Name, ex.Args); err != nil {
				t.Errorf("%s example %q: %v", tl.Name, ex.Title, err)
			}
		}
	}
	if n := len(r.ListCategory("workspace")); n != 4 {
		t.Fatalf("%d workspace tools, want 4", n)
	}
	if r.CategorySummary("memory") == "" || r.CategorySummary("workspace") == "" {
		t.Fatal("category summaries missing")
	}
}

func TestToolsEndToEnd(t *testing.T) {
	s := openTest(t, Config{})
	r := newRegistry(t, s)
	m, err := call(t, r, "alice", "memory.remember", `{"content": "Alice prefers dark mode in every editor", "tags": ["prefs"], "entities": ["alice"]}`)
	if err != nil {
		t.Fatal(err)
	}
	id := m["id"].(float64)
	res, err := call(t, r, "alice", "memory.recall", `{"query": "which color theme does alice like", "limit": 3}`)
	if err != nil {
		t.Fatal(err)
	}
	results := res["results"].([]any)
	if len(results) != 1 || results[0].(map[string]any)["id"].(float64) != id {
		t.Fatalf("recall: %v", res)
	}
	if _, err := call(t, r, "alice", "memory.relate", `{"from": "alice", "to": "editor", "type": "uses"}`); err != nil {
		t.Fatal(err)
	}
	nb, err := call(t, r, "alice", "memory.neighbors", `{"entity": "alice", "include_memories": true}`)
	if err != nil || len(nb["neighbors"].([]any)) != 1 || len(nb["memories"].([]any)) != 1 {
		t.Fatalf("neighbors: %v %v", nb, err)
	}
	// Bob sees nothing of Alice's.
	res, _ = call(t, r, "bob", "memory.recall", `{"query": "dark mode"}`)
	if len(res["results"].([]any)) != 0 {
		t.Fatalf("bob recalled alice's memory: %v", res)
	}
	st, err := call(t, r, "alice", "memory.stats", `{}`)
	if err != nil || st["memories"].(float64) != 1 {
		t.Fatalf("stats: %v %v", st, err)
	}
	if _, err := call(t, r, "alice", "memory.forget", `{"id": 1}`); err != nil {
		t.Fatal(err)
	}
}

func TestToolsBadInput(t *testing.T) {
	s := openTest(t, Config{Limits: memory.Limits{MaxContentBytes: 50}})
	r := newRegistry(t, s)
	cases := []struct {
		tool, args, code, mention string
	}{
		{"memory.remember", `{"content": 5}`, tools.CodeInvalidArguments, "/content"},
		{"memory.remember", `{"content": "x", "layer": "dreams"}`, tools.CodeInvalidArguments, "/layer"},
		{"memory.remember", `{"content": "x", "tags": "a"}`, tools.CodeInvalidArguments, "/tags"},
		{"memory.remember", `{"content": "` + strings.Repeat("y", 60) + `"}`, tools.CodeInvalidArguments, "/content"},
		{"memory.remember", `{"content": "x", "colour": "red"}`, tools.CodeInvalidArguments, "colour"},
		{"memory.recall", `{"query": "x", "limit": "ten"}`, tools.CodeInvalidArguments, "/limit"},
		{"memory.recall", `{}`, tools.CodeInvalidArguments, "query"},
		{"memory.get", `{"id": 77}`, tools.CodeNotFound, "memory 77 not found"},
		{"memory.forget", `{}`, tools.CodeInvalidArguments, "say what to forget"},
		{"memory.neighbors", `{"entity": "nobody"}`, tools.CodeNotFound, "entity"},
		{"memory.task_list", `{"status": ["someday"]}`, tools.CodeInvalidArguments, "/status/0"},
		{"workspace.write", `{"path": "../etc/passwd", "data": "x"}`, memory.CodeInvalidPath, ".."},
		{"workspace.write", `{"path": "a.txt", "data": {"x": 1}}`, tools.CodeInvalidArguments, "/data"},
		{"workspace.write", `{"path": "a.bin", "data": "%%%", "encoding": "base64"}`, tools.CodeInvalidArguments, "base64"},
		{"workspace.read", `{"path": "missing.txt"}`, tools.CodeNotFound, "missing.txt"},
	}
	for _, c := range cases {
		t.Run(c.tool+" "+c.args, func(t *testing.T) {
			_, err := call(t, r, "", c.tool, c.args)
			te := wantCode(t, err, c.code)
			all := te.Message
			for _, p := range te.Problems {
				all += " " + p.Path + " " + p.Message
			}
			if !strings.Contains(all, c.mention) {
				t.Fatalf("error %q does not mention %q", all, c.mention)
			}
		})
	}
	st, _ := s.MemoryStats(t.Context())
	ls, _ := s.ListFiles(t.Context(), "")
	if st.Memories != 0 || ls.Count != 0 {
		t.Fatalf("bad input changed the store: %d memories, %d files", st.Memories, ls.Count)
	}
}

func TestWorkspaceTools(t *testing.T) {
	s := openTest(t, Config{})
	r := newRegistry(t, s)
	w, err := call(t, r, "alice", "workspace.write", `{"path": "notes/a.md", "data": "hello"}`)
	if err != nil || w["created"] != true || w["size"].(float64) != 5 {
		t.Fatalf("write: %v %v", w, err)
	}
	bin := base64.StdEncoding.EncodeToString([]byte{0xff, 0x00, 0x10})
	if _, err := call(t, r, "alice", "workspace.write", `{"path": "b.bin", "data": "`+bin+`", "encoding": "base64"}`); err != nil {
		t.Fatal(err)
	}
	rd, err := call(t, r, "alice", "workspace.read", `{"path": "notes/a.md"}`)
	if err != nil || rd["data"] != "hello" || rd["encoding"] != "utf8" {
		t.Fatalf("read: %v %v", rd, err)
	}
	rd, _ = call(t, r, "alice", "workspace.read", `{"path": "b.bin"}`)
	if rd["data"] != bin || rd["encoding"] != "base64" {
		t.Fatalf("read binary: %v", rd)
	}
	ls, _ := call(t, r, "alice", "workspace.list", `{"prefix": "notes/"}`)
	if ls["count"].(float64) != 1 || ls["total_bytes"].(float64) != 8 {
		t.Fatalf("list: %v", ls)
	}
	rm, _ := call(t, r, "alice", "workspace.remove", `{"path": "notes/a.md"}`)
	rm2, _ := call(t, r, "alice", "workspace.remove", `{"path": "notes/a.md"}`)
	if rm["removed"] != true || rm2["removed"] != false {
		t.Fatalf("remove: %v then %v", rm, rm2)
	}
	tl, _ := r.Get("workspace.write")
	if strings.Join(tl.Positional, ",") != "path,data,encoding" {
		t.Fatalf("positional: %v", tl.Positional)
	}
}
