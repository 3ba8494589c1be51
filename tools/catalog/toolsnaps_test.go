package catalog_test

import (
	"flag"
	"testing"

	"github.com/codecell/codecell/tools/catalog"
	"github.com/codecell/codecell/tools/toolstest"
)

var update = flag.Bool("update", false, "rewrite the tool snapshots under testdata/toolsnaps")

// TestToolSnapshots keeps what agents see of the demo catalogue's tools, as
// loaded (shared definitions copied into each schema), as golden files;
// "go test ./tools/catalog -update" rewrites them.
func TestToolSnapshots(t *testing.T) {
	c, err := catalog.Load(testdata)
	if err != nil {
		t.Fatal(err)
	}
	toolstest.Check(t, "testdata/toolsnaps", *update, toolstest.All(c.Tools())...)
}
