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
//	cmd → mcpserver → {executor, vfs, filter, memory, tools/<source>} → tools
//
// executor and filter import no codecell package, and nothing imports
// mcpserver or cmd.
const (
	module    = "github.com/codecell/codecell"
	direction = "cmd → mcpserver → {executor, vfs, filter, memory, tools/<source>} → tools"
)

// group returns the place in docs/design.md's table of a package path relative
// to the module: a top-level package with its subpackages, "tools", or
// "tools/<name>" and "cmd/<name>" for the packages below tools and cmd,
// which are peers.
func group(rel string) (string, bool) {
	top, _, _ := strings.Cut(rel, "/")
	switch {
	case rel == "tools":
		return "tools", true
	case top == "tools":
		first, _, _ := strings.Cut(strings.TrimPrefix(rel, "tools/"), "/")
		return "tools/" + first, true
	case top == "cmd":
		first, _, _ := strings.Cut(strings.TrimPrefix(rel, "cmd/"), "/")
		return "cmd/" + first, true
	case top == "mcpserver", top == "executor", top == "vfs", top == "filter", top == "memory":
		return top, true
	}
	return "", false
}

// arrowProblem says what is wrong with an import of to by from (paths
// relative to the module), or "" when docs/design.md allows it.
func arrowProblem(from, to string) string {
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
	bad := func(why string) string {
		return fmt.Sprintf("bad arrow %s → %s: %s (docs/design.md: %s)", from, to, why, direction)
	}
	fromCmd := strings.HasPrefix(gf, "cmd/")
	switch {
	case strings.HasPrefix(gt, "cmd/"):
		return bad("nothing imports cmd")
	case gt == "mcpserver" && !fromCmd:
		return bad("nothing but cmd imports mcpserver")
	}
	switch {
	case fromCmd, gf == "mcpserver":
		return ""
	case gf == "executor", gf == "filter":
		return bad(gf + " imports no codecell package")
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
		ok       bool
	}{
		{"cmd/codecell", "mcpserver", true},
		{"cmd/codecell", "tools/catalog", true},
		{"mcpserver", "vfs", true},
		{"mcpserver", "tools/search", true},
		{"vfs", "tools", true},
		{"memory", "tools", true},
		{"tools/catalog", "tools", true},
		{"memory/internal/x", "memory", true},
		{"tools/search", "vfs", false},
		{"tools/catalog", "tools/builtin", false},
		{"vfs", "memory", false},
		{"executor", "tools", false},
		{"filter", "tools", false},
		{"tools", "vfs", false},
		{"vfs", "mcpserver", false},
		{"mcpserver", "cmd/codecell", false},
		{"cmd/codecell-load", "cmd/codecell", false},
		{"util", "tools", false},
	}
	for _, tt := range tests {
		t.Run(tt.from+" → "+tt.to, func(t *testing.T) {
			p := arrowProblem(tt.from, tt.to)
			if (p == "") != tt.ok {
				t.Errorf("arrowProblem = %q, want allowed %v", p, tt.ok)
			}
			if !tt.ok && !strings.Contains(p, tt.from) {
				t.Errorf("the message %q does not name the importing package", p)
			}
		})
	}
}

// TestImportDirection checks every import of every codecell package, with
// the build tags the project builds with, against docs/design.md.
func TestImportDirection(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list imports: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), goTool, "list", "-deps", "-tags", "sqlite_fts5",
		"-f", `{{if not .Standard}}{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{end}}`, module+"/...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	packages := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], module+"/") {
			continue
		}
		packages++
		from := strings.TrimPrefix(fields[0], module+"/")
		for _, imp := range fields[1:] {
			to, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			if p := arrowProblem(from, to); p != "" {
				t.Error(p)
			}
		}
	}
	if packages < 8 {
		t.Errorf("go list found %d codecell packages; the pattern or directory is wrong:\n%s", packages, out)
	}
}
