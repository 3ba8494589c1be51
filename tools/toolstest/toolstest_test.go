package toolstest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/tools/toolstest"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

// check runs Check against a recorder and returns what it reported.
func check(t *testing.T, dir string, update bool, snaps ...toolstest.Snapshot) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		toolstest.Check(r, dir, update, snaps...)
	}()
	<-done
	return r.errs
}

func tool(summary string) tools.Tool {
	return tools.Tool{
		Name: "x.echo", Summary: summary, Annotations: tools.Annotations{ReadOnly: true},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
		Handler:     func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil },
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "toolsnaps")
	v1 := toolstest.All([]tools.Tool{tool("Echo.")})
	if errs := check(t, dir, false, v1...); len(errs) != 1 || !strings.Contains(errs[0], "no snapshot") {
		t.Errorf("a missing snapshot: %q", errs)
	}
	if errs := check(t, dir, true, v1...); len(errs) != 0 {
		t.Fatalf("update: %q", errs)
	}
	b, err := os.ReadFile(filepath.Join(dir, "x.echo.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "name": "x.echo",
  "summary": "Echo.",
  "annotations": {
    "readOnly": true
  },
  "inputSchema": {
    "type": "object",
    "properties": {
      "text": {
        "type": "string"
      }
    }
  }
}
`
	if string(b) != want {
		t.Errorf("snapshot file:\n%s\nwant:\n%s", b, want)
	}
	if errs := check(t, dir, false, v1...); len(errs) != 0 {
		t.Errorf("an unchanged tool: %q", errs)
	}
	v2 := toolstest.All([]tools.Tool{tool("Echo the text.")})
	if errs := check(t, dir, false, v2...); len(errs) != 1 || !strings.Contains(errs[0], `+   "summary": "Echo the text.",`) {
		t.Errorf("a changed summary: %q", errs)
	}
	if errs := check(t, dir, false); len(errs) != 1 || !strings.Contains(errs[0], "no longer exists") {
		t.Errorf("a removed tool: %q", errs)
	}
	if errs := check(t, dir, true); len(errs) != 0 {
		t.Fatalf("update: %q", errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.echo.json")); !os.IsNotExist(err) {
		t.Errorf("update kept the snapshot of a removed tool: %v", err)
	}
}
