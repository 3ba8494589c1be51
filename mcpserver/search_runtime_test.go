package mcpserver_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codecell/codecell/mcpserver"
	"github.com/codecell/codecell/memory/sqlite"
	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/builtin"
	"github.com/codecell/codecell/tools/catalog"
	"github.com/codecell/codecell/vfs"
)

// TestSearchFindsTheRuntime: search_tools finds the programs' runtime as
// readily as a catalogue tool — the registered namespaces (approval,
// cache) and the built-in pages (plan, tasks), whose hits point at their
// runtime/ files — on a server with the store and the fixture catalogue,
// whose manifest, within its budget, leads to runtime/index.json, which
// lists them all.
func TestSearchFindsTheRuntime(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := tools.NewRegistry()
	if err := builtin.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := st.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := catalog.LoadInto(reg, testCatalog); err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(forTests(t, mcpserver.Config{Store: st}), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c := start(t, transports[0].connect(t, srv))
	for _, tt := range []struct {
		query string
		want  []string // the first hit is one of these
		sig   string   // its signature's path
	}{
		{"dry run writes", []string{"plan"}, "runtime/plan.d.ts"},
		{"plan commit", []string{"plan"}, "runtime/plan.d.ts"},
		{"preview changes before making them", []string{"plan"}, "runtime/plan.d.ts"},
		{"long running task", []string{"tasks"}, "runtime/tasks.d.ts"},
		{"run for several minutes", []string{"tasks"}, "runtime/tasks.d.ts"},
		{"ask the user", []string{"approval.request"}, "runtime/approval.d.ts"},
		{"cache result", []string{"cache.set", "cache.get"}, "runtime/cache.d.ts"},
		{"report progress", []string{"progress"}, "runtime/progress.d.ts"},
	} {
		t.Run(tt.query, func(t *testing.T) {
			res := callTool(t, c, "search_tools", map[string]any{"query": tt.query, "limit": 3})
			var out struct {
				Hits []struct {
					Name string `json:"name"`
					Cost struct {
						SignaturePath string `json:"signature_path"`
						FullPath      string `json:"full_path"`
					} `json:"cost"`
				} `json:"hits"`
				Next string `json:"next"`
			}
			if err := json.Unmarshal([]byte(text(res)), &out); err != nil || len(out.Hits) == 0 {
				t.Fatalf("search_tools %q: %v\n%s", tt.query, err, text(res))
			}
			h := out.Hits[0]
			if !strings.Contains(" "+strings.Join(tt.want, " ")+" ", " "+h.Name+" ") || h.Cost.SignaturePath != tt.sig {
				t.Fatalf("first hit %s (%s), want one of %v (%s):\n%s", h.Name, h.Cost.SignaturePath, tt.want, tt.sig, text(res))
			}
			if want := strings.TrimSuffix(tt.sig, ".d.ts") + ".md"; h.Cost.FullPath != want {
				t.Errorf("full page %s, want %s", h.Cost.FullPath, want)
			}
			if !strings.Contains(out.Next, "/"+tt.sig) {
				t.Errorf("next %q does not point at %s", out.Next, tt.sig)
			}
		})
	}

	t.Run("the manifest leads to them within its budget", func(t *testing.T) {
		m := text(callTool(t, c, "read_tools", map[string]any{"path": "/manifest.json"}))
		var man struct {
			Runtime string `json:"runtime"`
		}
		if err := json.Unmarshal([]byte(m), &man); err != nil {
			t.Fatalf("manifest: %v\n%s", err, m)
		}
		if !strings.HasSuffix(man.Runtime, "runtime/index.json") || len(m) > vfs.ManifestBudget {
			t.Errorf("manifest (%d bytes, budget %d): runtime line %q", len(m), vfs.ManifestBudget, man.Runtime)
		}
		idx := text(callTool(t, c, "read_tools", map[string]any{"path": "/runtime/index.json"}))
		var index struct {
			Runtime map[string]string `json:"runtime"`
		}
		if err := json.Unmarshal([]byte(idx), &index); err != nil {
			t.Fatalf("runtime/index.json: %v\n%s", err, idx)
		}
		for _, ns := range []string{"approval", "cache", "llm", "plan", "progress", "tasks", "tools"} {
			if index.Runtime[ns] == "" {
				t.Errorf("runtime/index.json lacks %s:\n%s", ns, idx)
			}
		}
	})

	t.Run("a page at signature level is its declarations", func(t *testing.T) {
		got := text(callTool(t, c, "search_tools", map[string]any{"query": "dry run writes", "detail": "signature", "limit": 1}))
		if !strings.HasPrefix(got, "/**") || !strings.Contains(got, "interface Planned {") {
			t.Fatalf("signature of the plan page:\n%s", got)
		}
	})
}
