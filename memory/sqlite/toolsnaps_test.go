package sqlite

import (
	"flag"
	"testing"

	"github.com/codecell/codecell/tools/toolstest"
)

var update = flag.Bool("update", false, "rewrite the tool snapshots under testdata/toolsnaps")

// TestToolSnapshots keeps what agents see of the memory and workspace
// tools (with the default limits, which their schemas quote) as golden
// files; "go test -tags sqlite_fts5 ./memory/sqlite -run ToolSnapshots -update"
// rewrites them.
func TestToolSnapshots(t *testing.T) {
	s := openTest(t, Config{})
	toolstest.Check(t, "testdata/toolsnaps", *update, toolstest.All(append(s.Tools(), s.WorkspaceTools()...))...)
}
