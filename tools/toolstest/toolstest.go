// Package toolstest keeps golden snapshots of what agents see of tools —
// name, summary, description, annotations, positional parameters, input
// and output schemas — so that a change to any of it shows up as a
// reviewed diff (the idea of github-mcp-server's __toolsnaps__). It is for
// tests only.
//
// A test builds one Snapshot per tool (Of for a tools.Tool; by hand for
// tools defined elsewhere, such as the MCP server's own) and calls Check
// with the directory of the snapshots, typically testdata/toolsnaps, and
// the value of the test binary's -update flag:
//
//	var update = flag.Bool("update", false, "rewrite golden files")
//
//	func TestToolSnapshots(t *testing.T) {
//		toolstest.Check(t, "testdata/toolsnaps", *update, toolstest.All(builtin.Tools())...)
//	}
package toolstest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codecell/codecell/tools"
)

// Snapshot is what an agent sees of one tool.
type Snapshot struct {
	// Name is the tool's name; the snapshot file is <Name>.json.
	Name    string `json:"name"`
	Summary string `json:"summary,omitempty"`
	// Description is the full text, when the tool has more than a summary.
	Description string `json:"description,omitempty"`
	// Annotations is marshalled as it is: tools.Annotations, or the MCP
	// server's mcp.ToolAnnotation. Nil leaves it out.
	Annotations any      `json:"annotations,omitempty"`
	Positional  []string `json:"positional,omitempty"`
	// InputSchema and OutputSchema are JSON; the file shows them
	// indented, keys in the order they were written.
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Execution is an MCP tool's mcp.ToolExecution (task support); nil
	// leaves it out.
	Execution any `json:"execution,omitempty"`
}

// Of returns the snapshot of a catalogue tool.
func Of(t *tools.Tool) Snapshot {
	s := Snapshot{
		Name:         t.Name,
		Summary:      t.Summary,
		Description:  t.Description,
		Positional:   t.Positional,
		InputSchema:  t.InputSchema,
		OutputSchema: t.OutputSchema,
	}
	if t.Annotations != (tools.Annotations{}) {
		s.Annotations = t.Annotations
	}
	return s
}

// All returns the snapshots of ts.
func All(ts []tools.Tool) []Snapshot {
	out := make([]Snapshot, len(ts))
	for i := range ts {
		out[i] = Of(&ts[i])
	}
	return out
}

// Check compares each snapshot with dir/<name>.json and reports every
// difference, every snapshot without a file, and every file without a
// snapshot (a tool that went away). With update it rewrites dir to hold
// exactly the given snapshots instead.
func Check(tb testing.TB, dir string, update bool, snaps ...Snapshot) {
	tb.Helper()
	want := map[string][]byte{}
	for _, s := range snaps {
		if s.Name == "" || strings.ContainsAny(s.Name, `/\`) {
			tb.Fatalf("snapshot with an unusable name %q", s.Name)
		}
		b, err := Marshal(s)
		if err != nil {
			tb.Fatalf("snapshot of %s: %v", s.Name, err)
		}
		file := s.Name + ".json"
		if _, dup := want[file]; dup {
			tb.Fatalf("two snapshots of %s", s.Name)
		}
		want[file] = b
	}
	var existing []string
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
				existing = append(existing, e.Name())
			}
		}
	} else if !os.IsNotExist(err) {
		tb.Fatal(err)
	}
	if update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			tb.Fatal(err)
		}
		for _, f := range existing {
			if _, ok := want[f]; !ok {
				if err := os.Remove(filepath.Join(dir, f)); err != nil {
					tb.Fatal(err)
				}
			}
		}
		for f, b := range want {
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				tb.Fatal(err)
			}
		}
		return
	}
	files := make([]string, 0, len(want))
	for f := range want {
		files = append(files, f)
	}
	slices.Sort(files)
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			tb.Errorf("%s: no snapshot of this tool (run the test with -update and review the new file): %v", f, err)
			continue
		}
		if !bytes.Equal(got, want[f]) {
			tb.Errorf("%s: what agents see of this tool changed (run the test with -update and review the diff):\n%s", f, diff(got, want[f]))
		}
	}
	for _, f := range existing {
		if _, ok := want[f]; !ok {
			tb.Errorf("%s: a snapshot of a tool that no longer exists (run the test with -update to remove it)", filepath.Join(dir, f))
		}
	}
}

// Marshal renders a snapshot as its file holds it: indented JSON, with a
// final newline.
func Marshal(s Snapshot) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// diff shows the first lines where old and new differ, with a little
// context: enough to see what changed without a diff tool.
func diff(old, new []byte) string {
	a, b := strings.Split(string(old), "\n"), strings.Split(string(new), "\n")
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	ja, jb := len(a), len(b)
	for ja > i && jb > i && a[ja-1] == b[jb-1] {
		ja--
		jb--
	}
	var out strings.Builder
	const maxLines = 12
	for k := i; k < ja && k < i+maxLines; k++ {
		out.WriteString("- " + a[k] + "\n")
	}
	for k := i; k < jb && k < i+maxLines; k++ {
		out.WriteString("+ " + b[k] + "\n")
	}
	return out.String()
}
