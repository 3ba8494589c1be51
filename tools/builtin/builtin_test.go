package builtin_test

import (
	"flag"
	"testing"

	"github.com/codecell/codecell/tools/builtin"
	"github.com/codecell/codecell/tools/toolstest"
)

var update = flag.Bool("update", false, "rewrite the tool snapshots under testdata/toolsnaps")

// TestToolSnapshots keeps what agents see of the util tools as golden
// files; "go test ./tools/builtin -update" rewrites them.
func TestToolSnapshots(t *testing.T) {
	toolstest.Check(t, "testdata/toolsnaps", *update, toolstest.All(builtin.Tools())...)
}
