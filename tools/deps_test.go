package tools_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// The import direction of docs/design.md:
//
//	cmd → mcpserver → {mcpserver/engine, executor, vfs, filter, memory, tools/<source>} → tools
//	mcpserver/engine → {executor, filter, memory} → tools
//	memory/<backend> → memory
//
// executor and filter import no codecell package but tools/jsonstr, the JSON
// string encoder, which any package may import and which imports none;
// nothing imports mcpserver or cmd. mcpserver/engine, which runs programs, imports no
// part of the MCP surface above it, and only the surface (and cmd, for
// its configuration) imports it. memory is the backend-neutral model; its backends
// (memory/sqlite, memory/postgres) sit side by side and import neither
// each other nor anything above memory; only cmd picks one, and only the
// copier (memory/storecopy) and tests that need a real store reach one.
const (
	module    = "github.com/codecell/codecell"
	direction = "cmd → mcpserver → {mcpserver/engine, executor, vfs, filter, memory, tools/<source>} → tools; mcpserver/engine → {executor, filter, memory} → tools; memory/<backend> → memory; anything → tools/jsonstr"
)

// group returns the place in docs/design.md's table of a package path relative
// to the module: a top-level package with its subpackages, "tools", or
// "tools/<name>" and "cmd/<name>" for the packages below tools and cmd,
// which are peers; below memory, each backend and the copier are groups
// of their own, and the rest (memory/internal/..., the contract suite
// memory/storetest) belongs to memory.
func group(rel string) (string, bool) {
	top, _, _ := strings.Cut(rel, "/")
	switch {
	case rel == "tools", rel == "tools/lexicon", rel == "tools/wordvec":
		// tools/lexicon, how tools are worded, and tools/wordvec, word
		// vectors of general English, are part of the leaf: every package
		// that may import tools may import them.
		return "tools", true
	case top == "tools":
		first, _, _ := strings.Cut(strings.TrimPrefix(rel, "tools/"), "/")
		return "tools/" + first, true
	case top == "cmd":
		first, _, _ := strings.Cut(strings.TrimPrefix(rel, "cmd/"), "/")
		return "cmd/" + first, true
	case top == "memory":
		first, _, _ := strings.Cut(strings.TrimPrefix(rel, "memory/"), "/")
		if backends[first] || first == "storecopy" {
			return "memory/" + first, true
		}
		return "memory", true
	case rel == "mcpserver/engine" || strings.HasPrefix(rel, "mcpserver/engine/"):
		// The engine is a group of its own below the surface.
		return "mcpserver/engine", true
	case top == "mcpserver", top == "executor", top == "vfs", top == "filter":
		return top, true
	}
	return "", false
}

// backends are memory's backends, below memory.
var backends = map[string]bool{"sqlite": true, "postgres": true}

// isBackend reports whether a group is one of memory's backends or the
// copier between them.
func isBackend(g string) bool {
	rest, ok := strings.CutPrefix(g, "memory/")
	return ok && (backends[rest] || rest == "storecopy")
}

// arrowProblem says what is wrong with an import of to by from (paths
// relative to the module), or "" when docs/design.md allows it. test says the
// import is made by from's tests, which may also use their peers below
// mcpserver as fixtures (a catalogue, the builtin tools, the tree), and
// mcpserver's and the engine's tests the embedded store (memory/sqlite),
// and a command's tests the packages of the commands beside it; never
// cmd, mcpserver, or a memory backend otherwise.
func arrowProblem(from, to string, test bool) string {
	gf, ok := group(from)
	if !ok {
		return fmt.Sprintf("package %s has no place in docs/design.md's table (%s): give it one there and in this test", from, direction)
	}
	gt, ok := group(to)
	if !ok {
		return fmt.Sprintf("package %s has no place in docs/design.md's table (%s): give it one there and in this test", to, direction)
	}
	if gf == gt {
		return "" // within one package's own subtree
	}
	if to == "tools/jsonstr" {
		return "" // the JSON string encoder: any package may import it
	}
	by := from
	if test {
		by = from + "'s tests"
	}
	bad := func(why string) string {
		return fmt.Sprintf("bad arrow %s → %s: %s (docs/design.md: %s)", by, to, why, direction)
	}
	fromCmd := strings.HasPrefix(gf, "cmd/")
	switch {
	case strings.HasPrefix(gt, "cmd/") && fromCmd && test:
		return "" // a command's tests may drive a neighbour's packages (the load tool's balancer)
	case strings.HasPrefix(gt, "cmd/"):
		return bad("nothing imports cmd")
	case gt == "mcpserver" && !fromCmd:
		return bad("nothing but cmd imports mcpserver")
	case gt == "mcpserver/engine" && !fromCmd && gf != "mcpserver":
		return bad("only mcpserver, and cmd for its configuration, import the engine")
	case isBackend(gt):
		switch {
		case fromCmd:
			return ""
		case gf == "memory/storecopy" && gt != "memory/storecopy":
			return "" // the copier reads one backend and writes the other
		case (gf == "mcpserver" || gf == "mcpserver/engine") && test && gt == "memory/sqlite":
			return "" // the server's tests keep their state in a real store
		case gf == "mcpserver" || gf == "mcpserver/engine":
			return bad(gf + " depends on memory's model and interfaces, never on a backend: cmd picks one")
		case isBackend(gf):
			return bad("memory's backends stand side by side: neither imports the other")
		}
		return bad("only cmd picks a memory backend")
	}
	switch {
	case fromCmd, gf == "mcpserver":
		return ""
	case gf == "mcpserver/engine":
		if gt == "executor" || gt == "filter" || gt == "memory" || gt == "tools" || test {
			return "" // its tests may use the peers below mcpserver as fixtures
		}
		return bad("the engine runs programs over the executor, the filter, memory's model and the tool model: it reads no tree (vfs) and knows no source (tools/<source>)")
	case gf == "executor", gf == "filter":
		return bad(gf + " imports no codecell package")
	case isBackend(gf):
		if gt == "memory" || gt == "tools" || test {
			return ""
		}
		return bad(gf + " imports only memory and tools")
	case test:
		return "" // a peer below mcpserver, as a fixture
	case gf == "tools":
		return bad("tools is the leaf: it imports no codecell package")
	case gt != "tools":
		return bad(gf + " imports only tools")
	}
	return ""
}

func TestArrowRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from, to string
		test     bool
		ok       bool
	}{
		{"cmd/codecell", "mcpserver", false, true},
		{"cmd/codecell", "tools/catalog", false, true},
		{"cmd/codecell", "memory/sqlite", false, true},
		{"cmd/codecell", "memory/storecopy", false, true},
		{"mcpserver", "vfs", false, true},
		{"mcpserver", "mcpserver/engine", false, true},
		{"mcpserver", "mcpserver/engine", true, true},
		{"cmd/codecell", "mcpserver/engine", false, true},
		{"mcpserver/engine", "executor", false, true},
		{"mcpserver/engine", "filter", false, true},
		{"mcpserver/engine", "memory", false, true},
		{"mcpserver/engine", "tools", false, true},
		{"mcpserver/engine", "tools/lexicon", false, true},
		{"mcpserver/engine", "memory/sqlite", true, true},
		{"mcpserver/engine", "tools/builtin", true, true},
		{"mcpserver", "tools/search", false, true},
		{"mcpserver", "memory", false, true},
		{"vfs", "tools", false, true},
		{"memory", "tools", false, true},
		{"memory", "tools/lexicon", false, true},
		{"memory", "tools/wordvec", false, true},
		{"tools/wordvec", "vfs", false, false},
		{"tools/search", "tools/lexicon", false, true},
		{"tools/lexicon", "vfs", false, false},
		{"tools/catalog", "tools", false, true},
		{"memory/internal/x", "memory", false, true},
		{"memory/storetest", "memory", false, true},
		{"memory/sqlite", "memory", false, true},
		{"memory/sqlite", "tools", false, true},
		{"memory/postgres/pgtest", "memory/postgres/pgserver", false, true},
		{"memory/storecopy", "memory/sqlite", false, true},
		{"memory/storecopy", "memory/postgres", false, true},
		{"memory/postgres", "memory/storetest", true, true},
		{"mcpserver", "memory/sqlite", true, true},
		{"tools", "tools/catalog", true, true},
		{"memory/sqlite", "tools/toolstest", true, true},
		{"cmd/codecell", "cmd/codecell-load/balancer", true, true},
		{"vfs", "tools/catalog", true, true},
		{"tools/search", "vfs", false, false},
		{"tools/catalog", "tools/builtin", false, false},
		{"vfs", "memory", false, false},
		{"executor", "tools", false, false},
		{"executor", "tools", true, false},
		{"filter", "tools", false, false},
		{"filter", "tools/jsonstr", false, true},
		{"tools", "tools/jsonstr", false, true},
		{"tools/jsonstr", "filter", false, false},
		{"tools", "vfs", false, false},
		{"vfs", "mcpserver", false, false},
		{"mcpserver", "cmd/codecell", false, false},
		{"cmd/codecell-load", "cmd/codecell", false, false},
		{"memory/sqlite", "tools/toolstest", false, false},
		{"util", "tools", false, false},
		{"mcpserver", "memory/sqlite", false, false},
		{"mcpserver", "memory/postgres", true, false},
		{"memory", "memory/sqlite", false, false},
		{"memory", "memory/sqlite", true, false},
		{"memory/storetest", "memory/sqlite", false, false},
		{"memory/sqlite", "memory/postgres", false, false},
		{"memory/postgres", "memory/sqlite", true, false},
		{"memory/postgres", "memory/storecopy", true, false},
		{"memory/postgres", "mcpserver", true, false},
		{"memory/sqlite", "vfs", false, false},
		{"tools/upstream", "memory/sqlite", true, false},
		{"vfs", "mcpserver", true, false},
		{"mcpserver/engine", "mcpserver", false, false},
		{"mcpserver/engine", "mcpserver", true, false},
		{"mcpserver/engine", "mcpserver/oauth", false, false},
		{"mcpserver/engine", "vfs", false, false},
		{"mcpserver/engine", "tools/openapi", false, false},
		{"mcpserver/engine", "memory/sqlite", false, false},
		{"mcpserver/engine", "memory/postgres", true, false},
		{"mcpserver/engine", "cmd/codecell", true, false},
		{"tools/openapi", "mcpserver/engine", false, false},
		{"memory", "mcpserver/engine", false, false},
		{"executor", "mcpserver/engine", true, false},
	}
	for _, tt := range tests {
		name := tt.from + " → " + tt.to
		if tt.test {
			name = tt.from + " (tests) → " + tt.to
		}
		t.Run(name, func(t *testing.T) {
			p := arrowProblem(tt.from, tt.to, tt.test)
			if (p == "") != tt.ok {
				t.Errorf("arrowProblem = %q, want allowed %v", p, tt.ok)
			}
			if !tt.ok && !strings.Contains(p, tt.from) {
				t.Errorf("the message %q does not name the importing package", p)
			}
		})
	}
}

// listed is one codecell package as go list shows it.
type listed struct {
	path                         string
	imports, testImports, xTests []string
}

// listPackages lists every codecell package with its imports and its
// tests' imports, with the build tags the project builds with.
func listPackages(t *testing.T) []listed {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list imports: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), goTool, "list", "-deps", "-tags", "sqlite_fts5",
		"-f", `{{if not .Standard}}{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}}|{{join .XTestImports " "}}{{end}}`, module+"/...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listed
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 4 || !strings.HasPrefix(f[0], module+"/") {
			continue
		}
		pkgs = append(pkgs, listed{path: f[0], imports: strings.Fields(f[1]), testImports: strings.Fields(f[2]), xTests: strings.Fields(f[3])})
	}
	if len(pkgs) < 8 {
		t.Fatalf("go list found %d codecell packages; the pattern or directory is wrong:\n%s", len(pkgs), out)
	}
	return pkgs
}

// TestImportDirection checks every import of every codecell package, and
// of its tests, with the build tags the project builds with, against
// docs/design.md; and that no package of the product imports a test helper (a
// package that imports testing, such as pgtest or toolstest).
func TestImportDirection(t *testing.T) {
	t.Parallel()
	pkgs := listPackages(t)
	helpers := map[string]bool{} // packages that import testing
	for _, p := range pkgs {
		for _, imp := range p.imports {
			if imp == "testing" {
				helpers[p.path] = true
			}
		}
	}
	for _, p := range pkgs {
		from := strings.TrimPrefix(p.path, module+"/")
		check := func(imports []string, test bool) {
			for _, imp := range imports {
				to, ok := strings.CutPrefix(imp, module+"/")
				if !ok || imp == p.path {
					continue
				}
				if problem := arrowProblem(from, to, test); problem != "" {
					t.Error(problem)
				}
				if !test && helpers[imp] && !helpers[p.path] {
					t.Errorf("bad arrow %s → %s: %s is a test helper (it imports testing) and %s is part of the product", from, to, to, from)
				}
			}
		}
		check(p.imports, false)
		check(p.testImports, true)
		check(p.xTests, true)
	}
}
