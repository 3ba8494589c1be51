package vfs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/vfs"
)

// TestRuntimeTree checks that runtime tools appear under runtime/ at
// levels 1 to 3, beside the prelude's helpers, and not as categories,
// whoever registers them.
func TestRuntimeTree(t *testing.T) {
	t.Parallel()
	r := newCatalog(t)
	if err := r.DescribeCategory("llm", "Ask the client's model (MCP sampling)."); err != nil {
		t.Fatal(err)
	}
	err := r.Register(
		tools.Tool{Name: "llm.call", Summary: "Ask the client's model.", Runtime: true, Handler: nopHandler,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"}}}`)},
		tools.Tool{Name: "llm.classify", Summary: "Label items with the client's model.", Runtime: true, Handler: nopHandler},
		// Registered by another source, with no change to vfs.
		tools.Tool{Name: "cache.get", Summary: "Read a cached value.", Runtime: true, Handler: nopHandler},
	)
	if err != nil {
		t.Fatal(err)
	}
	f := newFS(t, r)

	m, err := f.ReadFile(vfs.ManifestFile)
	if err != nil {
		t.Fatal(err)
	}
	var man struct {
		Categories map[string]string `json:"categories"`
		Runtime    string            `json:"runtime"`
	}
	if err := json.Unmarshal(m, &man); err != nil {
		t.Fatalf("manifest: %v\n%s", err, m)
	}
	for _, ns := range []string{"llm", "cache"} {
		if _, ok := man.Categories[ns]; ok {
			t.Errorf("manifest lists runtime namespace %s as a category: %s", ns, m)
		}
		if !strings.Contains(man.Runtime, ns) {
			t.Errorf("manifest's runtime line %q lacks %s", man.Runtime, ns)
		}
		if _, err := f.Stat(ns); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Stat(%s): %v, want not exist", ns, err)
		}
	}
	if len(m) > vfs.ManifestBudget {
		t.Errorf("manifest %d bytes, budget %d", len(m), vfs.ManifestBudget)
	}

	idx, err := f.ReadFile("runtime/index.json")
	if err != nil {
		t.Fatal(err)
	}
	var index struct {
		Runtime map[string]string `json:"runtime"`
	}
	if err := json.Unmarshal(idx, &index); err != nil {
		t.Fatalf("runtime index: %v\n%s", err, idx)
	}
	for ns, want := range map[string]string{
		"llm":      "llm.call, llm.classify: Ask the client's model (MCP sampling).",
		"cache":    "cache.get: Read a cached value.",
		"progress": "progress(message, fraction?)",
		"tools":    "tools.paginate(fn, args, {max})",
		"plan":     `execute_code {mode: "plan"}`,
		"tasks":    "MCP tasks",
	} {
		if !strings.Contains(index.Runtime[ns], want) {
			t.Errorf("runtime/index.json %s: %q, want it to hold %q", ns, index.Runtime[ns], want)
		}
	}

	for _, tc := range []struct {
		path string
		want []string
	}{
		{"runtime/llm.d.ts", []string{"declare namespace llm", "function call(args?: CallArgs)", "function classify("}},
		{"runtime/llm.md", []string{"# llm.call", "# llm.classify", "- Signature: runtime/llm.d.ts"}},
		{"runtime/cache.d.ts", []string{"declare namespace cache", "function get("}},
		{"runtime/progress.d.ts", []string{"declare function progress("}},
		{"runtime/tools.md", []string{"tools.paginate"}},
		{"runtime/plan.d.ts", []string{"interface Planned {", "planned: true;", "id: number;"}},
		{"runtime/plan.md", []string{"{planned: true, id}", "execute_code {plan_id}", "sandbox.plan_ttl", "plan_expired", "approval.required_for"}},
		{"runtime/tasks.md", []string{"tasks/get", "sandbox.max_task_duration", "slot back"}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			b, err := f.ReadFile(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !bytes.Contains(b, []byte(w)) {
					t.Errorf("lacks %q:\n%s", w, b)
				}
			}
		})
	}

	des, err := f.ReadDir("runtime")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	if got, want := strings.Join(names, " "), "cache.d.ts cache.md index.json llm.d.ts llm.md plan.d.ts plan.md progress.d.ts progress.md tasks.d.ts tasks.md tools.d.ts tools.md"; got != want {
		t.Errorf("runtime/ lists %s, want %s", got, want)
	}

	// Search and costs find a runtime tool at its namespace's files.
	path, sig, ok := f.Signature("llm.classify")
	if !ok || path != "runtime/llm.d.ts" || !bytes.Contains(sig, []byte("function classify(")) {
		t.Errorf("Signature(llm.classify) = %s, %v:\n%s", path, ok, sig)
	}
	if path, _, ok := f.Full("cache.get"); !ok || path != "runtime/cache.md" {
		t.Errorf("Full(cache.get) = %s, %v", path, ok)
	}
	if info, ok := f.Info("llm.call"); !ok || info.Signature.Bytes != len(mustRead(t, f, "runtime/llm.d.ts")) {
		t.Errorf("Info(llm.call) = %+v, %v", info, ok)
	}
	if nf := f.Nearest("llm.call"); nf == nil || nf.Suggestion != "runtime/llm.d.ts" {
		t.Errorf("Nearest(llm.call) = %+v, want a suggestion of runtime/llm.d.ts", nf)
	}
}

func mustRead(tb testing.TB, f *vfs.FS, p string) []byte {
	tb.Helper()
	b, err := f.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
