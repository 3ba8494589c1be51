package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/vfs"
)

const readToolsDescription = `Read the catalogue as files: "/manifest.json", "/{category}/index.json", "/{category}/{tool}.d.ts" (signature), "/{category}/{tool}.md" (docs). A wrong path suggests the nearest.`

const readToolsInput = `{
	"type": "object",
	"properties": {
		"path": {"type": "string"},
		"offset": {"type": "integer", "minimum": 0},
		"budget_bytes": {"type": "integer", "minimum": 1024, "maximum": %d}
	},
	"required": ["path"],
	"additionalProperties": false
}`

// ResourcePrefix is the URI prefix of the tool tree as MCP resources.
const ResourcePrefix = "codecell://tools/"

func (s *Server) readToolsTool() mcp.Tool {
	return mcp.Tool{
		Name:           "read_tools",
		Description:    readToolsDescription,
		RawInputSchema: s.readToolsInputSchema(),
		Annotations: mcp.ToolAnnotation{
			Title:          "Read tools",
			ReadOnlyHint:   mcp.ToBoolPtr(true),
			IdempotentHint: mcp.ToBoolPtr(true),
			OpenWorldHint:  mcp.ToBoolPtr(false),
		},
	}
}

// readToolsInputSchema is read_tools' input schema, with the largest
// budget a call may ask for.
func (s *Server) readToolsInputSchema() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(readToolsInput, s.maxBudget))
}

// minDiscoveryBudget is the least a read_tools or search_tools answer may
// take, whatever the budget: a whole index.json (vfs.IndexBudget) with
// room to spare.
const minDiscoveryBudget = 6 << 10

// discoveryBudget is the most bytes a read_tools or search_tools answer
// takes: the budget the call asked for, else the server's, at most the
// largest one allowed, and at least minDiscoveryBudget.
func (s *Server) discoveryBudget(asked int) int {
	b := s.budget
	if asked > 0 {
		b = min(asked, s.maxBudget)
	}
	return max(b, minDiscoveryBudget)
}

// readTools is the read_tools handler: a file's content, a directory's
// listing, or, for a missing path, the nearest directory and a
// suggestion; within the response budget, a long file or listing in
// pages, each saying where the next starts.
func (s *Server) readTools(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Path        string `json:"path"`
		Offset      int    `json:"offset"`
		BudgetBytes int    `json:"budget_bytes"`
	}
	if err := decodeArgs(s.readToolsSchema, "read_tools", req, &args); err != nil {
		return mcp.NewToolResultError(err.Error() + `; give a path, as in {"path": "/manifest.json"}`), nil
	}
	budget := s.discoveryBudget(args.BudgetBytes)
	p := strings.TrimPrefix(args.Path, ResourcePrefix)
	node, err := s.vfs.For(s.caller(ctx)).Read(p)
	var nf *vfs.NotFoundError
	switch {
	case errors.As(err, &nf):
		return mcp.NewToolResultError(nf.Error()), nil
	case err != nil:
		return mcp.NewToolResultError(fmt.Sprintf("read_tools: %v. Paths look like /manifest.json, /<category>/index.json or /<category>/<tool>.d.ts", err)), nil
	case node.Dir:
		text, err := listing("/"+strings.TrimPrefix(node.Path, "."), node.Entries, args.Offset, budget)
		if err != nil {
			return mcp.NewToolResultError("read_tools: " + err.Error()), nil
		}
		return mcp.NewToolResultText(text), nil
	}
	path := "/" + node.Path
	pg, err := vfs.PageOf(node.Path, node.Content, args.Offset, budget, func(offset int) string {
		return fmt.Sprintf(`read_tools {"path": %q, "offset": %d} gives the rest`, path, offset)
	})
	if err != nil {
		return mcp.NewToolResultError("read_tools: " + err.Error() + "; give an offset a page named, or none"), nil
	}
	return mcp.NewToolResultText(pg.Text), nil
}

// listing renders a directory's entries from offset on, as many as fit in
// budget bytes, saying where the rest starts.
func listing(path string, entries []vfs.Entry, offset, budget int) (string, error) {
	if offset < 0 || offset > len(entries) || offset == len(entries) && offset > 0 {
		return "", fmt.Errorf("offset %d is outside %s, which lists %d entries", offset, path, len(entries))
	}
	render := func(end int) string {
		var more string
		if end < len(entries) {
			more = fmt.Sprintf("%d more entries left out to fit %d bytes: read_tools {\"path\": %q, \"offset\": %d} lists them", len(entries)-end, budget, path, end)
		}
		b, _ := json.Marshal(struct { // plain data always marshals
			Path    string      `json:"path"`
			Offset  int         `json:"offset,omitempty"`
			Entries []vfs.Entry `json:"entries"`
			More    string      `json:"more,omitempty"`
		}{path, offset, entries[offset:end], more})
		return string(b)
	}
	if text := render(len(entries)); len(text) <= budget {
		return text, nil
	}
	// The most entries that fit, at least one.
	n := sort.Search(len(entries)-offset, func(n int) bool { return len(render(offset+n+1)) > budget })
	return render(offset + max(n, 1)), nil
}
