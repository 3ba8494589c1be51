package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/vfs"
)

const readToolsDescription = `Read the tool catalogue as files: "/manifest.json", "/{category}/index.json", "/{category}/{tool}.d.ts" (signature), "/{category}/{tool}.md" (docs). A wrong path suggests the nearest.`

const readToolsInput = `{
	"type": "object",
	"properties": {
		"path": {"type": "string", "description": "e.g. /manifest.json"}
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
		RawInputSchema: json.RawMessage(readToolsInput),
		Annotations: mcp.ToolAnnotation{
			Title:          "Read tools",
			ReadOnlyHint:   mcp.ToBoolPtr(true),
			IdempotentHint: mcp.ToBoolPtr(true),
			OpenWorldHint:  mcp.ToBoolPtr(false),
		},
	}
}

// readTools is the read_tools handler: a file's content, a directory's
// listing, or, for a missing path, the nearest directory and a suggestion.
func (s *Server) readTools(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Path string `json:"path"`
	}
	if err := decodeArgs(s.readToolsSchema, "read_tools", req, &args); err != nil {
		return mcp.NewToolResultError(err.Error() + `; give a path, as in {"path": "/manifest.json"}`), nil
	}
	p := strings.TrimPrefix(args.Path, ResourcePrefix)
	node, err := s.vfs.For(s.caller(ctx)).Read(p)
	var nf *vfs.NotFoundError
	switch {
	case errors.As(err, &nf):
		return mcp.NewToolResultError(nf.Error()), nil
	case err != nil:
		return mcp.NewToolResultError(fmt.Sprintf("read_tools: %v. Paths look like /manifest.json, /<category>/index.json or /<category>/<tool>.d.ts", err)), nil
	case node.Dir:
		b, _ := json.Marshal(struct {
			Path    string      `json:"path"`
			Entries []vfs.Entry `json:"entries"`
		}{"/" + strings.TrimPrefix(node.Path, "."), node.Entries})
		return mcp.NewToolResultText(string(b)), nil
	}
	return mcp.NewToolResultText(string(node.Content)), nil
}
