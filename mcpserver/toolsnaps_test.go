package mcpserver_test

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/mcpserver/engine"
	"github.com/codecell/codecell/tools/toolstest"
)

var update = flag.Bool("update", false, "rewrite the tool snapshots under testdata/toolsnaps")

// TestToolSnapshots keeps what agents see of the server's own MCP tools
// (execute_code, read_tools, search_tools) and of its skills
// and runtime tools as golden files; "go test -tags sqlite_fts5 ./mcpserver -run ToolSnapshots
// -update" rewrites them.
func TestToolSnapshots(t *testing.T) {
	srv, _ := storeServer(t, filepath.Join(t.TempDir(), "db"))
	c := start(t, transports[0].connect(t, srv))
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var snaps []toolstest.Snapshot
	for _, tool := range res.Tools {
		in, _ := json.Marshal(tool.InputSchema)
		if tool.RawInputSchema != nil {
			in = tool.RawInputSchema
		}
		snaps = append(snaps, toolstest.Snapshot{
			Name:         tool.Name,
			Description:  tool.Description,
			Annotations:  tool.Annotations,
			InputSchema:  in,
			OutputSchema: tool.RawOutputSchema,
		})
		if tool.Execution != nil {
			snaps[len(snaps)-1].Execution = tool.Execution
		}
	}
	for _, cat := range []string{"skills", "llm", "approval", engine.CacheCategory} {
		for _, tool := range srv.Registry().ListCategory(cat) {
			snaps = append(snaps, toolstest.Of(tool))
		}
	}
	toolstest.Check(t, "testdata/toolsnaps", *update, snaps...)
}
