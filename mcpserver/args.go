package mcpserver

import (
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/codecell/codecell/tools"
)

// decodeArgs checks a call's arguments against one of the server's own
// input schemas and decodes them into v; the error says what to change.
func decodeArgs(schema *tools.Schema, tool string, req mcp.CallToolRequest, v any) error {
	raw := rawArguments(req)
	if ps := schema.Validate(raw); len(ps) > 0 {
		return fmt.Errorf("%s: invalid arguments: %s", tool, tools.DescribeProblems(ps))
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: invalid arguments: %w", tool, err)
	}
	return nil
}

// rawArguments returns a tool call's arguments as JSON, {} when absent.
func rawArguments(req mcp.CallToolRequest) json.RawMessage {
	raw := req.Params.RawArguments
	if len(raw) == 0 && req.Params.Arguments != nil {
		raw, _ = json.Marshal(req.Params.Arguments)
	}
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}
